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
from gage.format.errors import GageError, MalformedError

AGE_MAGIC = b"age-encryption.org/v1\n"


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


def open_into(src: IO[bytes], identity: str, reader: envelope.Reader) -> None:
    """Decrypt `src` with `identity`, feeding the plaintext to `reader` as it is authenticated.

    age authenticates every 64 KiB chunk and the last one is marked, so a truncated or
    altered envelope fails here; the reader may have written part of a bundle into its
    scratch folder by then, which the caller removes (nothing lands from a failed open).
    """
    ident = x25519.Identity.from_str(identity)
    head = src.read(len(AGE_MAGIC))
    if head != AGE_MAGIC:
        raise OpenError("not an age envelope (it does not start with age-encryption.org/v1)")

    class _Joined:
        """The bytes already read for the magic, then the rest of `src`."""

        def __init__(self) -> None:
            self.first = head

        def readinto(self, b: bytearray | memoryview) -> int:
            if self.first:
                n = min(len(b), len(self.first))
                b[:n] = self.first[:n]
                self.first = self.first[n:]
                return n
            return src.readinto(b)  # type: ignore[attr-defined,no-any-return]

        def read(self, n: int = -1) -> bytes:
            if self.first:
                out, self.first = self.first, b""
                return out
            return src.read(n)

    try:
        pyrage.decrypt_io(_Joined(), reader, [ident])
    except Exception as exc:
        if reader.error is not None:
            raise reader.error from None
        raise OpenError(f"the envelope does not open with this home's sealing key: {exc}") from None
    if reader.error is not None:
        raise reader.error
