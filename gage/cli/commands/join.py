"""`gage join CODE`: pair with the person who gave you an invite code, through the relay, by the word-pair ceremony.

The other half of `gage invite`; what the two share is gage/cli/meeting.py.
"""

from __future__ import annotations

import argparse

from gage.cli.extras import relay_extra
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.cli.relaying import INVITE_EXAMPLES, add_credential_options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = INVITE_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("code", metavar="CODE", help="the code they read to you, e.g. 7-tiger-guitarist")
    p.add_argument("--relay", metavar="URL", help="the relay they invited you on (default: this home's)")
    p.add_argument("--name", metavar="NAME", help="the name they will be known by here (default: asked, their claim offered)")
    add_credential_options(p)
    add_passphrase_options(p)


def run(args: argparse.Namespace) -> int:
    from gage.cli import meeting, relaying
    from gage.cli.output import open_home, out, show
    from gage.format import relayurl

    with relay_extra():
        from gage.carriers.relay import invite, meet, rendezvous
    code = rendezvous.parse_code(args.code)  # a malformed code is exit 2, before anything else
    home = open_home(args)
    meeting.terminal()
    url, creds = meeting.relay_url(home, args), relaying.creds(home, args)
    mine = meeting.own_claims(home, url, creds)
    side = invite.Joiner(url, creds, code)
    out(f"Joining {code.text} on {show(relayurl.public(url))}: waiting for the inviter...")
    theirs = side.meet(mine)
    return meeting.ceremony_with(home, args, side, theirs, meet.source("join", url))
