"""The arguments of `gage invite` and `gage join` (cmd_invite.py), apart so they merge alone.

Like commands.py, this imports none of the code it names.
"""

from __future__ import annotations

import argparse

from gage.cli import relay_args
from gage.cli.argtypes import run_as
from gage.cli.passphrase import add_options as add_passphrase_options

INVITE_EXAMPLES = """\
examples:
  gage relay dev                                             # a relay to meet on (or your own)
  gage invite --relay nats://127.0.0.1:4222                  # prints `code: 7-tiger-guitarist`, waits
  gage join 7-tiger-guitarist --relay nats://127.0.0.1:4222     # on their machine; then both read words
  gage deliver 3f2a --to bob                                 # afterwards, nothing else needed
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "invite",
        help="print a one-time code to pair with someone through a relay, then the word-pair ceremony (needs gage[relay])",
        epilog=INVITE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--relay", metavar="URL", help="the relay to meet on (default: this home's; its mailbox is made there if it has none)")
    p.add_argument("--code", metavar="CODE", help="use this code (a number and two list words) instead of a random one")
    p.add_argument("--expires", default="10m", metavar="DURATION", help="how long the code waits for them: 90s, 10m, 1m30s, 1h or seconds (default 10m; at most 1h)")
    p.add_argument("--name", metavar="NAME", help="the name they will be known by here (default: asked, their claim offered)")
    relay_args._creds(p)
    add_passphrase_options(p)  # a protected key signs the route it claims
    run_as(p, "cmd_invite", "cmd_invite")

    p = sub.add_parser(
        "join",
        help="pair with the person who gave you an invite code, through the relay, by the word-pair ceremony (needs gage[relay])",
        epilog=INVITE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("code", metavar="CODE", help="the code they read to you, e.g. 7-tiger-guitarist")
    p.add_argument("--relay", metavar="URL", help="the relay they invited you on (default: this home's)")
    p.add_argument("--name", metavar="NAME", help="the name they will be known by here (default: asked, their claim offered)")
    relay_args._creds(p)
    add_passphrase_options(p)
    run_as(p, "cmd_invite", "cmd_join")
