"""What the command line says about key statements and this home's retired keys.

Shared by the commands that can meet a key statement (`gage key apply`, `gage import`,
`gage a2a import`) and by `gage id`, which lists the keys this home retired.
"""

from __future__ import annotations

from typing import Any

from gage.cli.output import err, show
from gage.format.keys import key_shown, key_text, short_fingerprint
from gage.home.layout import Home
from gage.trust import retirement


def report_outcomes(outcomes: list[retirement.Outcome]) -> None:
    for o in outcomes:
        where = f"{o.carrier[:12]}: " if o.carrier else ""
        err(f"{where}{'key statement applied: ' if o.applied else ''}{show(o.message)}")


def report_arrivals(home: Home, ids: list[str]) -> None:
    report_outcomes(retirement.apply_arrivals(home, ids))


def id_lines(home: Home) -> list[str]:
    """`gage id`: this home's retired keys, oldest first."""
    lines = []
    for r in home.identity.retired:
        where = "" if r.origin == "this home" else " (another home's key, which this one replaces)"
        nxt = f"; replaced by {short_fingerprint(r.replacement)}" if r.replacement else "; no replacement"
        lines.append(f"retired: {key_shown(r.key)} {r.reason} as of {r.retired_at}{nxt}{where}")
    return lines


def id_json(home: Home) -> list[dict[str, Any]]:
    cur = home.identity.key
    return [
        {
            "key": key_text(r.key),
            "fingerprint": short_fingerprint(r.key),
            "reason": r.reason,
            "retired_at": r.retired_at,
            "replacement": key_text(r.replacement) if r.replacement else None,
            "replacement_fingerprint": short_fingerprint(r.replacement) if r.replacement else None,
            "origin": r.origin,
            "current": r.key == cur,
        }
        for r in home.identity.retired
    ]
