"""`gage directory publish | lookup`: your handle in a relay's directory, or someone else's (a claim; needs gage[relay]).

What the directory says is a claim: a looked-up key is kept as a candidate, and only the
ceremony (`gage pair --directory HANDLE`) confirms it.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option
from gage.cli.extras import relay_extra
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.cli.relaying import add_credential_options

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable


def add_arguments(p: argparse.ArgumentParser) -> None:
    dsub = p.add_subparsers(dest="directory_command", metavar="ACTION", required=True)
    pub = dsub.add_parser("publish", help="publish a record signed by this home's key: handle -> mailbox, sealing key, signing key")
    pub.add_argument("--handle", required=True, metavar="NAME")
    pub.add_argument("--relay", metavar="URL", help="default: this home's relay")
    pub.add_argument("--advertise", metavar="URL", help="the relay URL the record names, if others reach it by another address")
    add_credential_options(pub)
    add_passphrase_options(pub)
    json_option(pub)
    lk = dsub.add_parser("lookup", help="show what the directory says for a handle, marked unconfirmed; kept as a candidate")
    lk.add_argument("handle", metavar="NAME")
    lk.add_argument("--relay", metavar="URL", help="default: this home's relay")
    add_credential_options(lk)
    json_option(lk)


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.directory_command](args)


def publish(args: argparse.Namespace) -> int:
    from gage.cli import relaying
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format import relayurl

    with relay_extra():
        from gage.carriers.relay import directory
    home = open_home(args)
    url = relaying.relay_url(home, args)
    # The record is public: it names the relay without the user or password this home connects with.
    advertise = relaying.checked_url(args.advertise) if args.advertise else relayurl.public(url)
    rec = directory.publish(home, args.handle, url, relay_for_record=advertise, creds=relaying.creds(home, args))
    if args.json:
        emit_json(rec.to_json() | {"status": "published"})
        return 0
    out(f"published {show(rec.handle)} -> mailbox {rec.mailbox} on {show(relayurl.public(url))}")
    err("Anyone can read it, and anyone who runs the directory can change it: it is a claim. People still pair with you by the words.")
    return 0


def lookup(args: argparse.Namespace) -> int:
    from gage.cli import relaying
    from gage.cli.output import emit_json, open_home, out, show
    from gage.format import relayurl
    from gage.format.keys import short_fingerprint
    from gage.format.keys.asjson import with_fingerprints

    with relay_extra():
        from gage.carriers.relay import directory
    home = open_home(args)
    url = relaying.relay_url(home, args)
    rec = directory.lookup(home, args.handle, url, creds=relaying.creds(home, args))
    if args.json:
        emit_json(with_fingerprints(rec.to_json()))
        return 0
    out(f"{show(rec.handle)}: UNCONFIRMED (what the directory on {show(relayurl.public(url))} says; a claim, not a fact)")
    out(f"  signing key  {short_fingerprint(rec.signing_key)}  (not confirmed; the whole key: --json)")
    out(f"  sealing key  {rec.binding.sealing_key}  (bound by that signing key)")
    out(f"  mailbox      {rec.mailbox} on {show(rec.relay or relayurl.public(url))}")
    out(f"  published    {rec.published_at} (the publisher's claim)")
    if rec.note:
        out(f"  WARNING      {rec.note}")
    out(f"Kept as a candidate. To confirm it, read the words: gage pair --directory {show(rec.handle)} --name NAME")
    return 0


# Each action's function, by the name `gage directory ACTION` gives it.
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {"publish": publish, "lookup": lookup}
