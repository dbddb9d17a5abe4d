"""Crash-safe file operations.

Every write that another process (or a later run after a crash) might read goes to a
temporary name in the same directory, is fsynced, and is renamed into place, so a
reader sees the old bytes or the new ones, never half of each.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from gage.bundle import critical
from gage.format.errors import GageIOError


def fsync_dir(path: Path) -> None:
    """Make a rename or create in `path` durable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.urandom(6).hex()}")


def write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` atomically with permissions `mode` from the first byte on."""
    tmp = tmp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise GageIOError(f"cannot write: {exc.strerror or exc}", path=str(path)) from exc


def write_new(path: Path, data: bytes, mode: int = 0o644, *, sync: bool = True) -> None:
    """Write `data` to `path`, which must not exist yet, and fsync it (not the folder).

    For a file inside a folder that is itself renamed into place once whole (a bundle being
    built): its folders are fsynced once, by `fsync_dirs`, after everything in them is written.
    `sync=False`: not even the file; the caller syncs it with its batch (`sync_trees`).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dirs(root: Path, below: Iterable[str]) -> None:
    """fsync the folders `below` (relative to `root`, "a/b/" style) deepest first, then `root`.

    With every file in them already fsynced as it was written, this makes the whole tree
    durable: one fsync per file and one per folder, never a second pass over the files.
    """
    for rel in sorted(set(below), key=lambda r: (-r.count("/"), r)):
        if rel:
            fsync_dir(root / rel)
    fsync_dir(root)


# fsyncs in flight at once in `sync_trees`: the file system commits the ones that wait together
# (ext4's and XFS's journals take every waiting fsync into one commit), so N files cost a few
# commits, not N, while each file is still synced by the call POSIX promises it for.
SYNC_THREADS = 16


def sync_trees(roots: Iterable[Path]) -> None:
    """Make every file and folder under each of `roots` durable, many fsyncs in flight at once.

    For a batch written with its fsyncs left out (`write_new(sync=False)`, a copy with
    `durable=False`), before it is renamed into view: one fsync per file and per folder, as
    writing them one at a time would cost, but waited for together. Raises OSError on the
    first that fails (ENOSPC, EIO): nothing of the batch may then be renamed into view.
    """
    files: list[str] = []
    folders: list[str] = []
    for root in roots:
        for dirpath, _dirnames, filenames in os.walk(root):
            files.extend(os.path.join(dirpath, n) for n in filenames)
            folders.append(dirpath)
    if not files and not folders:
        return

    def one(p: str) -> None:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    from concurrent.futures import (
        ThreadPoolExecutor,  # a batch only, not every command's start-up
    )

    with ThreadPoolExecutor(max_workers=SYNC_THREADS, thread_name_prefix="gage-sync") as pool:
        # Files first, then their folders: list() raises the first failure of each stage.
        list(pool.map(one, files))
        list(pool.map(one, folders))


def fsync_tree(root: Path) -> None:
    """fsync every file and directory under `root` before it is renamed into view."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            p = os.path.join(dirpath, name)
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


def rename_noreplace(src: Path, dst: Path, *, durable: bool = True) -> bool:
    """Rename `src` to `dst` unless `dst` exists. Returns False if it does.

    os.rename onto an existing non-empty directory fails on POSIX, and onto an empty one
    it silently replaces it; checking first under the home lock closes that gap.
    `durable=False` leaves fsyncing both folders to the caller, who moves many and then
    fsyncs each folder once (a bulk decision, gage.inbox.gate.decide_many).
    """
    if dst.exists() or dst.is_symlink():
        return False
    try:
        critical.point("rename")
        os.rename(src, dst)
    except OSError as exc:
        if dst.exists():
            return False
        raise GageIOError(f"cannot move to {dst}: {exc.strerror or exc}", path=str(src)) from exc
    if not durable:
        return True
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)
    return True
