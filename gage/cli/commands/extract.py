"""`gage extract`: copy an accepted bundle's files into a folder, checking every byte (gage.inbox.extract,
which the interface calls too)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix")
    p.add_argument("dir", metavar="DIR", help="the folder to copy the payload into (made if missing)")
    p.add_argument("--pending", action="store_true", help="extract a pending bundle without accepting it")
    p.add_argument("--force", action="store_true", help="replace files that exist in DIR")
    json_option(p)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format.sanitize import json_text
    from gage.home import listing
    from gage.inbox.extract import extract

    home = open_home(args)
    stored = listing.resolve(home, args.id)
    paths = extract(home, stored, Path(args.dir), force=args.force, allow_pending=args.pending)
    if args.json:
        emit_json({"id": stored.id, "state": stored.state, "dir": json_text(args.dir), "files": [json_text(str(p)) for p in paths]})
        return 0
    for p in paths:
        out(show(str(p)))
    n = len(paths)
    note = " (it stays pending: NOT accepted)" if stored.state == "pending" else ""
    err(f"extracted {n} file{'s' if n != 1 else ''} of {stored.id[:12]} into {show(args.dir)}, each checked against the manifest{note}")
    return 0
