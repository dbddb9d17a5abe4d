"""`gage bundle`: make a signed bundle of files and folders."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.format.vocab import KINDS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="files and folders to bundle (a folder keeps its name and layout)")
    p.add_argument("--kind", default="share", choices=KINDS, help="what the bundle is (default: share; answer and ack need --parent)")
    p.add_argument("--to", action="append", default=[], metavar="NAME", help="a confirmed contact (repeatable)")
    p.add_argument("--parent", metavar="ID", help="the bundle this one replies to")
    p.add_argument("--subject", metavar="TEXT", help="a one-line subject, shown to the receiver as the sender's claim")
    p.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle into DIR/<id>")
    json_option(p, "describe the bundle made (id, files, where, sender) instead of printing its id")
    add_passphrase_options(p)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gage.cli.output import emit_json, err, open_home, out
    from gage.cli.sizes import human
    from gage.inbox import made_json, send

    home = open_home(args)
    manifest, dest = send.create(
        home,
        [Path(p) for p in args.paths],
        kind=args.kind,
        to=args.to,
        parent=args.parent,
        subject=args.subject,
        copy_to=Path(args.output) if args.output else None,
    )
    n = len(manifest.files)
    err(f"bundled {n} file{'s' if n != 1 else ''} ({human(manifest.total_size)}) as {manifest.kind} into {dest}")
    if args.output:
        err(f"copied to {Path(args.output) / manifest.id}")
    if args.json:
        emit_json(made_json.made(home, manifest, dest, Path(args.output) if args.output else None))
    else:
        out(manifest.id)
    return 0
