"""A cheap fingerprint of a directory tree: has anything under it changed since last time?

The watcher uses it to tell a copy still arriving from one that has settled, the check
cache (gage.home.cache.checks) and the interface to know when a cached check still holds. No
file is opened and no link is followed; any write, truncation, rename, replacement,
addition or removal changes it, and ctime (unlike mtime) cannot be set back by a writer.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gage.format import sha256

# relative path, mode, size, mtime_ns, ctime_ns, inode, device; mode -1 marks a part that could not be read
Entry = tuple[str, int, int, int, int, int, int]
Fingerprint = tuple[Entry, ...]
UNREADABLE = -1
# A timestamp this close to a scan's start may be followed by a write in the same tick on a
# file system with coarse timestamps (git's "racy" entries): nothing so fresh is remembered
# (the check cache, gage.home.cache.checks; the reconcile marker, gage.home.cache.reconcilemark).
RACY_NS = 2_000_000_000


def stat_entry(rel: str, st: os.stat_result) -> Entry:
    return (rel, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def tree_digest(entries: list[Entry]) -> str:
    """The check cache's key, its tree part: the entries in one order, hashed."""
    return sha256.hexdigest(repr(sorted(entries)).encode("utf-8", "surrogateescape"))


def tree_digest_of(listed: Iterable[tuple[str, os.stat_result]]) -> str:
    """The key's tree part for entries stat'ed by a caller (gage.home.cache.rowindex checks a row with it).

    Here rather than in the check cache, so the row index needs nothing of the checker."""
    return tree_digest([stat_entry(rel, st) for rel, st in listed])


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
