"""Reading the home's own files (identity, contacts, authority, settings): never blocking, never a traceback.

A home file can be damaged by hand: made a folder, a FIFO, unreadable, cut short, or filled
with bytes that are not UTF-8. Each of those is an error that names the file and says what
is wrong with it (`GageIOError` for what the file system says, `MalformedError` for the
bytes), so every command and the interface can show it instead of failing somewhere later.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from gage.bundle import atomic, safeopen
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


# --- derived files: the home's caches, opened like a stranger's --------------------------------

_said: set[str] = set()


def say_once(path: Path, problem: str) -> None:
    """Tell the person, once per process and file, that a cache file is being ignored."""
    key = str(path)
    if key in _said:
        return
    _said.add(key)
    import logging  # only when a cache is found damaged: logging costs every command start-up

    logging.getLogger("gage.cache").warning("gage: ignoring %s (%s); it is only a cache, and gage rebuilds it", path, problem)


def read_derived(root: Path, rel: str, limit: int) -> bytes | None:
    """The bytes of the cache file `root/rel`, or None when it is missing or not one to trust.

    A cache is derived: losing it costs only time. So it is opened like a stranger's file
    (`safeopen.open_regular_beneath`: no link at any depth, never blocking, regular files
    only) and read to at most `limit` bytes; a link, a FIFO, a device, a folder, a file
    over the limit or one that cannot be read is said once (`say_once`) and treated as
    missing, so the caller rebuilds it in place (an atomic rename replaces the name, never
    what a link pointed to). A sync tool or a restore can leave any of these.
    """
    try:
        fd, st = safeopen.open_regular_beneath(root, rel)
    except FileNotFoundError:
        return None
    except safeopen.NotRegularFileError:
        say_once(root / rel, "it is not a regular file")
        return None
    except OSError as exc:
        say_once(root / rel, "it is a symbolic link" if exc.errno in (errno.ELOOP, errno.EMLINK) else exc.strerror or str(exc))
        return None
    try:
        if st.st_size > limit:
            say_once(root / rel, f"it is {st.st_size} bytes, over the {limit} a cache file may have")
            return None
        data = safeopen.read_fd(fd, limit)
    except OSError as exc:
        say_once(root / rel, exc.strerror or str(exc))
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        say_once(root / rel, f"it grew over the {limit} bytes a cache file may have")
        return None
    return data


def clear_derived(root: Path, rel: str) -> bool:
    """Make the cache name `root/rel` absent or a regular file reached through no link.

    The name's folders must be real folders (a link among them is said once and False is
    returned: nothing may be written there). A link, FIFO, socket or device at the name
    itself is unlinked (the name goes; what a link pointed to is never touched) and said
    once. A folder at the name is said once and left: False.
    """
    parts = rel.split("/")
    here = root
    for i, part in enumerate(parts):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return True
        except OSError as exc:
            say_once(root / rel, exc.strerror or str(exc))
            return False
        if i < len(parts) - 1:
            if not stat.S_ISDIR(st.st_mode):
                say_once(root / rel, f"{'/'.join(parts[: i + 1])} is not a folder (a link?)")
                return False
            continue
        if stat.S_ISREG(st.st_mode):
            return True
        if stat.S_ISDIR(st.st_mode):
            say_once(root / rel, "it is a folder")
            return False
        say_once(root / rel, "it is a symbolic link" if stat.S_ISLNK(st.st_mode) else "it is not a regular file")
        try:
            os.unlink(here)
        except OSError:
            return False
        return True
    return True


def write_derived(root: Path, rel: str, data: bytes) -> bool:
    """Write the cache file `root/rel` atomically, beneath real folders only; False when skipped.

    The rename replaces the name (a link or FIFO left there goes, its target untouched); a
    folder on the way that is a link means nothing is written (it would land outside the
    home). Failing to write a cache is never an error: it costs time next run.
    """
    parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if parent and not _folders_real(root, parent):
        return False
    try:
        if os.path.isdir(root / rel) and not os.path.islink(root / rel):
            say_once(root / rel, "it is a folder")
            return False
        atomic.write_bytes(root / rel, data, 0o600)
        return True
    except (OSError, GageIOError):
        return False


def _folders_real(root: Path, rel_dir: str) -> bool:
    """Whether every folder of `rel_dir` below `root` exists as a real folder (made 0700 when missing)."""
    here = root
    for part in rel_dir.split("/"):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            try:
                os.mkdir(here, 0o700)
            except OSError:
                return False
            continue
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            say_once(root / rel_dir, "it is not a folder (a link?)")
            return False
    return True
