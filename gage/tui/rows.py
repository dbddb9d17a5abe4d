"""The inbox's rows: a verdict for every bundle in one state, computed off the UI thread.

A live inbox recomputes its rows whenever anything under inbox/ changes. Checking a
bundle hashes every payload byte, so an inbox of many (or large) bundles would be
re-hashed on every arrival. `CheckCache` keeps the result of `bundle.check` for a
bundle whose files have not changed since it was checked; everything else in a
verdict (contacts, journal, authority) is recomputed on every reload, from one read
of the contacts file and one pass over the journal.

Why the cache is safe for the inbox list, and used nowhere else: a row is a summary
that tells the person where to look. Opening a bundle (the bundle view, what the
person decides on) computes a fresh verdict, and the gate re-checks the staged bytes
at the moment it moves them, so a stale row can mislead nothing that acts. And it
goes stale only if a file changes while keeping its path, size, mtime, ctime and
inode, which takes more than an ordinary write: any write, rename or replacement of
any file under the bundle changes its fingerprint and the bundle is checked again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .. import bundle as bundle_mod
from .. import store
from ..contacts import Contacts
from ..errors import GageError
from ..home import Home
from ..store import Stored
from ..treestat import UNREADABLE, Fingerprint, tree_fingerprint
from ..verdict import JournalFacts, Verdict, compute


def parse_time(text: str | None) -> datetime | None:
    try:
        return datetime.strptime(text or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass
class Row:
    verdict: Verdict

    @property
    def id(self) -> str:
        return self.verdict.id or self.verdict.path.name

    @property
    def arrived(self) -> datetime | None:
        """When it reached this home (the journal), else the sender's own clock."""
        v = self.verdict
        first = v.seen.first_received if v.seen else None
        return parse_time(first) or parse_time(v.manifest.created if v.manifest else None)


def fingerprint(root: Path) -> Fingerprint | None:
    """The tree's fingerprint (gage.treestat), or None when any part of it cannot be read
    (it is vanishing): such a check is never cached."""
    fp = tree_fingerprint(root)
    return None if any(entry[1] == UNREADABLE for entry in fp) else fp


class CheckCache:
    """`bundle.check` results for display, kept while a bundle's fingerprint is unchanged.

    Keyed on (bundle id, state): a bundle that moves between states is checked again.
    Only the inbox list uses it (see the module docstring for why that is safe); it is
    never given to the gate, the bundle view, `gage read` or `gage verdict`.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[Fingerprint, bundle_mod.Check]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def check(self, stored: Stored) -> bundle_mod.Check:
        key = (stored.id, stored.state)
        before = fingerprint(stored.path)
        with self._lock:
            cached = self._entries.get(key)
        if before is not None and cached is not None and cached[0] == before:
            self.hits += 1
            return _copy(cached[1])
        self.misses += 1
        result = bundle_mod.check(stored.path, expect_name=True)
        # Keep it only if nothing changed while it was being checked: a check of bytes that
        # moved underneath must not be remembered under either fingerprint.
        after = fingerprint(stored.path)
        with self._lock:
            if before is not None and before == after:
                self._entries[key] = (before, result)
            else:
                self._entries.pop(key, None)
        return _copy(result)

    def keep_only(self, state: str, ids: set[str]) -> None:
        """Forget the bundles of `state` that are no longer there, so the cache stays as small as the inbox."""
        with self._lock:
            for key in [k for k in self._entries if k[1] == state and k[0] not in ids]:
                del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)


def _copy(c: bundle_mod.Check) -> bundle_mod.Check:
    """A verdict holds its check's lists; each gets its own, so no verdict can change the cache."""
    return dataclasses.replace(c, problems=list(c.problems), warnings=list(c.warnings))


class Cancelled(Exception):
    """The load was abandoned part way (the screen went away)."""


def _recover_staged(home: Home) -> None:
    """A bundle left in the gate's staging folder by a process killed mid-move is put back
    where the journal says (spec/gate.md) before the listing, so the open interface shows
    it straight away rather than after a restart. Never waits: a move in progress holds
    the lock, and the next reload looks again."""
    from ..gate import staging_dir

    try:
        staged = any(staging_dir(home).iterdir())
    except OSError:
        return
    if staged:
        home.recover(timeout=0)


def load_rows(
    home: Home,
    state: str,
    *,
    cache: CheckCache | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> list[Row]:
    """Verdicts for every bundle in one state, newest arrival first.

    One read of the contacts file and one pass over the journal serve every bundle. A
    bundle that vanishes or is half-written while we look is skipped or shown as
    invalid; it never stops the listing. Runs in a thread worker: nothing here touches
    a widget.
    """
    _recover_staged(home)
    contacts = Contacts.load(home.contacts_path)
    facts = JournalFacts.of(home)
    rows: list[Row] = []
    listed: set[str] = set()
    for stored in store.list_bundles(home, (state,)):
        if cancelled():
            raise Cancelled
        listed.add(stored.id)
        if not stored.path.is_dir():
            continue
        try:
            check = cache.check(stored) if cache is not None else None
            rows.append(Row(compute(home, stored, contacts=contacts, facts=facts, check=check)))
        except (GageError, OSError):
            continue
    if cache is not None:
        cache.keep_only(state, listed)
    epoch = datetime.min.replace(tzinfo=UTC)
    rows.sort(key=lambda r: (r.arrived or epoch, r.id), reverse=True)
    return rows
