"""What the inbox table shows of a tab's rows: the filter, the marks, and the columns' widths.

The rows of a tab (gage.tui.inbox_sync, soon one core read model) are what is in the home;
the lens is how the person looks at them, and it never changes a row. Everything here is
keyed by bundle id, so the row source can be swapped under it.

Filter: `/` and typing narrows the rows to those whose subject, sender (as the verdict
names it, or the claimed name while checking), kind or id prefix contains the words;
`v` steps through verdict filters (only verified, only unverified, only invalid, only
from strangers: senders that are not confirmed contacts). Marks: a set of ids, for one
confirmed act on several bundles. Order: newest arrival first, or by a column (`S`, or a
click on its header; again, the other way), ties newest first; the header of the column
sorted by carries an arrow.

Columns: at 80 columns a 29-character sender and an empty Via column once left the
subject 7 characters; at 160 the kind and sender were cut (`review-…`) beside a subject
with 50 empty columns. `layout` shares the width by content: each column needs what its
longest cell (or its header) needs, up to a cap; every column first gets the least it
may have (its narrow width, the subject 24), then the room left is shared equally among
the columns still cut, so short columns are whole and the long ones share the rest. A
column that would be empty (Via when nothing came over a carrier, the mark column when
nothing is marked) takes no space; the widths add up to the table's width, so nothing
scrolls sideways.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gage.tui.rows import Row

# Column keys, in display order.
ORDER = ("mark", "verdict", "sender", "via", "kind", "age", "subject")
LABELS = {"mark": "", "verdict": "Verdict", "sender": "Sender", "via": "Via", "kind": "Kind", "age": "Age", "subject": "Subject"}
PADDING = 1  # DataTable's cell padding, each side of every column
# The least a column gets (while the content is unknown, what it gets), and the most.
WIDTHS = {"mark": (1, 1), "verdict": (12, 12), "sender": (13, 40), "via": (4, 4), "kind": (8, 24), "age": (3, 4), "subject": (24, 120)}
GROWS = ("sender", "kind", "age", "subject")  # the columns whose width follows their content

VERDICT_FILTERS: tuple[str | None, ...] = (None, "verified", "unverified", "invalid", "strangers")
VERDICT_FILTER_LABEL = {
    None: "all verdicts",
    "verified": "only verified",
    "unverified": "only unverified",
    "invalid": "only invalid",
    "strangers": "only from strangers (not a confirmed contact)",
}


def layout(
    width: int, *, via: bool, marks: bool, wants: dict[str, int] | None = None, labels: dict[str, str] | None = None
) -> dict[str, int]:
    """Column widths (without padding) that fill `width` cells exactly, shared by content.

    `wants`: the widest cell of each column so far (gage.tui.inbox_view measures them as rows
    come). Each column needs that (at least its header, at most its cap); each gets its least
    first, then the columns still short of their need share the rest equally, a cell at a
    time, so the smaller needs are met whole. The subject takes whatever is left after every
    need is met (nothing is cut then), and is cut first below its least only when the table is
    too narrow for the other columns' least.
    """
    keys = [k for k in ORDER if (k != "via" or via) and (k != "mark" or marks)]
    wants = wants or {}
    labels = labels or LABELS
    room = width - 2 * PADDING * len(keys)
    need, out = {}, {}
    for k in keys:
        least, most = WIDTHS[k]
        want = wants.get(k) if k in GROWS else most
        header = len(labels.get(k, LABELS[k]))
        need[k] = max(header, least if want is None else min(most, want))
        out[k] = min(max(least, header), need[k])
    spare = room - sum(out.values())
    while spare > 0:
        short = [k for k in keys if out[k] < need[k]]
        if not short:
            break
        share = max(spare // len(short), 1)
        for k in short:
            give = min(share, need[k] - out[k], spare)
            out[k] += give
            spare -= give
    out["subject"] = max(out["subject"] + spare, 4)  # the rest (or, too narrow, what is left)
    return out


SORTS = ("age", "verdict", "sender", "kind", "subject")  # what `S` steps through, in this order
SORTABLE = (*SORTS, "via")  # what a click on a header sorts by
SEVERITY = {"invalid": 0, "unverified": 1, "verified": 2}  # the worst first; a row still checking last


def sort_key(column: str, row: Row) -> tuple[object, ...]:
    """A row's place when sorted by `column` (ascending; ties keep the newest first)."""
    v = row.verdict
    if column == "verdict":
        return (SEVERITY.get(v.verdict, 3) if v is not None else 3,)
    if column == "sender":
        return (sender_text(row).lower(),)
    if column == "kind":
        return (((v.manifest.kind if v is not None and v.manifest else row.kind) or "").lower(),)
    if column == "subject":
        return (((v.manifest.subject if v is not None and v.manifest else row.subject) or "").lower(),)
    if column == "via":
        return ("" if v is None or v.transport is None else "x",)
    return ()


