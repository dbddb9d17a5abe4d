"""`gage forward ID`: sign a bundle's payload anew for someone else; earlier hops become claims (gage.inbox.send)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option
from gage.cli.passphrase import add_options as add_passphrase_options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    p.add_argument("--to", action="append", default=[], metavar="NAME", help="a confirmed contact (repeatable)")
    p.add_argument("-o", "--output", metavar="DIR", help="also copy the new bundle into DIR/<id>")
    p.add_argument(
        "--unverified",
        action="store_true",
        help="forward a bundle whose signer is not a confirmed, unretired contact; the hop then names the key as unverified",
    )
    json_option(p, "describe the bundle made, as `gage bundle --json` does, and the one forwarded")
    add_passphrase_options(p)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gage.cli.output import emit_json, err, open_home, out
    from gage.inbox import send

    home = open_home(args)
    copy_to = Path(args.output) if args.output else None
    manifest, dest = send.forward(home, args.id, to=args.to, copy_to=copy_to, unverified=args.unverified)
    err(f"forwarded as {manifest.kind} into {dest}; the earlier hop is recorded as your claim")
    if args.json:
        from gage.inbox.made_json import made

        doc = made(home, manifest, dest, copy_to)
        doc["forwarded"] = manifest.chain[-1].bundle if manifest.chain else None
        emit_json(doc)
    else:
        out(manifest.id)
    return 0
