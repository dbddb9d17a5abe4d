"""What the journal says about each bundle: the facts the gate and the verdict read, folded from entries.

One fold (`Fold`) defines every per-bundle fact, in journal order, and is used three ways: by
the journal index (gage/home/cache/journalindex.py) when it rebuilds or catches up, by `JournalFacts`
built from a list of entries (tests, fuzzing), and so by every reader through the index. One
definition keeps "what the index says" and "what a scan of the journal says" the same thing,
which tests/test_journal_index.py checks against a brute-force scan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from gage.format.record import Frozen, Record, set_field

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

ARRIVALS = ("imported", "received")
# Events that say something about the bundle they name; other entries make no bundle row.
BUNDLE_EVENTS = frozenset(("accepted", "rejected", "reconciled", "sent", *ARRIVALS))


class Seen(Record):
    __slots__ = (
        "times_received",
        "first_received",
        "sent_by_me",
        "parent",
        "parent_status",
    )
    times_received: int
    first_received: str | None
    sent_by_me: bool
    parent: str | None
    parent_status: str | None  # sent-by-me, received, unknown; None without a parent

    def __init__(
        self,
        times_received: int,
        first_received: str | None,
        sent_by_me: bool,
        parent: str | None,
        parent_status: str | None,
    ) -> None:
        self.times_received = times_received
        self.first_received = first_received
        self.sent_by_me = sent_by_me
        self.parent = parent
        self.parent_status = parent_status

    @property
    def summary(self) -> list[str]:
        out = []
        if self.sent_by_me:
            out.append("a bundle I sent myself")
        elif self.times_received <= 1:
            out.append("first time received")
        else:
            out.append(f"already received: this same bundle arrived {self.times_received} times")
        if self.parent is None:
            out.append("starts a new thread")
        elif self.parent_status == "sent-by-me":
            out.append(f"a reply to a bundle I sent ({self.parent[:12]})")
        elif self.parent_status == "received":
            out.append(f"a reply to a bundle I received, not one I sent ({self.parent[:12]})")
        else:
            out.append(f"a reply to a parent I have never seen ({self.parent[:12]})")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "times_received": self.times_received,
            "first_received": self.first_received,
            "first": self.times_received <= 1 and not self.sent_by_me,
            "sent_by_me": self.sent_by_me,
            "parent": self.parent,
            "parent_status": self.parent_status,
            "reply_to_sent": self.parent_status == "sent-by-me",
            "summary": self.summary,
        }


class BundleFacts(Frozen):
    """What the journal says about one bundle id (all empty for an id it never names)."""

    __slots__ = (
        "decision",
        "location",
        "received",
        "first_received",
        "transport",
        "accepted_how",
        "sent",
        "arrival",
    )
    # The decision, final: the first `accepted` or `rejected`, or a `reconciled` entry that
    # recorded a rejection found on disk (gage.home.listing.decisions).
    decision: str | None
    # Where the journal last put it: the last of accepted, rejected, or a `reconciled` state.
    location: str | None
    received: int  # arrivals (imported or received), repeats included
    first_received: str | None  # the `time` of the first arrival
    transport: dict[str, Any] | None  # the latest arrival's transport claims
    accepted_how: str | None  # the last `accepted` entry's `how`
    # `parent` and `to` of this home's first `sent` entry for it
    sent: dict[str, Any] | None
    # `parent` and `sender` of its first arrival whose signature held
    arrival: dict[str, Any] | None

    def __init__(
        self,
        decision: str | None = None,
        location: str | None = None,
        received: int = 0,
        first_received: str | None = None,
        transport: dict[str, Any] | None = None,
        accepted_how: str | None = None,
        sent: dict[str, Any] | None = None,
        arrival: dict[str, Any] | None = None,
    ) -> None:
        set_field(self, "decision", decision)
        set_field(self, "location", location)
        set_field(self, "received", received)
        set_field(self, "first_received", first_received)
        set_field(self, "transport", transport)
        set_field(self, "accepted_how", accepted_how)
        set_field(self, "sent", sent)
        set_field(self, "arrival", arrival)


EMPTY = BundleFacts()
# A bundle row while folding: the fields of BundleFacts, in order, mutable.
if TYPE_CHECKING:
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


class JournalFacts:
    """What the journal says about bundles, for verdicts (spec/verdict.md, `seen`).

    `JournalFacts(entries)` folds a list of entries in memory, into plain dicts. `home.journal.index.facts()`
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

    def prefetch(self, bundle_ids: Iterable[str]) -> None:
        """Look these ids up at once (a listing's bundles and their parents); a no-op in memory."""

    def arrival_order(self, bundle_ids: Iterable[str]) -> dict[str, str]:
        """The first arrival time of each of `bundle_ids` the journal saw arrive: what the
        interface orders its rows by before it has any row's facts."""
        return {b: t for b in bundle_ids if (t := self.first_received.get(b)) is not None}

    def seen(self, bundle_id: str, parent: str | None) -> Seen:
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
