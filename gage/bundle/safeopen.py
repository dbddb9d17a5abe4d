"""The one way gage opens a file it did not write: a bundle's payload, manifest and signature.

A bundle folder is written by a stranger, so any name in it may be a symlink (to a secret,
or out of the bundle), a FIFO (whose open blocks until a writer appears, hanging whoever
reads), a device or a folder, and may be swapped for one of those between a look and an
open. Every reader goes through here, so all of them refuse the same things the same way:

- never through a symlink, at any depth: each folder on the way is opened relative to the
  one before with O_NOFOLLOW | O_DIRECTORY, and the file itself with O_NOFOLLOW;
- never blocking: O_NONBLOCK, which changes nothing for a regular file;
- regular files only: the descriptor is fstat'ed after the open (so there is no gap
  between the look and the read) and anything else is refused (`NotRegularFileError`);
- never out of the bundle: an empty, `.` or `..` component, or an absolute path, is
  refused before anything is opened (`OutsideError`).

Errors are OSError subclasses, so callers that already treat "cannot be opened" as one case
need no new branch. Reads are bounded: no more than a caller's limit plus one byte is read,
enough to tell a file is longer than it should be.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

CHUNK = 1 << 20
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: opening a FIFO without it blocks until a writer appears, so a hostile folder
# could hang a check for ever. On a regular file it changes nothing.
O_SAFE = os.O_RDONLY | O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
O_DIR = os.O_RDONLY | O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0)

StrPath = str | os.PathLike[str]


class NotRegularFileError(OSError):
    """A FIFO, device, socket or folder where a regular file was expected."""

    def __init__(self, what: str = "not a regular file") -> None:
        super().__init__(errno.ENODEV, what)


class OutsideError(OSError):
    """A relative path that could leave the folder it is opened beneath."""

    def __init__(self, rel: str) -> None:
        super().__init__(errno.EINVAL, f"{rel!r} is not a path inside the bundle")


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
        raise OutsideError(rel)
    return parts


def open_dir(path: StrPath) -> int:
    """A folder's descriptor, never through a symlink (the last component)."""
    return os.open(path, O_DIR)


def open_dir_beneath(dir_fd: int, rel_dir: str) -> int:
    """The descriptor of folder `rel_dir` below the folder `dir_fd`, no link at any depth."""
    fd = dir_fd
    try:
        for part in _parts(rel_dir):
            nfd = os.open(part, O_DIR, dir_fd=fd)
            if fd != dir_fd:
                os.close(fd)
            fd = nfd
    except BaseException:
        if fd != dir_fd:
            os.close(fd)
        raise
    return fd


def open_at(dir_fd: int, name: str) -> tuple[int, os.stat_result]:
    """Open the regular file `name` directly in the folder `dir_fd`; returns it and its fstat."""
    if not name or "/" in name or name in (".", ".."):
        raise OutsideError(name)
    fd = os.open(name, O_SAFE, dir_fd=dir_fd)
    try:  # `_regular`, inline: called once per payload file (10,000 small files)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError()
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _regular(fd: int) -> os.stat_result:
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError()
    except BaseException:
        os.close(fd)
        raise
    return st


def open_beneath(root: StrPath, rel: str) -> int:
    """Open `root/rel` for reading, following no symlink on the way, checked at each step.

    Checking the parent folders for symlinks and then opening by path leaves a gap in which
    a folder can be swapped for a link to somewhere else; opening each component relative
    to the descriptor of the one before, with O_NOFOLLOW, leaves none. Raises OSError
    (ELOOP, ENOTDIR) when any component is a symlink or not a folder, OutsideError for a
    path that could leave `root`. The caller checks the file type (or use `open_regular_beneath`).
    """
    parts = _parts(rel)
    fd = open_dir(root)
    try:
        if len(parts) > 1:
            sub = open_dir_beneath(fd, "/".join(parts[:-1]))
            os.close(fd)
            fd = sub
        return os.open(parts[-1], O_SAFE, dir_fd=fd)
    finally:
        os.close(fd)


def open_regular_beneath(root: StrPath, rel: str) -> tuple[int, os.stat_result]:
    """`open_beneath`, refusing anything but a regular file; returns it and its fstat."""
    fd = open_beneath(root, rel)
    return fd, _regular(fd)


def open_regular(path: StrPath) -> tuple[int, os.stat_result]:
    """Open a regular file by path, never through a symlink as its last component.

    For a file a person named (a source to bundle) or one at a bundle's top level whose
    folder was just checked; payload files go through `open_regular_beneath`.
    """
    fd = os.open(path, O_SAFE)
    return fd, _regular(fd)


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes from `fd` (one more than allowed shows the file goes on)."""
    chunks = []
    remaining = limit + 1
    while remaining > 0:
        chunk = os.read(fd, min(CHUNK, remaining))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def hash_fd(fd: int, *, limit: int | None = None, on_bytes: Callable[[int], None] | None = None) -> tuple[int, str]:
    """Stream `fd` through SHA-256: its size and hex digest, reading at most `limit` + 1 bytes.

    Large reads let hashlib release the GIL, so several files hash at once on several cores.
    """
    import hashlib

    h = hashlib.sha256()
    size = 0
    while limit is None or size <= limit:
        want = CHUNK if limit is None else min(CHUNK, limit + 1 - size)
        chunk = os.read(fd, want)
        if not chunk:
            break
        h.update(chunk)
        size += len(chunk)
        if on_bytes is not None:
            on_bytes(len(chunk))
        if size == limit and len(chunk) < want:
            break  # a short read of a regular file is its end: no second read to see nothing (small files)
    return size, h.hexdigest()


def read_head(root: StrPath, rel: str, limit: int) -> tuple[bytes, int | None]:
    """The first `limit` bytes of the regular file `root/rel`, and its size when it goes on.

    For a preview (the frame, the interface): one open for the sample and the lines shown.
    Raises OSError (a special file as NotRegularFileError, errno ENODEV).
    """
    fd, _st = open_regular_beneath(root, rel)
    try:
        data = read_fd(fd, limit)
        if len(data) > limit:
            return data[:limit], os.fstat(fd).st_size
        return data, None
    finally:
        os.close(fd)

