"""The inbox's background work: rows first from cheap facts, then verdicts, then only changes.

A verdict hashes every payload byte and checks a signature: about half a millisecond for
a small bundle, five seconds for 10,000 of them. So one run of `sync` (in a thread
worker, nothing here touches a widget) works in the order the person needs:

1. List the tab's folder and ask the journal index (gage.home.cache.journalindex, through
   gage.tui.livefacts) for the listed bundles' facts, in one query: the journal itself is
   read only where it grew since the last run. The rows' order is the arrival order,
   which these give.
2. Rows from cheap facts (the id, what the manifest claims, marked "checking"): on a first
   load the first screenful is posted at once and the rest follows in chunks; later runs
   post only what was added and what left, found by comparing the listing with the rows
   shown. Nothing already shown is sent again.
3. Verdicts: first for the bundles that arrived or changed (named by the watcher, or by
   new journal entries), then for every row still without one, the rows in view first
   (`Wanted`, updated by the screen as the person scrolls). Posted in batches. Checks come
   through the home's persistent check cache (gage.home.cache.checks: a bundle whose tree is
   unchanged since it last checked out is not hashed again, even after a restart; its key
   covers every byte, see that module), saved when a fill completes and every
   SAVE_SECONDS while one runs. Contacts and the authority file are read once per run.

A change that arrives while verdicts are being filled in interrupts this phase (the
screen sets `interrupt`), so a new bundle is never queued behind thousands of old ones;
the next run continues where this one stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from gage.format.errors import GageError
from gage.format.manifest import Manifest
from gage.home import listing
from gage.home.cache.checks import CheckCache
from gage.home.layout import ALL_STATES, Home
from gage.home.listing import Stored
from gage.inbox.rows import InboxReader
from gage.trust.verdict import Verdict
from gage.tui import outbox as tui_outbox
from gage.tui import safe
from gage.tui.livefacts import LiveFacts
from gage.tui.messages import RowsArrived, SyncDone, VerdictsReady
from gage.tui.rows import Cancelled, Row, _recover_staged, cheap_row, parse_time

FIRST_CHUNK = 100  # rows posted before the rest of a first load: more than a screenful
CHUNK = 1000
BATCH_SECONDS = 0.2  # how often verdicts are posted while they are being computed
SAVE_SECONDS = 10.0  # how often the check cache is saved while verdicts are filled in
FACTS_BATCH = 500  # ids whose journal facts are asked for at once while verdicts are filled in


class Wanted:
    """The ids in view, shared between the screen (writes) and the worker (reads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: tuple[str, ...] = ()

    def set(self, ids: list[str]) -> None:
        with self._lock:
            self._ids = tuple(ids)

    def get(self) -> tuple[str, ...]:
        with self._lock:
            return self._ids


class LazyChecks:
    """The home's check cache, loaded on first use: in the worker, since its file holds an
    entry for every bundle checked (about 2 MB at 10,000 bundles)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: CheckCache | None = None

    def of(self, home: Home) -> CheckCache:
        with self._lock:
            if self._cache is None:
                self._cache = CheckCache.of(home)
            return self._cache


@dataclass
class SyncRequest:
    state: str
    run: int
    full: bool  # a first load (or another tab): every row is sent
    known: frozenset[str]  # the rows shown when the run started
    recheck: list[str]  # rows whose files changed (the watcher said so), to check again first
    need: list[str]  # rows without a current verdict, in display order
    wanted: Wanted
    interrupt: threading.Event = field(default_factory=threading.Event)


def verdict_of(stored: Stored, reader: InboxReader) -> Verdict | None:
    """The row's verdict, from the inbox read model (its check through the check cache), or None if it vanished."""
    return reader.verdict(stored)


def sync(
    home: Home,
    req: SyncRequest,
    cache: CheckCache,
    live: LiveFacts,
    post: Callable[[Message], object],
    cancelled: Callable[[], bool],
) -> None:
    try:
        _sync(home, req, cache, live, post, cancelled)
    except Cancelled:
        return
    except (GageError, OSError) as exc:
        post(SyncDone(req.state, req.run, error=safe.error_text(exc)))
        return
    post(SyncDone(req.state, req.run))


def _sync(
    home: Home, req: SyncRequest, cache: CheckCache, live: LiveFacts, post: Callable[[Message], object], cancelled: Callable[[], bool]
) -> None:
    _recover_staged(home)
    listed = {s: listing.list_bundles(home, (s,)) for s in ALL_STATES}
    counts = {s: len(v) for s, v in listed.items()}
    counts["queued"] = tui_outbox.queued(home)  # the deliveries waiting for their way, for the header
    present = {st.id: st for st in listed[req.state]}
    update = live.update(home)
    facts = update.facts
    first: list[str] = []  # verdicts to compute before any other
    parsed: dict[str, Manifest] = {}
    if req.full:
        # The arrival order: from the row index where it can say (one query), the journal
        # index for the rest (one query for the tab's bundles when the row index cannot).
        arrivals = indexed_arrivals(home, req.state, present, facts)
        if arrivals is None:
            arrivals = facts.arrival_order(present)  # the order only: each chunk's facts are read below
        order = _ordered(list(present.values()), arrivals)
        for i, start in enumerate([0, FIRST_CHUNK, *range(FIRST_CHUNK + CHUNK, len(order), CHUNK)]):
            if cancelled():
                raise Cancelled
            end = FIRST_CHUNK if i == 0 else start + CHUNK
            if i > 0 and start >= len(order):
                break
            facts.prefetch(st.id for st in order[start:end])
            chunk = [cheap_row(st, facts.first_received.get(st.id), parsed) for st in order[start:end]]
            post(RowsArrived(req.state, req.run, chunk, counts=counts, replace=i == 0))
        need = [st.id for st in order]
    else:
        facts.prefetch([*(i for i in present if i not in req.known), *req.recheck, *update.touched])
        added = [cheap_row(st, facts.first_received.get(st.id), parsed) for i, st in present.items() if i not in req.known]
        added.sort(key=lambda r: r.order, reverse=True)
        removed = [i for i in req.known if i not in present]
        post(RowsArrived(req.state, req.run, added, counts=counts, removed=removed))
        touched = sorted(i for i in update.touched if i in req.known)
        first = list(dict.fromkeys([r.id for r in added] + req.recheck + touched))
        need = list(present) if update.keys_changed else req.need
    reader = InboxReader(home, facts=facts, cache=cache, parsed=parsed)
    _verdicts(req, present, first, need, reader, post, cancelled)
    cache.keep_only(req.state, set(present))
    cache.save()  # only if something changed: a fill that learned new checks, or bundles that left


def indexed_arrivals(home: Home, state: str, present: Mapping[str, Stored], facts: Any) -> dict[str, str] | None:
    """Each present bundle's first arrival, as the journal says, read from the row index
    (gage.home.cache.rowindex: the rows `gage list` and `gage mcp` keep) rather than looked up in the
    journal index one bundle at a time: a first load of 10,000 then posts its newest
    screenful after one query. A bundle the index does not hold, or that a journal
    line named since the index's stamp, is looked up in the journal as before (a first
    arrival never changes once written, so the two agree). None when the index has no
    current stamp (never written, or the journal is not the one it saw), or holds under
    half of the tab: the caller asks the journal for all of them."""
    from gage.home.cache import rowindex

    index = rowindex.RowIndex(home)
    try:
        stamp = index.stamp()
        named = rowindex.named_since(home, stamp) if stamp is not None else None
        kept = index.arrivals(state) if named is not None else {}
    finally:
        index.close()
    if named is None or len(kept) * 2 < len(present):
        return None
    out = {i: t for i, t in kept.items() if t is not None and i in present and i not in named}
    rest = [i for i in present if i not in kept or i in named]
    if rest:
        out.update(facts.arrival_order(rest))
    return out


def _ordered(stored: list[Stored], first_received: Mapping[str, str]) -> list[Stored]:
    """Newest arrival first, from the journal; a bundle it never saw arrive (dropped in by
    hand) by the time its manifest claims, which only then is read."""
    epoch = Row("", "", None).order[0]
    keys: dict[str, tuple[object, str]] = {}
    for st in stored:
        when = parse_time(first_received.get(st.id))
        if when is None:
            when = cheap_row(st, None).arrived
        keys[st.id] = (when or epoch, st.id)
    return sorted(stored, key=lambda st: keys[st.id], reverse=True)


def _verdicts(
    req: SyncRequest,
    present: dict[str, Stored],
    first: list[str],
    need: list[str],
    reader: InboxReader,
    post: Callable[[Message], object],
    cancelled: Callable[[], bool],
) -> None:
    """Compute and post the verdicts of `first`, then `need`, until done or interrupted."""
    todo = [i for i in dict.fromkeys(first + need) if i in present]
    urgent = {i for i in first if i in present}
    left = set(todo)
    fetched: set[str] = set()
    batch: dict[str, Verdict | None] = {}
    sent = saved = time.monotonic()
    pos = 0
    while left:
        if cancelled():
            raise Cancelled
        if not urgent and req.interrupt.is_set():
            break
        bid = next((i for i in req.wanted.get() if i in left), None) if not urgent else None
        if bid is None:
            while todo[pos] not in left:
                pos += 1
            bid = todo[pos]
        if bid not in fetched:  # the journal's facts for the next ids, in one query (a no-op when prefetched)
            ids = [bid, *(i for i in todo[pos : pos + FACTS_BATCH] if i in left)]
            reader.facts.prefetch(ids)
            fetched.update(ids)
        left.discard(bid)
        urgent.discard(bid)
        batch[bid] = verdict_of(present[bid], reader)
        now = time.monotonic()
        if now - sent >= BATCH_SECONDS:
            post(VerdictsReady(req.state, req.run, batch))
            batch, sent = {}, now
        if now - saved >= SAVE_SECONDS:
            reader.cache.save()  # a fill cut short (the app closed) keeps most of what it learned
            saved = now
    if batch:
        post(VerdictsReady(req.state, req.run, batch))
