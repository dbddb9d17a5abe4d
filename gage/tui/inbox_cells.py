"""What an inbox row looks like: its cells and the detail line under the table.

A row is drawn from its verdict once it has one. Before that (the verdict is being
computed in the background, gage.tui.inbox_sync) it is drawn from what the manifest
claims, dimmed and marked "checking": the sender as a quoted claim, never as a name
gage vouches for. Every untrusted value is made visible (gage.tui.safe) and put into a
`Text` or `Content` literally, never parsed as markup.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rich.text import Text
from textual.content import Content

from gage.format.keys import short_fingerprint
from gage.format.sanitize import clip, quoted
from gage.trust.verdict import Verdict
from gage.tui import safe, via
from gage.tui.rows import Row

VERDICT_STYLE = {"verified": "bold green", "unverified": "bold yellow", "invalid": "bold red"}
VERDICT_MARK = {"verified": "✔ verified", "unverified": "? unverified", "invalid": "✘ invalid"}
SENDER_STYLE = {"confirmed": "green", "candidate": "yellow", "unknown": "yellow"}
BAD_STYLE = "bold red"  # a compromised key, or a key a bad signature only names
INVALID_SENDER_STYLE = "red"  # a signer whose bundle is invalid (tampered payload): not the confirmed green
MINE_MARK, MINE_STYLE = "✎ mine", "bold"
CHECKING_MARK, CHECKING_STYLE = "… checking", "dim"
CELL_KEYS = ("verdict", "sender", "via", "kind", "age", "subject")
HOW_NOTE = {
    "unattended": "accepted UNATTENDED: by the watcher's budgeted rule, no person reviewed it",
    "human-unverified": "accepted by a person, with the sender unverified",
}


def age_text(when: datetime | None, now: datetime) -> str:
    """A short age: 40s, 5m, 3h, 2d, 6w. A time in the future (a skewed clock) shows as "now"."""
    if when is None:
        return "?"
    secs = int((now - when).total_seconds())
    if secs < 60:
        return f"{max(secs, 0)}s" if secs >= 0 else "now"
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return "now"


AGE_UNITS = (604800, 86400, 3600, 60, 1)  # the units age_text shows, largest first


def next_change(when: datetime | None, now: datetime) -> timedelta | None:
    """How long until `age_text(when, now)` reads differently: the next whole unit of the age
    shown (the next second under a minute, the next minute under an hour, ...). The inbox
    redraws ages then, not on a fixed period: every 30 s, a "5s" stood for 30 seconds."""
    if when is None:
        return None
    age = now - when
    if age < timedelta(0):
        return -age  # "now" until it arrives by this clock
    secs = int(age.total_seconds())
    unit = next(u for u in AGE_UNITS if secs >= u or u == 1)
    return timedelta(seconds=unit) - age % timedelta(seconds=unit)


class OrderedText(Text):
    """The Age cell, carrying its row's place in the arrival order, so a bundle that
    arrives is put where it belongs with `DataTable.sort` (the table has no insert)."""

    def __init__(self, text: str, order: tuple[datetime, str]) -> None:
        super().__init__(text)
        self.order = order


def sender_style(v: Verdict) -> str:
    """The sender cell's colour, from the verdict's sender only (never a contacts lookup).

    A key retired as superseded still counts as its contact's (green, shown as their
    previous key); one retired as compromised counts for nothing and is drawn in red.
    """
    s = v.sender
    if s.is_me:
        return ""
    if v.verdict == "invalid" and s.signature_ok:
        return INVALID_SENDER_STYLE  # a good signature over a broken bundle: never the confirmed green
    if not s.signature_ok:
        return BAD_STYLE if s.key is not None else ""
    if s.retired is not None:
        return SENDER_STYLE["confirmed"] if s.name is not None else BAD_STYLE
    return SENDER_STYLE.get(s.status, "")


def _mark(v: Verdict) -> Text:
    if v.state == "accepted" and v.accepted_how == "unattended":
        # Shown as unattended wherever the bundle is shown: the verdict's mark and colour, then the word.
        return Text(VERDICT_MARK[v.verdict][:2] + "unattended", style=VERDICT_STYLE[v.verdict] + " reverse")
    if v.state == "outbox" and v.sender.is_me and v.verdict != "invalid":
        # Signed by this home's own key: "unverified" (no contact is me) would only mislead here.
        return Text(MINE_MARK, style=MINE_STYLE)
    return Text(VERDICT_MARK[v.verdict], style=VERDICT_STYLE[v.verdict])


def _subject(subject: str | None) -> Text:
    return Text(safe.one_line(subject if subject is not None else "(no subject)", limit=120), overflow="ellipsis")


def short_sender(v: Verdict) -> str:
    """The sender column's words: a name where the verdict has one, else the key's fingerprint
    first (a narrow column still shows it), then what it is; the detail line has the full label."""
    s = v.sender
    if s.name is not None or s.key is None or s.is_me or not s.signature_ok or s.retired is not None:
        return s.describe()
    return f"{short_fingerprint(s.key)} {s.status}"


def cells(row: Row, *, subject: bool = True) -> dict[str, Text]:
    """Every cell but the age (which `age_cell` draws, as time passes), and but the
    subject if `subject` is false (the caller already shows the same words)."""
    v = row.verdict
    if v is None:
        claim = "?" if row.claimed_name is None else "claims " + quoted(clip(row.claimed_name, 18))
        return {
            "verdict": Text(CHECKING_MARK, style=CHECKING_STYLE),
            "sender": Text(safe.one_line(claim, limit=40), style=CHECKING_STYLE),
            "via": Text(""),
            "kind": Text(safe.one_line(row.kind or "?", limit=20), style=CHECKING_STYLE),
            "subject": _subject(row.subject if row.kind is not None else None),
        }
    m = v.manifest
    out = {
        "verdict": _mark(v),
        "sender": Text(safe.one_line(short_sender(v), limit=40), style=sender_style(v), overflow="ellipsis"),
        "via": via.marker(v),
        "kind": Text(m.kind if m else "?", overflow="ellipsis"),
    }
    if subject:
        out["subject"] = _subject(m.subject if m else None)
    return out


def age_cell(row: Row, now: datetime) -> OrderedText:
    return OrderedText(age_text(row.arrived, now), row.order)


def row_cells(row: Row, now: datetime) -> list[Text]:
    c = cells(row)
    c["age"] = age_cell(row, now)
    return [c[k] for k in CELL_KEYS]


def detail(row: Row) -> Content:
    """Under the table: the highlighted bundle's id and full subject, then who sent it: always
    two lines (gage.tui.app.tcss cuts each to the width). The name an unconfirmed sender
    claims goes on the line under it, with the carrier's claims (`claims`).

    A fixed height, so moving the cursor never resizes the table: a stranger's claim once
    wrapped these two lines into three and pushed the highlighted row below the table's
    bottom.
    """
    v = row.verdict
    if v is None:
        return Content.assemble(
            Content.styled(f"{row.id[:12]}  ", "bold"),
            Content(safe.one_line(row.subject if row.subject is not None else "(no subject)")),
            "\n",
            Content.styled("checking…, nothing verified yet", "yellow"),
        )
    m = v.manifest
    how = HOW_NOTE.get(v.accepted_how or "", "") if v.state == "accepted" else ""
    return Content.assemble(
        Content.styled(f"{row.id[:12]}  ", "bold"),
        Content.styled(f"{how}  ", "bold reverse") if how else "",
        Content(safe.one_line(m.subject if m and m.subject is not None else "(no subject)")),
        "\nfrom ",
        Content.styled(safe.one_line(v.sender.label(), limit=60), sender_style(v)),
    )


def claims(row: Row) -> Content:
    """The line under the detail: the name an unconfirmed sender claims, then what the carrier
    says (gage.tui.via.detail_line); empty when nothing is claimed."""
    v = row.verdict
    if v is None:
        return Content.styled("" if row.claimed_name is None else f"claims to be {quoted(clip(row.claimed_name, 60))}", "yellow")
    claim = Content("")
    if v.sender.name is None and not v.sender.is_me and v.sender.claimed_name is not None:
        claim = Content.styled(f"claims to be \"{safe.one_line(v.sender.claimed_name, limit=60)}\" (unchecked)", "yellow")
    carrier = via.detail_line(v)
    if claim.plain and carrier.plain:
        return Content.assemble(carrier, "  ", claim)
    return carrier if carrier.plain else claim
