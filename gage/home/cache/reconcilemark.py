"""The reconcile marker: lets opening a home skip reconcile's scan when nothing it reads has changed.

Reconcile (gage/inbox/reconcile.py) decides from the names in the inbox state folders and the staging
folders, whether each named entry is a folder, the scratch entries' ages, and the journal. It never
reads inside a bundle. So after a scan that found the home consistent, it is enough to remember:

- for inbox/pending, inbox/accepted, inbox/rejected, the staging folder (`tmp/`) and the folder
  under it where accepts stage (`tmp/accepting`): device, inode, mtime_ns and ctime_ns. An entry
  added, removed or renamed in a folder changes its mtime and ctime; a folder swapped for another
  changes its inode; and a user process cannot set a ctime back (utime sets mtime only);
- for the journal: device, inode, size, mtime_ns, ctime_ns and the SHA-256 of its last 4 KiB, so an
  append or an edit in place is seen.

If all of these are what they were, the scan would find what it found then (consistent) and is
skipped. The marker is written only when its claim is exact:

- the scan ran under the home lock and these values were the same before and after it (it made
  no repair, and nothing changed while it read);
- none of the folders' or the journal's timestamps is within RACY_NS of the scan starting: a
  change in the same timestamp tick as the snapshot could otherwise keep its stamps (git's "racy"
  rule, as gage/home/cache/checks.py);
- no inbox entry with a bundle name is a symbolic link (whether it leads to a folder can change
  without any folder here changing), and `tmp/` holds no scratch copy (reconcile removes those by
  age, which changes with the clock alone).

The marker is sealed under the home's cache key (gage.home.cache.sealkey): one written by whoever
cannot read that key (crafted, or copied from another home) does not hold. Anything else (no
marker, a damaged, foreign or unsealed one, a value that differs, a stat that fails) means the
full reconcile runs, as it always did. Deleting the marker changes nothing but speed.
It is written atomically, and a write that fails (a read-only home) is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from gage.bundle.treestat import RACY_NS
from gage.format import sha256
from gage.format.errors import GageError
from gage.format.manifest import is_id
from gage.home import homefile
from gage.home.cache import sealkey
from gage.home.layout import SCRATCH_PREFIXES, STAGING_DIR, STATES, Home

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

FILE_NAME = "reconciled.json"
FORMAT = "gage-reconciled-2"  # 2: sealed under the home's cache key
TAIL = 4096
_LIMIT = 64 * 1024

if TYPE_CHECKING:
    Snapshot = dict[str, Any]


def now_ns() -> int:
    """The clock the racy rule reads (a function, so a test can move it on)."""
    return time.time_ns()


def _folders(home: Home) -> dict[str, str]:
    named: dict[str, str] = {s: str(home.state_dir(s)) for s in STATES}
    named["staging"] = str(home.staging)
    named["accepting"] = str(home.staging / STAGING_DIR)
    return named


def _journal(home: Home) -> list[Any] | None:
    try:
        fd = os.open(home.journal.path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        start = max(0, st.st_size - TAIL)
        tail = os.pread(fd, st.st_size - start, start)
        return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, sha256.hexdigest(tail)]
    finally:
        os.close(fd)


def snapshot(home: Home) -> Snapshot:
    """What reconcile's result depends on, as stat sees it now (raises OSError if a stat fails)."""
    folders: dict[str, list[int] | None] = {}
    for name, path in _folders(home).items():
        try:
            st = os.stat(path)
        except FileNotFoundError:
            folders[name] = None
            continue
        folders[name] = [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
    return {"format": FORMAT, "home": str(home.root), "folders": folders, "journal": _journal(home)}


def _staging_busy(home: Home) -> bool:
    """A scratch copy in tmp/ or anything in tmp/accepting: work reconcile finishes, seen with two
    listings of small folders. Checked even when the marker matches, so a marker (crafted, or
    written by a bug) can never hide a half-finished accept."""
    try:
        with os.scandir(home.staging) as it:
            if any(e.name.startswith(SCRATCH_PREFIXES) for e in it):
                return True
        with os.scandir(home.staging / STAGING_DIR) as it:
            return any(True for _ in it)
    except FileNotFoundError:
        return False
    except OSError:
        return True


def fresh(home: Home) -> bool:
    """True only if a marker exists, is whole, every value in it is what stat says now, and no
    staging work is visible. The marker is a derived file: opened like a stranger's (no link,
    no FIFO: opening a home must never block), at most _LIMIT bytes."""
    data = homefile.read_derived(home.root, f"cache/{FILE_NAME}", _LIMIT)
    if data is None:
        return False
    try:
        marker = json.loads(data)
        if not (isinstance(marker, dict) and marker.get("format") == FORMAT):
            return False
        seal = marker.pop("seal", None)
        if not sealkey.holds_hex(sealkey.home_key(home.root), seal, _text(marker)) or marker != snapshot(home):
            return False
    except (OSError, ValueError, RecursionError):
        return False
    return not _staging_busy(home)


def _text(marker: Any) -> bytes:
    """What a marker's seal is taken over: the marker without its seal, as one JSON text."""
    return json.dumps(marker, sort_keys=True, ensure_ascii=True).encode("ascii")


def _racy(snap: Snapshot, started_ns: int) -> bool:
    stamps: list[int] = []
    for value in snap["folders"].values():
        if value is not None:
            stamps += value[2:4]
    if snap["journal"] is not None:
        stamps += snap["journal"][3:5]
    return any(s >= started_ns - RACY_NS for s in stamps)


def _unsafe_entries(home: Home) -> bool:
    """A symlinked bundle name in the inbox, or a scratch copy in tmp/: cases the marker cannot vouch for."""
    for state in STATES:
        with os.scandir(home.state_dir(state)) as it:
            if any(is_id(e.name) and e.is_symlink() for e in it):
                return True
    with os.scandir(home.staging) as it:
        if any(e.name.startswith(SCRATCH_PREFIXES) for e in it):
            return True
    try:
        with os.scandir(home.staging / STAGING_DIR) as it:
            return any(True for _ in it)
    except FileNotFoundError:
        return False  # made by the first accept


def forget(home: Home) -> None:
    with contextlib.suppress(OSError):
        os.unlink(home.cache / FILE_NAME)  # unlinks a link itself, never what it points to


def save(home: Home, before: Snapshot, started_ns: int) -> bool:
    """Write the marker if the scan that started at `started_ns` with `before` can be vouched for
    (see the module docstring); otherwise remove any old one. True when written."""
    try:
        after = snapshot(home)
        if after != before or _racy(after, started_ns) or _unsafe_entries(home):
            forget(home)
            return False
        sealed = {**after, "seal": sealkey.seal_hex(sealkey.home_key(home.root), _text(after))}
        return homefile.write_derived(home.root, f"cache/{FILE_NAME}", json.dumps(sealed, sort_keys=True).encode("utf-8"))
    except (OSError, ValueError, GageError):
        forget(home)
        return False
