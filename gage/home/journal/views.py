"""The journal facts answered from the index, one bundle at a time: the mappings a verdict
reads (`received`, `sent`, ...) and the decisions, looked up per id and remembered.

Typed against `BundleLookup`, what gage.home.cache.journalindex.JournalIndex answers, so the
index can hand these out without the two modules importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from gage.home.journal.facts import EMPTY, BundleFacts, JournalFacts, Seen

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any, Protocol

    class BundleLookup(Protocol):
        def bundle(self, bundle_id: str, *, sync: bool = True) -> BundleFacts: ...

        def bundles(self, ids: Iterable[str], *, sync: bool = True) -> dict[str, BundleFacts]: ...

        def all_bundles(self, *, sync: bool = True) -> Iterator[tuple[str, BundleFacts]]: ...

        def arrival_order(self, ids: Iterable[str], *, sync: bool = True) -> dict[str, str]: ...


class _Memo:
    """The facts looked up so far, shared by an IndexedFacts and its views. The views hold this,
    not the IndexedFacts, so there is no reference cycle: a reading's facts go as soon as it does,
    not at the interpreter's next full collection (a fetch keeping its rows batch after batch held
    every batch's facts until then)."""

    __slots__ = ("index", "memo", "complete")

    def __init__(self, index: BundleLookup) -> None:
        self.index = index
        self.memo: dict[str, BundleFacts] = {}
        self.complete = False

    def of_bundle(self, bundle_id: str) -> BundleFacts:
        facts = self.memo.get(bundle_id)
        if facts is None:
            if self.complete:
                return EMPTY
            facts = self.memo[bundle_id] = self.index.bundle(bundle_id, sync=False)
        return facts

    def all(self) -> dict[str, BundleFacts]:
        if not self.complete:
            self.memo = dict(self.index.all_bundles(sync=False))
            self.complete = True
        return self.memo


class _View(Mapping[str, "Any"]):  # quoted: Any is not imported at run time
    """One fact of an index-backed JournalFacts as a mapping (`.get(bundle_id)`, `in`): looked
    up per id, absent where the fact is empty (never received, never sent, ...)."""

    def __init__(self, facts: _Memo, field: str) -> None:
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


class IndexedFacts(JournalFacts):
    """JournalFacts answered from the journal index, each id looked up once and remembered."""

    def __init__(self, index: BundleLookup) -> None:
        self._index = index
        self._m = m = _Memo(index)
        self.received = _View(m, "received")
        self.first_received = _View(m, "first_received")
        self.sent = _View(m, "sent")
        self.accepted_how = _View(m, "accepted_how")
        self.transport = _View(m, "transport")

    def prefetch(self, bundle_ids: Iterable[str]) -> None:
        memo = self._m.memo
        wanted = [b for b in bundle_ids if b not in memo]
        if wanted and not self._m.complete:
            found = self._index.bundles(wanted, sync=False)
            for b in wanted:
                memo[b] = found.get(b, EMPTY)

    def arrival_order(self, bundle_ids: Iterable[str]) -> dict[str, str]:
        """`JournalFacts.arrival_order`, from one light query where the facts are not held yet."""
        ids = list(bundle_ids)
        if self._m.complete or all(b in self._m.memo for b in ids):
            return super().arrival_order(ids)
        return self._index.arrival_order(ids, sync=False)

    def seen(self, bundle_id: str, parent: str | None) -> Seen:
        """`JournalFacts.seen` from two lookups (the bundle's row and its parent's), not one per fact."""
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
        return self._m.of_bundle(bundle_id)

    def all(self) -> dict[str, BundleFacts]:
        """Every bundle the journal names (a read of the whole index: for iteration, not verdicts)."""
        return self._m.all()


class Decisions(Mapping[str, str]):
    """Each decided bundle's decision (`accepted` or `rejected`), looked up one id at a time."""

    def __init__(self, index: BundleLookup) -> None:
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
