"""`gage verdict ID`: show what this home computes about a bundle: its verdict (gage.trust.verdict)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    json_option(p)


def run(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, open_home, out
    from gage.home import listing
    from gage.inbox.listed import indexed_check
    from gage.trust import frame
    from gage.trust import verdict as verdict_mod

    home = open_home(args)
    stored = listing.resolve(home, args.id)
    # The check the row index kept, when the folder is that tree still; else checked afresh.
    v = verdict_mod.compute(home, stored, check=indexed_check(home, stored))
    if args.json:
        emit_json(v.to_json())
        return 0
    for f in frame.fields(v):
        out(f"{f.label + ':':<11} {f.value}")
    return 0
