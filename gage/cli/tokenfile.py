"""Reading what a command is given as a file, no further than a limit: an A2A JSON object, a bearer token.

Shared by `gage a2a` (import, serve, send) and `gage deliver` (to an A2A agent).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from gage.format.errors import GageIOError, RefusedError


def read_bounded(source: str, limit: int) -> tuple[bytes, str]:
    """The input, read no further than `limit` + 1 bytes: a regular file (never a FIFO that
    would block) or standard input."""
    if source == "-":
        data = sys.stdin.buffer.read(limit + 1)
        where = "standard input"
    else:
        try:
            fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise GageIOError(f"cannot open: {exc.strerror}", path=source) from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise RefusedError("is not a regular file", path=source)
            chunks: list[bytes] = []
            total = 0
            while total <= limit:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            data = b"".join(chunks)
        except OSError as exc:
            raise GageIOError(f"cannot read: {exc.strerror}", path=source) from exc
        finally:
            os.close(fd)
        where = Path(source).name
    if len(data) > limit:
        raise RefusedError(f"is over the A2A limit of {limit} bytes for a JSON object; nothing was imported", path=where)
    return data, where


def token_from_file(path: str | None) -> str | None:
    """A bearer token from a file (never an argument, which `ps` shows): for send, and deliver to an A2A agent."""
    if path is None:
        return None
    data, where = read_bounded(path, 4096)
    token = data.decode("utf-8", errors="replace").strip()
    if len(token) < 16 or any(c.isspace() for c in token):
        raise RefusedError("a bearer token must be one line of at least 16 characters, with no spaces", path=where)
    return token
