"""What the commands that reach a relay share: its URL and credential options, read and checked,
and the directory's claim that `gage pair --directory` starts from. Its top imports only what the
commands' arguments need (the credential options, the examples); the rest is imported where used.

The relay's own modules need the optional extra `gage[relay]` (nats-py, pyrage): each is imported
here by name, inside `relay_extra()` (gage/cli/extras.py), so a missing extra is a usage error
that says what to install.
"""

from __future__ import annotations

import argparse

from gage.cli.extras import relay_extra
from gage.format.errors import UsageError

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

    from gage.home.layout import Home

# The examples under `gage relay --help` and `gage mailbox --help`; then `gage invite --help` and `gage join --help`.
RELAY_EXAMPLES = """\
examples:
  gage relay dev --port 4222                                 # a local relay, for trying gage
  gage mailbox create --relay nats://127.0.0.1:4222          # this home's mailbox
  gage directory publish --handle alice                      # handle -> mailbox (a claim)
  gage pair --directory bob --name bob                       # the ceremony, from the directory's claim
  gage deliver 3f2a --to bob                                 # sealed to bob's bound sealing key
  gage mailbox fetch                                         # take envelopes into pending
  gage watch --mailbox                                       # the same, live
"""

INVITE_EXAMPLES = """\
examples:
  gage relay dev                                             # a relay to meet on (or your own)
  gage invite --relay nats://127.0.0.1:4222                  # prints `code: 7-tiger-guitarist`, waits
  gage join 7-tiger-guitarist --relay nats://127.0.0.1:4222     # on their machine; then both read words
  gage deliver 3f2a --to bob                                 # afterwards, nothing else needed
"""


def add_credential_options(p: argparse.ArgumentParser) -> None:
    """The credential for this home's relay: one of three files, each 0600 or refused (spec/relay.md section 8)."""
    g = p.add_argument_group("relay credential (default: the one in settings.toml; never in the URL)")
    g.add_argument("--creds", metavar="FILE", help="a NATS creds file (a user JWT and its nkey seed)")
    g.add_argument("--nkey", metavar="FILE", help="an nkey seed file (the relay's configuration holds its public key)")
    g.add_argument("--user", metavar="NAME", help="a user name, with --password-file")
    g.add_argument("--password-file", metavar="FILE", help="a file holding the password on its first line")


def checked_url(url: str) -> str:
    """A relay URL with no user or password in it (gage.carriers.relay.creds), or a usage error."""
    from gage.home.settings import relay_url_problem

    problem = relay_url_problem(url)
    if problem is not None:
        raise UsageError(problem)
    return url


def home_relay(home: Home) -> str | None:
    """This home's own relay, from settings.toml."""
    with relay_extra():
        from gage.carriers.relay import config
    return config.relay_url(home)


def relay_url(home: Home, args: argparse.Namespace) -> str:
    """`--relay`, checked, else this home's relay; a usage error when neither is known."""
    given: str | None = getattr(args, "relay", None)
    url = checked_url(given) if given else home_relay(home)
    if not url:
        raise UsageError("no relay is known: give --relay URL (or run `gage mailbox create --relay URL` once)")
    return url


def given_creds(args: argparse.Namespace) -> Any:
    """The credential given on the command line (checked: each file 0600), or None."""
    # No nats import: the credential is checked before anything of the extra is loaded.
    from gage.carriers.relay.creds import Credentials

    cred = Credentials(
        creds=getattr(args, "creds", None), nkey=getattr(args, "nkey", None),
        user=getattr(args, "user", None), password_file=getattr(args, "password_file", None),
    )
    return cred.check() if cred else None


def creds(home: Home, args: argparse.Namespace) -> Any:
    """The credential given, else this home's own from settings.toml (spec/settings.md), but that
    one only for this home's own relay: a `--relay` that names another one is connected to with
    none (spec/relay.md section 2)."""
    from gage.format import relayurl

    given = given_creds(args)
    if given:
        return given
    with relay_extra():
        from gage.carriers.relay import config
    typed = getattr(args, "relay", None)
    if typed and not relayurl.same_relay(typed, config.relay_url(home)):
        return None
    return config.relay_creds(home)


def directory_claim(home: Home, args: argparse.Namespace) -> tuple[bytes, str, str, Any]:
    """For `gage pair --directory`: the key the directory claims for the handle (a candidate now),
    and the route its record offers, kept by the caller only once the ceremony confirmed the key."""
    from gage.cli.output import err, show
    from gage.format import relayurl

    with relay_extra():
        from gage.carriers.relay import directory
    url = relay_url(home, args)
    rec = directory.lookup(home, args.directory, url, creds=creds(home, args), route=False)
    if rec.note:
        err(f"WARNING: {show(rec.note)}")
    warn = f"; WARNING: {rec.note}" if rec.note else ""
    return rec.signing_key, rec.handle, f"the directory on {relayurl.public(url)} (UNCONFIRMED claim for {rec.handle!r}{warn})", directory.route_of(rec, url)
