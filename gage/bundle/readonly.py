"""A landed bundle's files are read-only, and the trees gage removes are removed whatever their modes.

The check cache (gage/home/cache/checks.py) trusts that a change to a file changes its ctime. A
write through a shared writable `mmap` breaks that: only the first write to a clean page
updates the timestamps, so later writes to the same page can go unseen. A payload
file that is read-only cannot be mapped for writing, or opened for writing at all, without
a deliberate `chmod` first, and a chmod changes the ctime. So every bundle that lands in
the inbox has its payload files and manifest made 0444 and its payload folders 0555; the
bundle's own folder keeps its mode, so the bundle can still be moved between the inbox
folders (renaming a folder to another parent needs write permission on it).

Read-only folders cannot be emptied by `shutil.rmtree` when gage does not run as root, so
every removal of a tree that may hold a landed bundle (a discarded copy, a scratch copy, a
replaced invalid copy) goes through `remove_tree`, which makes the folders writable again
first, never through a link.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE, safeopen
from gage.format.manifest import Manifest

FILE_MODE = 0o444
FOLDER_MODE = 0o555


def seal(root: Path, manifest: Manifest) -> None:
    """Make the bundle at `root` read-only as above; a listed file that is missing is skipped.

    Every file and folder is opened beneath `root` without following a link and changed
    through its descriptor, so a link in the copy can never make this chmod something else.
    """
    for name in (MANIFEST, SIGNATURE):
        _chmod_beneath(root, name, FILE_MODE)
    folders = {PAYLOAD}
    for entry in manifest.files:
        rel = f"{PAYLOAD}/{entry.path}"
        _chmod_beneath(root, rel, FILE_MODE)
        parts = entry.path.split("/")[:-1]
        for i in range(len(parts)):
            folders.add(f"{PAYLOAD}/" + "/".join(parts[: i + 1]))
    for rel in folders:
        with contextlib.suppress(OSError):
            dir_fd = safeopen.open_dir(root)
            try:
                fd = safeopen.open_dir_beneath(dir_fd, rel)
                try:
                    os.fchmod(fd, FOLDER_MODE)
                finally:
                    os.close(fd)
            finally:
                os.close(dir_fd)


def _chmod_beneath(root: Path, rel: str, mode: int) -> None:
    with contextlib.suppress(OSError):
        fd, _st = safeopen.open_regular_beneath(root, rel)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def unseal(path: Path) -> None:
    """Give every real folder under `path` (links are never followed) its owner's write permission back."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return
    except OSError:
        return
    for dirpath, _dirs, _files in os.walk(path):
        with contextlib.suppress(OSError):
            st = os.lstat(dirpath)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(dirpath, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)


def remove_tree(path: Path) -> None:
    """`shutil.rmtree(path, ignore_errors=True)` for a tree that may hold read-only folders."""
    import shutil  # only when something is removed: it loads bz2, lzma and zlib (start-up)

    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        unseal(path)
        shutil.rmtree(path, ignore_errors=True)
