"""`gage invite`: print a one-time code to pair with someone through a relay, then the word-pair ceremony.

The rendezvous and its PAKE are gage.carriers.relay.invite's; what `gage join` shares with this
(the claims, the checks, the ceremony, the route kept only once confirmed) is gage/cli/meeting.py.
"""

from __future__ import annotations

import argparse

from gage.cli.extras import relay_extra
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.cli.relaying import INVITE_EXAMPLES, add_credential_options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = INVITE_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--relay", metavar="URL", help="the relay to meet on (default: this home's; its mailbox is made there if it has none)")
    p.add_argument("--code", metavar="CODE", help="use this code (a number and two list words) instead of a random one")
    p.add_argument("--expires", default="10m", metavar="DURATION", help="how long the code waits for them: 90s, 10m, 1m30s, 1h or seconds (default 10m; at most 1h)")
    p.add_argument("--name", metavar="NAME", help="the name they will be known by here (default: asked, their claim offered)")
    add_credential_options(p)
    add_passphrase_options(p)  # a protected key signs the route it claims


def run(args: argparse.Namespace) -> int:
    import contextlib

    from gage.cli import meeting, relaying
    from gage.cli.output import err, open_home, out, show
    from gage.format import relayurl
    from gage.format.errors import GageError

    with relay_extra():
        from gage.carriers.relay import invite, meet, rendezvous
    expires = rendezvous.parse_duration(args.expires)  # a malformed code or duration is exit 2, before anything else
    chosen = rendezvous.parse_code(args.code) if args.code else None
    home = open_home(args)
    meeting.terminal()
    url, creds = meeting.relay_url(home, args), relaying.creds(home, args)
    mine = meeting.own_claims(home, url, creds)
    side = invite.Inviter(url, creds, chosen, expires)
    code = side.open()
    try:  # from the moment the offer is on the relay: a Ctrl-C while the code is still being printed withdraws it too
        out(f"code: {code.text}")
        out(f"Read this code to them; they run: gage join {code.text} --relay {show(relayurl.public(url))}")
        out(f"It works once, for {rendezvous.say_duration(expires)}. Waiting for them to join...")
        theirs = side.wait_join(mine, lambda n: err(f"   a join came with a wrong code ({n} of {invite.MAX_TRIES}); still waiting..."))
    except KeyboardInterrupt:
        with contextlib.suppress(GageError, KeyboardInterrupt):
            side.withdraw()  # a join is told at once that the code is gone
        err("gage: the code is withdrawn; nothing was swapped.")
        raise
    return meeting.ceremony_with(home, args, side, theirs, meet.source("invite", url))
