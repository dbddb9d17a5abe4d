"""What the journal says about each bundle: the facts the gate and the verdict read, folded from entries.

One fold (`Fold`) defines every per-bundle fact, in journal order, and is used three ways: by
the journal index (gage/home/journal/index.py) when it rebuilds or catches up, by `JournalFacts`
built from a list of entries (tests, fuzzing), and so by every reader through the index. One
definition keeps "what the index says" and "what a scan of the journal says" the same thing,
which tests/test_journal_index.py checks against a brute-force scan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gage.home.journal.index import JournalIndex
    from gage.home.layout import Home
    from gage.trust.verdict import Seen

ARRIVALS = ("imported", "received")
# Events that say something about the bundle they name; other entries make no bundle row.
BUNDLE_EVENTS = frozenset(("accepted", "rejected", "reconciled", "sent", *ARRIVALS))


@dataclass(frozen=True)
class BundleFacts:
    """What the journal says about one bundle id (all empty for an id it never names)."""

    # The decision, final: the first `accepted` or `rejected`, or a `reconciled` entry that
    # recorded a rejection found on disk (gage.inbox.store.decisions).
    decision: str | None = None
    # Where the journal last put it: the last of accepted, rejected, or a `reconciled` state.
    location: str | None = None
    received: int = 0  # arrivals (imported or received), repeats included
    first_received: str | None = None  # the `time` of the first arrival
    transport: dict[str, Any] | None = None  # the latest arrival's transport claims
    accepted_how: str | None = None  # the last `accepted` entry's `how`
    sent: dict[str, Any] | None = None  # `parent` and `to` of this home's first `sent` entry for it
    arrival: dict[str, Any] | None = None  # `parent` and `sender` of its first arrival whose signature held


EMPTY = BundleFacts()
# A bundle row while folding: the fields of BundleFacts, in order, mutable.
Row = list[Any]


def new_row() -> Row:
    return [None, None, 0, None, None, None, None, None]


def row_facts(row: Row) -> BundleFacts:
    return BundleFacts(*row)


class Fold:
    """Per-bundle facts, per-thread unattended counts and recorded torn lines, folded from
    entries in journal order, on top of whatever rows it starts with (an index catching up)."""

    def __init__(self, rows: dict[str, Row] | None = None, threads: dict[str, int] | None = None) -> None:
        self.rows: dict[str, Row] = rows if rows is not None else {}
        self.threads: dict[str, int] = threads if threads is not None else {}
        self.torn: set[str] = set()
        self.new_sent = 0  # ids given their first `sent` entry by this fold

    def add(self, e: dict[str, Any]) -> None:
        ev = e.get("event")
        if not isinstance(ev, str):
            return
        if ev == "repaired":
            digest = e.get("torn_sha256")
            if isinstance(digest, str):
                self.torn.add(digest)
            return
        if ev == "accepted" and e.get("how") == "unattended":
            thread = e.get("thread")
            if isinstance(thread, str):
                self.threads[thread] = self.threads.get(thread, 0) + 1
        b = e.get("bundle")
        if ev not in BUNDLE_EVENTS or not isinstance(b, str):
            return
        row = self.rows.get(b)
        if row is None:
            row = self.rows[b] = new_row()
        if ev == "accepted" or ev == "rejected":
            if row[0] is None:
                row[0] = ev
            row[1] = ev
            if ev == "accepted":
                row[5] = str(e.get("how") or "human")
        elif ev == "reconciled":
            state = e.get("state")
            if row[0] is None and e.get("found") == "rejected" and state == "rejected" and e.get("action") == "recorded":
                row[0] = "rejected"
            if isinstance(state, str):
                row[1] = state
        elif ev == "sent":
            if row[6] is None:
                row[6] = {"parent": e.get("parent"), "to": e.get("to")}
                self.new_sent += 1
        else:  # an arrival
            row[2] += 1
            if row[3] is None:
                row[3] = str(e.get("time"))
            t = e.get("transport")
            if isinstance(t, dict):
                row[4] = t
            if row[7] is None and e.get("ok") is True and not e.get("again"):
                row[7] = {"parent": e.get("parent"), "sender": e.get("sender")}

    def add_all(self, entries: Iterable[dict[str, Any]]) -> Fold:
        for e in entries:
            self.add(e)
        return self


class _View(Mapping[str, Any]):
    """One fact of an index-backed JournalFacts as a mapping (`.get(bundle_id)`, `in`): looked
    up per id, absent where the fact is empty (never received, never sent, ...)."""

    def __init__(self, facts: _IndexedFacts, field: str) -> None:
        self._facts, self._field = facts, field

    def __getitem__(self, bundle_id: str) -> Any:
        value = getattr(self._facts.of_bundle(bundle_id), self._field)
        if value is None or value == 0:
            raise KeyError(bundle_id)
        return value

    def get(self, bundle_id: str, default: Any = None) -> Any:
        # Not Mapping.get: that raises and catches KeyError for every absent fact (most bundles).
        value = getattr(self._facts.of_bundle(bundle_id), self._field)
        return default if value is None or value == 0 else value

    def __contains__(self, bundle_id: object) -> bool:
        return isinstance(bundle_id, str) and getattr(self._facts.of_bundle(bundle_id), self._field) not in (None, 0)

    def __iter__(self) -> Iterator[str]:
        return (b for b, f in self._facts.all().items() if getattr(f, self._field) not in (None, 0))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class JournalFacts:
    """What the journal says about bundles, for verdicts (spec/verdict.md, `seen`).

    `JournalFacts(entries)` folds a list of entries in memory, into plain dicts. `JournalFacts.of(home)`
    reads the home's journal index instead, brought up to date first, one bundle at a time: the
    verdict on one bundle reads its own facts and its parent's, never the whole history. Both
    answer through the same mappings; a listing that computes many verdicts can `prefetch` ids.
    """

    received: Mapping[str, int]  # arrivals, repeats included
    first_received: Mapping[str, str]
    sent: Collection[str]  # ids this home sent
    accepted_how: Mapping[str, str]
    transport: Mapping[str, dict[str, Any]]  # the latest arrival's transport claims

    def __init__(self, entries: Iterable[dict[str, Any]] = ()) -> None:
        rows = Fold().add_all(entries).rows
        self.received = {b: r[2] for b, r in rows.items() if r[2]}
        self.first_received = {b: r[3] for b, r in rows.items() if r[3] is not None}
        self.sent = {b for b, r in rows.items() if r[6] is not None}
        self.accepted_how = {b: r[5] for b, r in rows.items() if r[5] is not None}
        self.transport = {b: r[4] for b, r in rows.items() if r[4] is not None}

    @classmethod
    def of(cls, home: Home) -> JournalFacts:
        index = home.journal.index
        index.sync()
        return _IndexedFacts(index)

    def prefetch(self, bundle_ids: Iterable[str]) -> None:
        """Look these ids up at once (a listing's bundles and their parents); a no-op in memory."""

    def seen(self, bundle_id: str, parent: str | None) -> Seen:
        from gage.trust.verdict import Seen

        pstatus = None
        if parent:
            pstatus = "sent-by-me" if parent in self.sent else "received" if parent in self.received else "unknown"
        return Seen(
            times_received=self.received.get(bundle_id, 0),
            first_received=self.first_received.get(bundle_id),
            sent_by_me=bundle_id in self.sent,
            parent=parent,
            parent_status=pstatus,
        )


class _IndexedFacts(JournalFacts):
    """JournalFacts answered from the journal index, each id looked up once and remembered."""

    def __init__(self, index: JournalIndex) -> None:
        self._index = index
        self._memo: dict[str, BundleFacts] = {}
        self._complete = False
        self.received = _View(self, "received")
        self.first_received = _View(self, "first_received")
        self.sent = _View(self, "sent")
        self.accepted_how = _View(self, "accepted_how")
        self.transport = _View(self, "transport")

    def prefetch(self, bundle_ids: Iterable[str]) -> None:
        wanted = [b for b in bundle_ids if b not in self._memo]
        if wanted and not self._complete:
            found = self._index.bundles(wanted, sync=False)
            for b in wanted:
                self._memo[b] = found.get(b, EMPTY)

    def seen(self, bundle_id: str, parent: str | None) -> Seen:
        """`JournalFacts.seen` from two lookups (the bundle's row and its parent's), not one per fact."""
        from gage.trust.verdict import Seen

        own = self.of_bundle(bundle_id)
        pstatus = None
        if parent:
            p = self.of_bundle(parent)
            pstatus = "sent-by-me" if p.sent is not None else "received" if p.received else "unknown"
        return Seen(
            times_received=own.received,
            first_received=own.first_received,
            sent_by_me=own.sent is not None,
            parent=parent,
            parent_status=pstatus,
        )

    def of_bundle(self, bundle_id: str) -> BundleFacts:
        facts = self._memo.get(bundle_id)
        if facts is None:
            if self._complete:
                return EMPTY
            facts = self._memo[bundle_id] = self._index.bundle(bundle_id, sync=False)
        return facts

    def all(self) -> dict[str, BundleFacts]:
        """Every bundle the journal names (a read of the whole index: for iteration, not verdicts)."""
        if not self._complete:
            self._memo = dict(self._index.all_bundles(sync=False))
            self._complete = True
        return self._memo


class Decisions(Mapping[str, str]):
    """Each decided bundle's decision (`accepted` or `rejected`), looked up one id at a time."""

    def __init__(self, index: JournalIndex) -> None:
        self._index = index

    def __getitem__(self, bundle_id: str) -> str:
        decision = self._index.bundle(bundle_id, sync=False).decision
        if decision is None:
            raise KeyError(bundle_id)
        return decision

    def __iter__(self) -> Iterator[str]:
        return (b for b, f in self._index.all_bundles(sync=False) if f.decision is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
