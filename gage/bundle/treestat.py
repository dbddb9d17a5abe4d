"""A cheap fingerprint of a directory tree: has anything under it changed since last time?

The watcher uses it to tell a copy still arriving from one that has settled, the check
cache (gage.home.checkcache) and the interface to know when a cached check still holds. No
file is opened and no link is followed; any write, truncation, rename, replacement,
addition or removal changes it, and ctime (unlike mtime) cannot be set back by a writer.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# relative path, mode, size, mtime_ns, ctime_ns, inode, device; mode -1 marks a part that could not be read
Entry = tuple[str, int, int, int, int, int, int]
Fingerprint = tuple[Entry, ...]
UNREADABLE = -1


def scan(root: Path, *, limit: int | None = None) -> tuple[list[tuple[str, os.stat_result | None]], bool]:
    """Every entry under `root` with its lstat (None where it could not be read), and whether
    that is all of them: gage's one bounded walk of a tree it did not make.

    Iterative (no recursion, whatever the depth), never following a link, and stopping at
    `limit` entries (a hostile tree can be huge) without listing the rest of the folder it
    was in: a folder of millions costs `limit` entries, not millions. A folder that cannot
    be read is one entry with no stat (its path, or "." for `root`).
    """
    out: list[tuple[str, os.stat_result | None]] = []
    stack = [(root, "")]
    complete = True
    while stack:
        if limit is not None and len(out) >= limit:
            complete = False
            break
        directory, prefix = stack.pop()
        try:
            it = os.scandir(directory)
        except OSError:
            out.append((prefix or ".", None))
            continue
        with it:
            try:
                for e in it:
                    if limit is not None and len(out) >= limit:
                        complete = False
                        break
                    rel = prefix + e.name
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        out.append((rel, None))
                        continue
                    out.append((rel, st))
                    if stat.S_ISDIR(st.st_mode):
                        stack.append((Path(e.path), rel + "/"))
            except OSError:
                out.append((prefix or ".", None))
        if not complete:
            break
    return out, complete


def tree_entries(root: Path, *, limit: int | None = None) -> tuple[Fingerprint, bool]:
    """Every entry under `root` (`scan`), sorted, as fingerprint entries, and whether that is all
    of them. An entry that cannot be read is recorded with mode UNREADABLE rather than raised,
    so callers choose what that means."""
    found, complete = scan(root, limit=limit)
    out = [
        (rel, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
        if st is not None
        else (rel, UNREADABLE, 0, 0, 0, 0, 0)
        for rel, st in found
    ]
    return tuple(sorted(out)), complete


def tree_fingerprint(root: Path, *, limit: int | None = None) -> Fingerprint:
    """`tree_entries` without the flag: at most `limit` entries."""
    return tree_entries(root, limit=limit)[0]
