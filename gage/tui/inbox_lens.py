"""What the inbox table shows of a tab's rows: the filter, the marks, and the columns' widths.

The rows of a tab (gage.tui.inbox_sync, soon one core read model) are what is in the home;
the lens is how the person looks at them, and it never changes a row. Everything here is
keyed by bundle id, so the row source can be swapped under it.

Filter: `/` and typing narrows the rows to those whose subject, sender (as the verdict
names it, or the claimed name while checking), kind or id prefix contains the words;
`v` steps through verdict filters (only verified, only unverified, only invalid, only
from strangers: senders that are not confirmed contacts). Marks: a set of ids, for one
confirmed act on several bundles.

Columns: at 80 columns a 29-character sender and an empty Via column once left the
subject 7 characters. `layout` gives the verdict its full width always, the sender, kind
and age a short one, a column that would be empty (Via when nothing came over a carrier,
the mark column when nothing is marked) no space at all, and the subject the rest; the
widths add up to the table's width, so nothing scrolls sideways.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gage.tui.rows import Row

# Column keys, in display order.
ORDER = ("mark", "verdict", "sender", "via", "kind", "age", "subject")
LABELS = {"mark": "", "verdict": "Verdict", "sender": "Sender", "via": "Via", "kind": "Kind", "age": "Age", "subject": "Subject"}
PADDING = 1  # DataTable's cell padding, each side of every column
# (narrow, wide) widths; the subject takes what is left.
WIDTHS = {"mark": (1, 1), "verdict": (12, 12), "sender": (13, 28), "via": (4, 4), "kind": (8, 14), "age": (3, 4)}
SUBJECT_WANTS = 48  # past this, spare width goes to the other columns first

VERDICT_FILTERS: tuple[str | None, ...] = (None, "verified", "unverified", "invalid", "strangers")
VERDICT_FILTER_LABEL = {
    None: "all verdicts",
    "verified": "only verified",
    "unverified": "only unverified",
    "invalid": "only invalid",
    "strangers": "only from strangers (not a confirmed contact)",
}


def layout(width: int, *, via: bool, marks: bool) -> dict[str, int]:
    """Column widths (without padding) that fill `width` cells exactly, subject last."""
    keys = [k for k in ORDER if (k != "via" or via) and (k != "mark" or marks)]
    fixed = [k for k in keys if k != "subject"]
    spare = width - 2 * PADDING * len(keys) - sum(WIDTHS[k][0] for k in fixed)
    out = {k: WIDTHS[k][0] for k in fixed}
    for k in ("sender", "kind", "age"):
        if k in out and spare > SUBJECT_WANTS:
            grow = min(WIDTHS[k][1] - out[k], spare - SUBJECT_WANTS)
            out[k] += grow
            spare -= grow
    out["subject"] = max(spare, 4)
    return {k: out[k] for k in keys}


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
