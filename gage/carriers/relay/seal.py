"""Sealing and opening envelopes with age (age-encryption.org/v1, X25519 recipients).

Through pyrage, streamed both ways: the encrypter pulls the plaintext from
gage.carriers.relay.envelope.stream a chunk at a time and the decrypter pushes what it opens into the
envelope reader, so neither side holds a bundle in memory. What is sealed here opens with
`age -d -i identity.txt` (the home's identity in `sealing.json` is age's own text form).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import pyrage
from pyrage import x25519

from gage.carriers.relay import envelope
from gage.format.errors import GageError, GageIOError, MalformedError

AGE_MAGIC = b"age-encryption.org/v1\n"
# What one envelope may cost before a key is tried (spec/relay.md section 6): trying this home's
# key against an X25519 stanza costs milliseconds, so a header of thousands of stanzas none of
# which is ours would hold the mailbox for a minute. gage seals to one recipient.
HEADER_MAX = 16 * 1024
STANZAS_MAX = 16
def _header(src: IO[bytes]) -> bytes:
    """The age header, read up to its `---` line and bounded, before any key is tried: what a
    header too long or with too many stanzas costs is refused, not tried (an OpenError)."""
    buf = bytearray()
    while True:
        end = buf.find(b"\n---")
        if end >= 0:
            if end > HEADER_MAX:
                break
            stanzas = buf.count(b"\n-> ", 0, end + 1)
            if stanzas > STANZAS_MAX:
                raise OpenError(f"its age header has {stanzas} recipient stanzas, over the {STANZAS_MAX} an envelope may have; no key was tried")
            return bytes(buf)
        if len(buf) > HEADER_MAX:
            break
        try:
            piece = src.read(4096)
        except OSError as exc:
            raise GageIOError(f"cannot read the envelope back from this home: {exc.strerror or exc}") from exc
        if not piece:
            return bytes(buf)  # age says what is wrong with a header that ends early
        buf += piece
    raise OpenError(f"its age header is longer than the {HEADER_MAX} bytes an envelope's may be; no key was tried")


class OpenError(MalformedError):
    """The envelope is not age for this home's key, or it is damaged: it does not open."""


def recipient(text: str) -> Any:
    try:
        return x25519.Recipient.from_str(text)
    except Exception as exc:  # pyrage raises its own RecipientError (or ValueError)
        raise MalformedError(f"not an age X25519 recipient: {exc}", field="sealing_key") from exc


def seal_bundle(root: Path, to: str, out: IO[bytes]) -> None:
    """Write the envelope of the bundle at `root`, sealed to recipient `to`, into `out`."""
    src = envelope.StreamReader(envelope.stream(root))
    try:
        pyrage.encrypt_io(src, out, [recipient(to)])
    except GageError:
        raise
    except Exception as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, GageError):
            raise cause from None
        raise


def seal_bytes(plaintext: bytes, to: str) -> bytes:
    out: bytes = pyrage.encrypt(plaintext, [recipient(to)])
    return out


class _Joined:
    """The header already read, then the rest of `src`; a read error here is this home's (in
    `local`). At the top of the module, not made in `open_into`: a class made per envelope lives
    until the cyclic collector finds it, and a fetch of thousands held hundreds of them."""

    def __init__(self, head: bytes, src: IO[bytes], local: list[GageIOError]) -> None:
        self.first, self.src, self.local = head, src, local

    def readinto(self, b: bytearray | memoryview) -> int:
        if self.first:
            n = min(len(b), len(self.first))
            b[:n] = self.first[:n]
            self.first = self.first[n:]
            return n
        try:
            return self.src.readinto(b)  # type: ignore[attr-defined,no-any-return]
        except OSError as exc:
            self.local.append(GageIOError(f"cannot read the envelope back from this home: {exc.strerror or exc}"))
            raise

    def read(self, n: int = -1) -> bytes:
        if self.first:
            out, self.first = self.first, b""
            return out
        try:
            return self.src.read(n)
        except OSError as exc:
            self.local.append(GageIOError(f"cannot read the envelope back from this home: {exc.strerror or exc}"))
            raise


def open_into(src: IO[bytes], identity: str, reader: envelope.Reader) -> None:
    """Decrypt `src` with `identity`, feeding the plaintext to `reader` as it is authenticated.

    age authenticates every 64 KiB chunk and the last one is marked, so a truncated or
    altered envelope fails here; the reader may have written part of a bundle into its
    scratch folder by then, which the caller removes (nothing lands from a failed open).
    """
    ident = x25519.Identity.from_str(identity)
    head = _header(src)
    if not head.startswith(AGE_MAGIC):
        raise OpenError("not an age envelope (it does not start with age-encryption.org/v1)")
    local: list[GageIOError] = []

    try:
        pyrage.decrypt_io(_Joined(head, src, local), reader, [ident])
    except Exception as exc:
        if local:
            raise local[0] from None
        if reader.error is not None:
            raise reader.error from None
        raise OpenError(f"the envelope does not open with this home's sealing key: {exc}") from None
    if reader.error is not None:
        raise reader.error
