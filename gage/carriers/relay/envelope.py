"""The plaintext inside a sealed envelope: one bundle, in a strict streamed serialisation.

The writer reads a bundle folder a chunk at a time (so a 2 GiB bundle never sits in memory);
the reader is fed bytes as they are decrypted and writes each payload file as it comes, into
a scratch folder, after refusing anything a bundle cannot hold: a link or any entry that is
not a plain file, an absolute path, `..`, a duplicate, a file the manifest does not list or
of another size, and a bundle over the receiver's limits (checked from the manifest, which
comes first, before one payload byte is written). The manifest bytes are carried as they
were signed and written back as they came. See spec/relay.md section 3.

Format only: no age, no NATS. Sealing is gage.carriers.relay.seal, landing gage.carriers.relay.landing.
"""

from __future__ import annotations

import errno
import io
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gage import bundle as bundle_mod
from gage.bundle import safeopen
from gage.format import signing
from gage.format.errors import GageError, GageIOError, MalformedError, RefusedError
from gage.format.manifest import MANIFEST_LIMIT, Manifest
from gage.format.manifest_files import check_path

MAGIC = b"gage-envelope/v1\n"
# Errors of this machine, not of an envelope: a full disk or quota, a read-only or unwritable
# folder, a failing device, no file descriptors or memory left (spec/relay.md section 6). Any
# other OSError while a bundle is written out (a path that is a file one entry and a folder the
# next) is the envelope's.
LOCAL_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EFBIG}
)
FILE = b"F"
END = b"E"
CHUNK = 1 << 16
MAX_SIGNATURE = signing.HYBRID_SIG_LEN  # the longest `manifest.sig`: a hybrid signature

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


class EnvelopeError(MalformedError):
    """The plaintext is not one well-formed bundle in the envelope format: nothing lands."""


def _entry_header(path: str, size: int) -> bytes:
    p = path.encode("utf-8")
    return FILE + _U32.pack(len(p)) + p + _U64.pack(size)


def stream(root: Path) -> Iterator[bytes]:
    """The envelope plaintext of the bundle at `root`, in chunks of at most CHUNK bytes.

    Reads the manifest and signature as they are on disk, then every listed file in manifest
    order, each no further than its declared size; a file that is shorter than declared ends
    the stream with an error rather than send a bundle that is not what was signed.
    """
    raw, manifest = bundle_mod.read_manifest(root)
    sig, _problem = bundle_mod.read_signature(root)
    if sig is None:
        raise RefusedError("the bundle has no readable signature; only a signed bundle is sealed", path=str(root))
    yield MAGIC + _U32.pack(len(raw)) + raw + _U32.pack(len(sig)) + sig
    payload = root / bundle_mod.PAYLOAD
    for entry in manifest.files:
        yield _entry_header(entry.path, entry.size)
        left = entry.size
        try:
            # Beneath payload/, following no link at any step (a held bundle is a sender's input too).
            fd, _st = safeopen.open_regular_beneath(payload, entry.path)
        except OSError as exc:
            raise RefusedError(f"cannot read payload/{entry.path} ({exc.strerror or exc}); nothing was sealed", path=str(root)) from exc
        try:
            while left:
                chunk = os.read(fd, min(CHUNK, left))
                if not chunk:
                    raise RefusedError(f"payload/{entry.path} is shorter than the manifest says; nothing was sealed", path=str(root))
                left -= len(chunk)
                yield chunk
        finally:
            os.close(fd)
    yield END


