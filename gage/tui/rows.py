"""The inbox's rows: what one row shows, and a whole tab's rows computed at once.

A row is shown first from cheap facts (`cheap_row`: the journal's arrival time and what the
manifest claims) and given its verdict later, off the UI thread (gage.tui.inbox_sync).
Checks come through the home's check cache (gage.home.cache.checks), the same one `gage list`
uses: a bundle is hashed again only when its tree changed (the cache's key covers every
entry's size, times, inode and the manifest and signature bytes), and everything else in
a verdict (contacts, journal, authority) is computed fresh on every reload.

Why a cache is safe here at all: the key changes with any write, rename or replacement
of any file under the bundle (a ctime cannot be set back), so a changed byte is never
served a stale good verdict; and opening a bundle (the bundle view, what the person
decides on) computes a fresh verdict without it, and the gate re-checks the staged bytes
at the moment it moves them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from gage import bundle as bundle_mod
from gage.format.errors import GageError
from gage.format.manifest import Manifest
from gage.home import listing
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.home.listing import Stored
from gage.inbox.opening import recover
from gage.inbox.rows import InboxReader
from gage.trust.verdict import Verdict

__all__ = ["CheckCache", "Row", "cheap_row", "load_rows", "parse_time"]  # CheckCache: gage.home.cache.checks's


def parse_time(text: str | None) -> datetime | None:
    """A time as gage writes them (2026-03-14T15:00:00Z), else None. Not strptime: this runs
    twice per row of a 10,000-row inbox, and strptime was a tenth of the fill.

    `fromisoformat` reads every ISO 8601 form (week dates, fractions, offsets, any separator);
    gage writes one, and a time written any other way (a hand-edited journal) is no time here,
    so what was read must print back as exactly what was written.
    """
    if not text or text[-1] != "Z":
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.isoformat() == text[:-1] + "+00:00" else None


EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass
class Row:
    """One inbox row. Shown at once from cheap facts (the directory name, the journal's
    arrival time, what the manifest claims), then given its verdict when a background
    worker has checked the bundle. Until then `verdict` is None and the row says
    "checking": nothing about it is trusted, and nothing acts on it."""

    id: str  # the directory's name: what the gate, `find` and the bundle view look up
    state: str
    arrived: datetime | None  # when it reached this home (the journal), else the sender's own clock
    kind: str | None = None  # claims of the manifest, shown literally until checked
    subject: str | None = None
    claimed_name: str | None = None
    verdict: Verdict | None = None
    stale: bool = False  # the verdict shown may be out of date (contacts changed): computed again

    @property
    def order(self) -> tuple[datetime, str]:
        """Newest arrival first (sorted in reverse), ties by id."""
        return (self.arrived or EPOCH, self.id)

    @classmethod
    def of(cls, stored: Stored, v: Verdict) -> Row:
        m = v.manifest
        first = v.seen.first_received if v.seen else None
        arrived = parse_time(first) or parse_time(m.created if m else None)
        return cls(stored.id, stored.state, arrived, m.kind if m else None, m.subject if m else None,
                   m.sender.name if m else None, v)


def cheap_row(stored: Stored, first_received: str | None, parsed: dict[str, Manifest] | None = None) -> Row:
    """A row from the manifest alone (no hashing, no signature check): shown while the verdict
    is computed. The parse is kept in `parsed`, for the check cache to reuse (gage.home.cache.checks)."""
    try:
        m: Manifest | None = bundle_mod.read_manifest(stored.path)[1]
    except (GageError, OSError):
        m = None
    if m is not None and parsed is not None:
        parsed[stored.id] = m
    arrived = parse_time(first_received) or parse_time(m.created if m else None)
    if m is None:
        return Row(stored.id, stored.state, arrived)
    return Row(stored.id, stored.state, arrived, m.kind, m.subject, m.sender.name)


class Cancelled(Exception):
    """The load was abandoned part way (the screen went away)."""


def _recover_staged(home: Home) -> None:
    """A bundle left in the gate's staging folder by a process killed mid-move is put back
    where the journal says (spec/gate.md) before the listing, so the open interface shows
    it straight away rather than after a restart. Never waits: a move in progress holds
    the lock, and the next reload looks again."""
    from gage.inbox.gate import staging_dir

    try:
        staged = any(staging_dir(home).iterdir())
    except OSError:
        return
    if staged:
        recover(home, timeout=0)


def load_rows(
    home: Home,
    state: str,
    *,
    cache: CheckCache | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> list[Row]:
    """Verdicts for every bundle in one state, newest arrival first, from the inbox read model
    (gage.inbox.rows.InboxReader, the rows `gage list` prints).

    One read of the contacts and authority files and one query of the journal index
    serve every bundle. A bundle that vanishes or is half-written while we look is
    skipped or shown as invalid; it never stops the listing. Runs in a thread worker: nothing here touches
    a widget.
    """
    _recover_staged(home)
    reader = InboxReader(home, cache=cache)
    bundles = listing.list_bundles(home, (state,))  # type: ignore[arg-type]
    reader.facts.prefetch(s.id for s in bundles)
    rows: list[Row] = []
    for stored in bundles:
        if cancelled():
            raise Cancelled
        found = reader.row(stored)
        if found is not None:
            rows.append(Row.of(stored, found.verdict))
    if cache is not None:
        cache.keep_only(state, {s.id for s in bundles})  # type: ignore[arg-type]
    rows.sort(key=lambda r: r.order, reverse=True)
    return rows
