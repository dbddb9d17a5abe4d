"""`gage deliver ID --to NAME`: send a bundle to a contact where they are.

Their mailbox (sealed to their bound sealing key; gage[relay]), their A2A agent (gage[a2a]) or
their drop folder, chosen by gage.carriers.route from what `gage contacts where` and the pairing
kept; through the outbox (gage.carriers.outbox), so a way that is not there keeps the delivery
for later (exit 16). Only the way taken needs its extra.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option
from gage.cli.relaying import add_credential_options

DELIVER_EXAMPLES = """\
examples:
  gage deliver 3f2a --to bob                                 # the mailbox if known, else A2A, else the drop folder
  gage deliver 3f2a --to bob --via folder                    # into bob's drop folder (gage contacts where bob --folder DIR)
  gage deliver 3f2a --to bob --via a2a --token-file tok      # to bob's A2A agent (gage contacts where bob --a2a URL)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = DELIVER_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("id", metavar="ID")
    p.add_argument("--to", required=True, metavar="NAME", help="a confirmed contact (or, with --unconfirmed, a candidate's key or claimed name)")
    p.add_argument(
        "--via", choices=("mailbox", "a2a", "folder"),
        help="which of their whereabouts to use (default: the mailbox if known, else the A2A agent, else the drop folder)",
    )
    p.add_argument("--relay", metavar="URL", help="by mailbox: the relay (default: where their mailbox is, else this home's relay)")
    p.add_argument("--unconfirmed", action="store_true", help="deliver to a candidate's key, a claim the ceremony never confirmed")
    add_credential_options(p)
    p.add_argument("--token-file", metavar="FILE", help="by A2A: a file holding the bearer token the agent asks for")
    p.add_argument(
        "--now", action="store_true",
        help="fail at once if the way is not there (default: keep it in the outbox, exit 16, and send it when the way is back)",
    )
    json_option(p)


def run(args: argparse.Namespace) -> int:
    """To the contact's mailbox, A2A agent or drop folder (gage.carriers.route), through the outbox
    (gage.carriers.outbox): the way not there keeps it, exit 16; only the way taken needs its extra."""
    from pathlib import Path

    from gage.carriers import outbox
    from gage.cli.output import emit_json, open_home, out
    from gage.cli.relaying import checked_url, given_creds
    from gage.cli.tokenfile import token_from_file

    relay = checked_url(args.relay) if args.relay else None
    home = open_home(args)
    token_from_file(args.token_file)  # a bad token file is said now, not at a later try
    done = outbox.deliver(
        home, args.id, args.to, via=args.via, unconfirmed=args.unconfirmed, relay=relay, creds=given_creds(args),
        token_file=str(Path(args.token_file).absolute()) if args.token_file else None, now=args.now,
    )
    if args.json:
        emit_json(done.to_json())
        return done.code
    out(done.summary())
    return done.code
