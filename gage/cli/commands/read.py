"""`gage read ID`: print a bundle's frame, then its payload: what an agent should read (gage.trust.frame)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    p.add_argument("--pending", action="store_true", help="show a pending bundle's payload (it stays pending)")
    json_option(p, "the frame's fields and a description of each payload file")


def run(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, open_home, out
    from gage.home import listing
    from gage.trust import frame
    from gage.trust import verdict as verdict_mod

    home = open_home(args)
    v = verdict_mod.compute(home, listing.resolve(home, args.id))
    if getattr(args, "json", False):
        from gage.inbox.read_json import read_json

        emit_json(read_json(v, show_pending=args.pending))
        return 0
    for line in frame.render(v, show_pending=args.pending):
        out(line)
    return 0
