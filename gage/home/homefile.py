"""Reading the home's own files (identity, contacts, authority, settings): never blocking, never a traceback.

A home file can be damaged by hand: made a folder, a FIFO, unreadable, cut short, or filled
with bytes that are not UTF-8. Each of those is an error that names the file and says what
is wrong with it (`GageIOError` for what the file system says, `MalformedError` for the
bytes), so every command and the interface can show it instead of failing somewhere later.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gage.format.errors import GageIOError, MalformedError

CHUNK = 1 << 16


def read_bytes(path: Path, what: str, limit: int) -> bytes | None:
    """The bytes of the home file at `path` (None when it does not exist).

    Opened non-blocking (a FIFO put in its place cannot hang anything), regular files only,
    at most `limit` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GageIOError(f"cannot read the {what}: {exc.strerror}", path=str(path)) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise GageIOError(f"is a folder, not the {what} file", path=str(path))
        if not stat.S_ISREG(st.st_mode):
            raise GageIOError(f"is not a regular file (the {what} must be one)", path=str(path))
        if st.st_size > limit:
            raise MalformedError(f"is {st.st_size} bytes, over the {limit} bytes a {what} file may have", path=str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise MalformedError(f"is over the {limit} bytes a {what} file may have", path=str(path))
        return b"".join(chunks)
    except OSError as exc:
        raise GageIOError(f"cannot read the {what}: {exc.strerror}", path=str(path)) from exc
    finally:
        os.close(fd)


def read_text(path: Path, what: str, limit: int) -> str | None:
    """`read_bytes`, decoded as UTF-8; bytes that are not are an error naming where."""
    raw = read_bytes(path, what, limit)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MalformedError(f"is not UTF-8 text (line {line}, byte {exc.start})", path=str(path)) from exc