def sender_text(row: Row) -> str:
    """What the filter matches for the sender: the verdict's name for it, else the claim."""
    v = row.verdict
    if v is not None:
        return v.sender.describe()
    return row.claimed_name or ""


@dataclass
class Lens:
    """The person's view of one tab: filter words, a verdict filter, marked ids."""

    text: str = ""
    verdict: str | None = None
    marked: set[str] = field(default_factory=set)
    sort: str = "age"  # the column the rows are sorted by; "age": the newest arrival first
    reverse: bool = False

    @property
    def sorted_otherwise(self) -> bool:
        """Sorted other than by arrival, newest first (what the header then marks)."""
        return self.sort != "age" or self.reverse

    def ordered(self, rows: list[Row]) -> list[Row]:
        """The rows in the order the table shows them."""
        newest = sorted(rows, key=lambda r: r.order, reverse=True)
        if self.sort == "age":
            return newest[::-1] if self.reverse else newest
        return sorted(newest, key=lambda r: sort_key(self.sort, r), reverse=self.reverse)  # stable: ties stay newest first

    def sort_by(self, column: str) -> None:
        """Sort by `column`; by the same column again, the other way round."""
        if column == self.sort:
            self.reverse = not self.reverse
        else:
            self.sort, self.reverse = column, False

    def sort_next(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)] if self.sort in SORTS else SORTS[0]
        self.reverse = False

    def label(self, column: str) -> str:
        """A column's header: an arrow on the column sorted by, when not the usual order."""
        if column == self.sort and self.sorted_otherwise:
            return f"{LABELS[column]} {'▼' if self.reverse else '▲'}"
        return LABELS[column]

    @property
    def active(self) -> bool:
        return bool(self.text.strip()) or self.verdict is not None

    def shows(self, row: Row) -> bool:
        """Whether the row passes the filter. A row still being checked passes a verdict filter
        only once its verdict says so (it is not hidden for long: verdicts fill in first in view)."""
        if self.verdict is not None:
            v = row.verdict
            if v is None:
                return False
            if self.verdict == "strangers":
                if v.sender.is_me or v.sender.status == "confirmed":
                    return False
            elif v.verdict != self.verdict:
                return False
        words = self.text.lower().split()
        if not words:
            return True
        kind = row.verdict.manifest.kind if row.verdict and row.verdict.manifest else row.kind
        subject = row.verdict.manifest.subject if row.verdict and row.verdict.manifest else row.subject
        hay = " ".join((subject or "", sender_text(row), kind or "")).lower()
        return all(w in hay or row.id.startswith(w) for w in words)

    def next_verdict(self) -> str | None:
        i = VERDICT_FILTERS.index(self.verdict)
        self.verdict = VERDICT_FILTERS[(i + 1) % len(VERDICT_FILTERS)]
        return self.verdict

    def describe(self, shown: int, total: int) -> str:
        """The filter bar's words (gage's own; the typed words are shown in the input itself)."""
        parts = [VERDICT_FILTER_LABEL[self.verdict]]
        if self.text.strip():
            parts.append("matching the words typed")
        marks = f" · {len(self.marked)} marked" if self.marked else ""
        # Two lines at most (the bar wraps, never cuts): at 80 columns the keys stay in view.
        return f"{shown} of {total} shown: {', '.join(parts)}{marks} · Esc clears · v: verdict filter"
