"""What `gage import` of many folders says: refusals by cause, then one sum.

Importing 1,999 folders used to print a 400-character line per refusal, each saying "nothing was
imported" although a thousand were, and no total. Now, for more than one PATH, refusals are
counted by cause (the limit's setting, or else the error's stage), one line a cause with the
first refusal's reason and how to raise a limit once; each refused PATH only with `-v` (or in
`--json`'s `summary`); and the last line is `imported N, refused M (...), already there K`.
One PATH is reported as before: its own error is the whole story.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gage.format.errors import GageError
from gage.format.sanitize import json_text
from gage.home.settings import LimitError

# A single refusal's "nothing was imported" is about that bundle; in a sum it would mislead.
_NOTHING = re.compile(r";? ?nothing was imported\.?")
_NEED = re.compile(r"(\[limits\] \w+ = )(\d+)")
# Limits on how many bundles pending holds: each refused bundle needs the limit one higher.
_COUNTED = ("limits.pending_per_key", "limits.pending_unconfirmed")


def cause_of(exc: GageError) -> str:
    """`limits.pending_unconfirmed` for a limit, else the stage (`malformed`, `tampered`, `io`, ...)."""
    return exc.setting if isinstance(exc, LimitError) else exc.stage


@dataclass
class Refusals:
    """Refusals of one cause: how many, the first one's error, and every PATH."""

    cause: str
    first: GageError
    paths: list[str] = field(default_factory=list)

    def label(self) -> str:
        return f"over {self.cause}" if isinstance(self.first, LimitError) else self.cause

    def line(self) -> str:
        why = _NOTHING.sub(".", str(self.first)).strip()
        if self.cause in _COUNTED and len(self.paths) > 1:
            # The first refusal's advice takes one more bundle; taking every one takes this many more.
            more = len(self.paths) - 1
            why = _NEED.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + more}", why).replace("To take it,", "To take them all,")
        return f"gage: refused {len(self.paths)} ({self.label()}): first: {why}"

    def to_json(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "stage": self.first.stage,
            "count": len(self.paths),
            "message": self.first.message,
            "paths": [json_text(p) for p in self.paths],
        }


@dataclass
class Tally:
    imported: int = 0
    already: int = 0
    refusals: dict[str, Refusals] = field(default_factory=dict)

    def refuse(self, path: str, exc: GageError) -> None:
        cause = cause_of(exc)
        self.refusals.setdefault(cause, Refusals(cause, exc)).paths.append(path)

    @property
    def refused(self) -> int:
        return sum(len(r.paths) for r in self.refusals.values())

    def cause_lines(self) -> list[str]:
        return [r.line() for r in self.refusals.values()]

    def last_line(self) -> str:
        why = ", ".join(f"{len(r.paths)} {r.label()}" for r in self.refusals.values())
        refused = f"refused {self.refused}" + (f" ({why})" if why else "")
        return f"imported {self.imported}, {refused}, already there {self.already}"

    def to_json(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "refused": self.refused,
            "already_there": self.already,
            "refusals": [r.to_json() for r in self.refusals.values()],
        }
