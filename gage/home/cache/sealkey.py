"""The home's cache key: what every cache row or entry is sealed with, so a planted copy is a miss.

A seal is a keyed BLAKE2b (16 bytes) of what a cache row or entry holds, under a random 32-byte key
this home keeps beside its `cache/` folder, not in it (`cache.key` in the home root, 0600). A
checksum (the CRC-32 each seal was before) caught damage but not a plant: anyone could compute it,
so an entry crafted by hand, or copied from another home, was believed. A seal made without this
key (another home's, none, a checksum) does not hold, and the row is computed again.

The key is read like a cache file (`homefile.read_derived`: no link, never blocking, bounded),
once per process and home. One that is missing or not 32 bytes is made anew, which makes every
cache sealed under the old one a miss: a recomputation, never an error. A new key is put in place
with a link, which never replaces a file: two processes making one at once end with one key, the
loser reading the winner's. A home whose key cannot be written seals with a key of this process
only (every cache it reads is then a miss, and it cannot write them either).

What it does not do: whoever can read the key (the home's owner, or whoever can write the home's
root, who can as well write `contacts.toml` or put a key of their own in its place) can still seal
a plant (threat-model.md, "A cache damaged in place or planted").

Keyed BLAKE2b rather than HMAC-SHA256: `hashlib` is already on every command's start path and
`hmac` is not (4 ms to import), and it costs half as much a seal (about 1 µs for a 300-byte row).
"""

from __future__ import annotations

import contextlib
import os
from hashlib import blake2b
from pathlib import Path

from gage.home import homefile

KEY_FILE = "cache.key"
KEY_BYTES = 32
SEAL_BYTES = 16

_keys: dict[str, bytes] = {}
_process_key = os.urandom(KEY_BYTES)


def process_key() -> bytes:
    """A key of this process only: for a cache that lives in memory, never on disk."""
    return _process_key


def home_key(root: Path) -> bytes:
    """The cache key of the home at `root`, made when missing or not of its shape."""
    where = os.path.abspath(root)
    key = _keys.get(where)
    if key is None:
        key = _read(root)
        if key is None:
            key = _make(root)
        _keys[where] = key
    return key


def forget() -> None:
    """Read every home's key afresh (a test that replaces a key file)."""
    _keys.clear()


def _read(root: Path) -> bytes | None:
    data = homefile.read_derived(root, KEY_FILE, KEY_BYTES)
    return data if data is not None and len(data) == KEY_BYTES else None


def _make(root: Path) -> bytes:
    """A new key, put in place; the one another process put there first if it did; else this process's."""
    key = os.urandom(KEY_BYTES)
    path = Path(root) / KEY_FILE
    tmp = Path(root) / f".{KEY_FILE}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces: a key another process made meanwhile stays
        except FileExistsError:
            theirs = _read(root)
            if theirs is not None:
                return theirs
            os.replace(tmp, path)  # what is there is not a key (wrong size, a link, a FIFO): replaced by name
            return key
        return key
    except OSError:
        return _process_key  # a read-only home: nothing it reads is believed, nothing it writes is kept
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def seal(key: bytes, data: bytes) -> bytes:
    """The seal of `data` under `key`."""
    return blake2b(data, key=key, digest_size=SEAL_BYTES).digest()


def holds(key: bytes, got: object, data: bytes) -> bool:
    """Whether `got` is the seal of `data` under `key` (anything else, of any type, does not hold)."""
    return type(got) is bytes and got == blake2b(data, key=key, digest_size=SEAL_BYTES).digest()


def seal_hex(key: bytes, data: bytes) -> str:
    """The seal as hex, for a JSON cache."""
    return blake2b(data, key=key, digest_size=SEAL_BYTES).hexdigest()


def holds_hex(key: bytes, got: object, data: bytes) -> bool:
    return type(got) is str and got == blake2b(data, key=key, digest_size=SEAL_BYTES).hexdigest()
