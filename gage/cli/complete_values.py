"""`gage __complete ids|pending|names`: the values shell completion offers for ids and contact names.

The completion scripts (gage/cli/completion.py) call this while a person presses Tab, so it
reads folder names and contacts.toml only: no manifest is parsed, nothing is hashed, and
nothing a bundle says (a subject, a claimed name) is printed, since it would land on the
person's command line. Ids are printed whole, pending first; contact names are the local
names this home chose. Any failure prints nothing: a completion never shows an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

WHAT = ("ids", "pending", "names")


def values(home: Path, what: str) -> list[str]:
    from gage.format.manifest import is_id

    if what in ("ids", "pending"):
        places = ("pending",) if what == "pending" else ("pending", "accepted", "rejected", "outbox")
        out: list[str] = []
        for place in places:
            d = home / ("outbox" if place == "outbox" else f"inbox/{place}")
            try:
                out += sorted(n for n in os.listdir(d) if is_id(n))
            except OSError:
                continue
        return out
    if what == "names":
        from gage.home.contacts import Contacts

        return sorted(Contacts.load(home / "contacts.toml").confirmed)
    return []


def main(argv: list[str]) -> int:
    """argv: [WHAT] or [WHAT, HOME]."""
    try:
        from gage.home.layout import default_home

        what = argv[0] if argv else ""
        home = Path(argv[1]) if len(argv) > 1 and argv[1] else default_home()
        for v in values(home, what):
            sys.stdout.write(v + "\n")
    except Exception:  # noqa: BLE001 - Tab must never print a traceback into a prompt
        return 0
    return 0
