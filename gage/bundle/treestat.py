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


def tree_entries(root: Path, *, limit: int | None = None) -> tuple[Fingerprint, bool]:
    """Every entry under `root`, sorted, and whether that is all of them.

    Stops at `limit` entries (a hostile tree can be huge), without listing the rest of the
    folder it was in: a folder of millions costs `limit` entries, not millions. A folder or
    entry that cannot be read (vanishing, no permission) is recorded with mode UNREADABLE
    rather than raised, so callers choose what that means.
    """
    out: list[Entry] = []
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
            out.append((prefix or ".", UNREADABLE, 0, 0, 0, 0, 0))
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
                        out.append((rel, UNREADABLE, 0, 0, 0, 0, 0))
                        continue
                    out.append((rel, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev))
                    if stat.S_ISDIR(st.st_mode):
                        stack.append((Path(e.path), rel + "/"))
            except OSError:
                out.append((prefix or ".", UNREADABLE, 0, 0, 0, 0, 0))
        if not complete:
            break
    return tuple(sorted(out)), complete


def tree_fingerprint(root: Path, *, limit: int | None = None) -> Fingerprint:
    """`tree_entries` without the flag: at most `limit` entries."""
    return tree_entries(root, limit=limit)[0]
