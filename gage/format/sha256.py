"""SHA-256 of the small things every command hashes, without loading OpenSSL to do it.

`hashlib.sha256` is OpenSSL's, and importing hashlib loads libcrypto: about 2 ms of a small
command's start-up (issue 28), paid to hash a few kilobytes (a key's fingerprint, a journal
line, a manifest's name, a tree digest). The interpreter carries its own SHA-256, the one
hashlib itself falls back to (`_sha256`; `_sha2` from Python 3.12): the same function, FIPS
180-4, only slower on large inputs (no SHA extensions: about 4x on a MiB). So inputs under
`LARGE` bytes take the interpreter's, larger ones OpenSSL's; a payload's files are hashed by
hashlib always (gage.bundle.safeopen). tests/test_sha256.py holds the two equal on every
size around the switch, and on a build without the interpreter's own, hashlib does it all.
"""

from __future__ import annotations

LARGE = 1 << 16

try:
    from _sha2 import sha256 as _own  # type: ignore[import-not-found,unused-ignore]  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as _own  # type: ignore[import-not-found,no-redef,unused-ignore]  # Python 3.11
    except ImportError:  # a build without it: OpenSSL's for everything
        _own = None


def hexdigest(data: bytes) -> str:
    """The SHA-256 of `data`, as 64 lowercase hex digits."""
    if _own is None or len(data) >= LARGE:
        import hashlib

        return hashlib.sha256(data).hexdigest()
    digest: str = _own(data).hexdigest()
    return digest
