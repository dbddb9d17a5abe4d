"""Where a bundle came from, as the interface shows it: a carrier's claim, never a fact.

An A2A peer can say anything about who sent a bundle (an agent name, a card, a key).
The verdict keeps that as `Verdict.transport` and lists where it disagrees with the
signature; this module turns it into the inbox's short marker, the inbox's detail line
and the bundle view's summary. Every claimed value is made visible, clipped before it
is quoted (so its closing quote survives) and put into `Content` literally, and every
line says "claim" or "unchecked", so a claim can never read like a finding of gage.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content

from gage.format.sanitize import clip, quoted
from gage.trust.verdict import TransportClaim, Verdict
from gage.tui import safe

CLAIM_LIMIT = 40  # a claimed agent name: enough to recognise, too short to push the rest away
MARK_STYLE = "bold cyan"
DISAGREE_STYLE = "bold red reverse"


def carrier_name(t: TransportClaim) -> str:
    """"A2A", or another carrier's own (untrusted) name, made visible and short."""
    return "A2A" if t.carrier == "a2a" else safe.one_line(t.carrier, limit=8)


def claimed(value: str, limit: int = CLAIM_LIMIT) -> str:
    """A claimed value in quotes it cannot close, clipped first so the quotes are always both there."""
    return quoted(clip(value, limit))


def marker(v: Verdict) -> Text:
    """The inbox's Via cell: the carrier, with "!" in red when it disagrees with the signature."""
    t = v.transport
    if t is None:
        return Text("")
    if t.disagreements:
        return Text(carrier_name(t)[:3] + "!", style=DISAGREE_STYLE)
    return Text(carrier_name(t)[:4], style=MARK_STYLE)


def detail_line(v: Verdict) -> Content:
    """The inbox's second detail line: the carrier and who it claims sent it, then any disagreement."""
    t = v.transport
    if t is None:
        return Content("")
    parts: list[Content | str] = [Content.styled(f"via {carrier_name(t)}", MARK_STYLE)]
    name = t.fields.get("from_name")
    if name:
        parts.append(Content.assemble(" from ", Content(claimed(name)), " (a claim, unchecked)"))
    else:
        parts.append(" (what the transport says, not checked)")
    if t.disagreements:
        parts.append("  ")
        parts.append(Content.styled(" DISAGREES with the signature ", DISAGREE_STYLE))
    return Content.assemble(*parts)


def badge(v: Verdict) -> Content:
    """Right after the verdict in the bundle view's summary bar (always in view): the transport disagrees."""
    t = v.transport
    if t is None or not t.disagreements:
        return Content("")
    return Content.assemble(" ", Content.styled(" TRANSPORT DISAGREES ", DISAGREE_STYLE))


def summary_part(v: Verdict) -> Content:
    """The end of the summary bar: which carrier brought it, as a claim."""
    t = v.transport
    return Content("") if t is None else Content(f" · via {carrier_name(t)} (a claim)")
