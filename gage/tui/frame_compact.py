"""The frame for a short terminal (80x24): compact enough that the first payload lines show.

The bundle view's frame took 19 of 24 rows, so an opened bundle showed no payload without
scrolling. Below COMPACT_BELOW rows the frame leaves out lines that say nothing is wrong,
puts two quiet lines on one, and cuts quiet values to one line; nothing that warns is
left out or cut, and the subject and the authority (what the sender may ask) are always
whole. The full frame is the same fields (gage.trust.frame.fields) at any taller size.
"""

from __future__ import annotations

from gage.trust.frame import Field

COMPACT_BELOW = 34  # terminal rows under which the frame is drawn compactly (compact_fields)
CUT_SEVERITIES = ("normal", "good")  # values cut to one line when compact; warnings never are
NEVER_CUT = ("authority", "subject")  # what the sender may ask, and its words: always whole
# Lines that say nothing is wrong, left out when compact: no problem, no chain, and the signature
# scheme (a fact, never a warning: spec/frame.md; the full frame shows it at any taller size).
QUIET = {("problems", "none"), ("chain", "none"), ("signature", "hybrid:"), ("signature", "classical-only:")}
MERGED = {"kind": "created", "seen": "addressed"}  # quiet lines that share one when compact


def compact_fields(frame_fields: list[Field]) -> list[Field]:
    """The frame for a short terminal: nothing that warns is dropped or cut.

    Lines that say nothing is wrong ("problems: none", "chain: none") go; two quiet lines
    share one (kind and created, seen and addressed); quiet values are cut to one line
    (`_field(cut=True)`, CUT_SEVERITIES). A warning or a problem is always shown whole.
    """
    out: list[Field] = []
    by_label = {f.label: f for f in frame_fields}
    for f in frame_fields:
        if f.severity == "normal" and (f.label, f.value.split(" ")[0]) in QUIET:
            continue
        partner = MERGED.get(f.label)
        if partner is not None:
            other = by_label.get(partner)
            if other is not None and f.severity == other.severity == "normal":
                out.append(Field(f.label, f"{f.value}  ·  {other.label}: {other.value}", "normal"))
                continue
        if f.label in MERGED.values():
            first = next(k for k, v in MERGED.items() if v == f.label)
            mate = by_label.get(first)
            if mate is not None and f.severity == mate.severity == "normal":
                continue  # shown on its partner's line
        out.append(f)
    return out