class StreamReader(io.RawIOBase):
    """`stream` as a readable file, for an encrypter that pulls its input."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def to_bytes(root: Path) -> bytes:
    """The whole plaintext in memory: for vectors and small tests only."""
    return b"".join(stream(root))


@dataclass(frozen=True)
class Limits:
    """What the reader takes before it refuses (the receiver's, from spec/settings.md)."""

    max_bundle_bytes: int
    max_files: int
    max_path_bytes: int


# The reader's states, in the order the format has them.
_MAGIC, _MLEN, _MANIFEST, _SLEN, _SIG, _TAG, _PLEN, _PATH, _SIZE, _BODY, _DONE = range(11)


class Reader:
    """Fed the plaintext in pieces of any size; writes the bundle under `dest` as it goes.

    `check_manifest` is called with the parsed manifest and its signature before any payload
    byte is written (the receiver's limits and pending limits, which a confirmed contact's
    signature exempts it from); whatever it raises refuses the envelope.
    """

    def __init__(self, dest: Path, check_manifest: Callable[[Manifest, bytes], None] | None = None) -> None:
        self.dest = dest
        self.check_manifest = check_manifest
        self.manifest: Manifest | None = None
        self.error: GageError | None = None
        self._state = _MAGIC
        self._need = len(MAGIC)
        self._buf = bytearray()
        self._index = 0  # the next manifest entry
        self._path = ""
        self._left = 0
        self._fd: int | None = None
        self._raw = b""

    # --- feeding ---------------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """File-like, so a decrypter can write into it. Raises on the first refusal, and keeps it."""
        if self.error is not None:
            raise self.error
        try:
            self._feed(memoryview(data).cast("B"))
        except GageError as exc:
            self.error = exc
            self._close_file()
            raise
        except OSError as exc:
            # By its errno: a full disk or an unwritable folder is this home's fault (the
            # envelope waits on the relay); any other (an entry that is a file where the next
            # wants a folder) is the envelope's.
            self._close_file()
            if exc.errno in LOCAL_ERRNOS:
                self.error = GageIOError(f"cannot write the bundle into this home: {exc.strerror or exc}; nothing was acknowledged, the envelope stays on the relay")
            else:
                self.error = EnvelopeError(f"the bundle it holds cannot be written as it is: {exc.strerror or exc}")
            raise self.error from None
        return len(data)

    def flush(self) -> None:
        pass

    def finish(self) -> Manifest:
        """The end of the plaintext: anything short of a whole envelope is refused."""
        if self.error is not None:
            raise self.error
        if self._state != _DONE:
            self._close_file()
            self.error = EnvelopeError("the envelope ends early: it does not hold a whole bundle")
            raise self.error
        assert self.manifest is not None
        return self.manifest

    def _take(self, mv: memoryview) -> tuple[bytes | None, memoryview]:
        """Gather `_need` bytes; (None, rest) until they are all here."""
        n = min(self._need - len(self._buf), len(mv))
        self._buf += mv[:n]
        mv = mv[n:]
        if len(self._buf) < self._need:
            return None, mv
        got = bytes(self._buf)
        self._buf.clear()
        return got, mv

    def _feed(self, mv: memoryview) -> None:
        while len(mv):
            if self._state == _DONE:
                raise EnvelopeError("bytes after the end of the envelope")
            if self._state == _BODY:
                n = min(self._left, len(mv))
                assert self._fd is not None
                view = mv[:n]
                while len(view):
                    w = os.write(self._fd, view)
                    view = view[w:]
                self._left -= n
                mv = mv[n:]
                if self._left == 0:
                    self._close_file()
                    self._state, self._need = _TAG, 1
                continue
            got, mv = self._take(mv)
            if got is not None:
                self._step(got)
        if self._state == _BODY and self._left == 0:
            self._close_file()
            self._state, self._need = _TAG, 1

    def _step(self, got: bytes) -> None:
        s = self._state
        if s == _MAGIC:
            if got != MAGIC:
                raise EnvelopeError("not a gage envelope (version 1): the plaintext does not start with gage-envelope/v1")
            self._state, self._need = _MLEN, 4
        elif s == _MLEN:
            n = _U32.unpack(got)[0]
            if not 0 < n <= MANIFEST_LIMIT:
                raise EnvelopeError(f"a manifest of {n} bytes: over the limit of {MANIFEST_LIMIT}")
            self._state, self._need = _MANIFEST, n
        elif s == _MANIFEST:
            self._raw = got
            try:
                self.manifest = Manifest.parse(got)
            except GageError as exc:
                raise EnvelopeError(f"the manifest it carries is malformed: {exc}") from exc
            self._state, self._need = _SLEN, 4
        elif s == _SLEN:
            n = _U32.unpack(got)[0]
            assert self.manifest is not None
            # The signature its key makes (gage.format.signing): 64 bytes for Ed25519, 3373 for a hybrid key.
            want = signing.signature_len(self.manifest.sender.key)
            if n != want:
                raise EnvelopeError(f"a signature of {n} bytes; the manifest's key signs with {want}")
            self._state, self._need = _SIG, n
        elif s == _SIG:
            assert self.manifest is not None
            # The receiver's limits, before anything is written.
            if self.check_manifest is not None:
                self.check_manifest(self.manifest, got)
            self._begin(got)
            self._state, self._need = _TAG, 1
        elif s == _TAG:
            self._tag(got)
        elif s == _PLEN:
            n = _U32.unpack(got)[0]
            if n == 0 or n > 4096:
                raise EnvelopeError(f"a file path of {n} bytes")
            self._state, self._need = _PATH, n
        elif s == _PATH:
            self._path_is(got)
            self._state, self._need = _SIZE, 8
        elif s == _SIZE:
            self._size_is(_U64.unpack(got)[0])

    def _begin(self, sig: bytes) -> None:
        self.dest.mkdir(parents=True)
        for name, data in ((bundle_mod.MANIFEST, self._raw), (bundle_mod.SIGNATURE, sig)):
            fd = os.open(self.dest / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        (self.dest / bundle_mod.PAYLOAD).mkdir()

    def _tag(self, tag: bytes) -> None:
        assert self.manifest is not None
        if tag == END:
            if self._index != len(self.manifest.files):
                missing = self.manifest.files[self._index].path
                raise EnvelopeError(f"the envelope ends before {missing!r}, which the manifest lists")
            self._state = _DONE
            return
        if tag != FILE:
            what = "a link" if tag in (b"L", b"S", b"H") else f"an entry of type {tag!r}"
            raise EnvelopeError(f"{what}: an envelope carries plain files only")
        self._state, self._need = _PLEN, 4

    def _path_is(self, got: bytes) -> None:
        assert self.manifest is not None
        try:
            path = got.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EnvelopeError("a file path that is not UTF-8") from exc
        if path.startswith("/"):
            raise EnvelopeError(f"an absolute path {path!r}")
        if ".." in path.split("/"):
            raise EnvelopeError(f"a path that climbs out with '..': {path!r}")
        try:
            check_path(path, "path")
        except MalformedError as exc:
            raise EnvelopeError(f"a path a bundle cannot hold ({path!r}): {exc.message}") from exc
        files = self.manifest.files
        if any(f.path == path for f in files[: self._index]):
            raise EnvelopeError(f"a duplicate of {path!r}")
        if self._index >= len(files):
            raise EnvelopeError(f"{path!r}, which the manifest does not list")
        if files[self._index].path != path:
            raise EnvelopeError(f"{path!r} where the manifest lists {files[self._index].path!r} (files come in manifest order)")
        self._path = path

    def _size_is(self, size: int) -> None:
        assert self.manifest is not None
        entry = self.manifest.files[self._index]
        if size != entry.size:
            raise EnvelopeError(f"{self._path!r} is {size} bytes; the manifest says {entry.size}")
        target = self.dest / bundle_mod.PAYLOAD / self._path
        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW|O_EXCL: nothing written here can follow a link or replace a file.
        self._fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        self._index += 1
        self._left = size
        self._state = _BODY

    def _close_file(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_bytes(data: bytes, dest: Path, check_manifest: Callable[[Manifest, bytes], None] | None = None) -> Manifest:
    """Read a whole plaintext held in memory (vectors, tests)."""
    r = Reader(dest, check_manifest)
    try:
        r.write(data)
    except GageError:
        raise
    return r.finish()
