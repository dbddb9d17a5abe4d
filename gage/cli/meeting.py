"""What `gage invite` and `gage join` share: two people, one command each, then the ceremony.

Thin: the rendezvous and its PAKE are gage.carriers.relay.invite's, the sequence around them
(claims, checks, the watch, the route kept) gage.carriers.relay.meet's, shared with the
interface; the ceremony is `pair --mutual`'s own code (gage.cli.pairing), told to confirm nothing unless the other side
matched too. What arrives through the relay is kept nowhere until the ceremony confirms the key:
then, and only then, its route goes into `where.json`, as `gage pair` keeps a key file's. A
failed, refused or abandoned invite leaves the contacts and routes as they were.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gage.cli.extras import relay_extra
from gage.cli.output import err, out, show
from gage.cli.relaying import checked_url, home_relay
from gage.format import relayurl
from gage.format.errors import GageError, RefusedError, UsageError
from gage.format.keys import check_local_name, key_text, short_fingerprint
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.trust import ceremony


def terminal() -> None:
    """Checked before the code is made or spent: the ceremony that follows needs a person."""
    if not sys.stdin.isatty():
        raise RefusedError("pairing is a human act: it needs a person at a terminal on standard input. Nothing was confirmed.")


def relay_url(home: Home, args: argparse.Namespace) -> str:
    url: str | None = args.relay or home_relay(home)
    if not url:
        raise UsageError("no relay is known: give --relay URL (a relay both of you reach, e.g. `gage relay dev`'s)")
    return checked_url(url)


def own_claims(home: Home, url: str, creds: Any) -> Any:
    """This home's claims (gage.carriers.relay.meet), its mailbox made first if it has none."""
    with relay_extra():
        from gage.carriers.relay import meet
    return meet.own_claims(
        home, url, creds, made=lambda address: err(f"made this home's mailbox {address} on {show(url)} (recorded in settings.toml)")
    )


def _name(home: Home, args: argparse.Namespace, key: bytes, claimed: str) -> str:
    """--name, or asked, with the name they claim offered: checked by the ceremony's rule before any word."""
    if args.name:
        Contacts.load(home.contacts_path).confirmable(args.name, key)
        return str(args.name)
    while True:
        try:
            line = input(f"   their name here (Enter for {show(claimed)!r}, their claim): ")
        except EOFError:
            raise RefusedError("no name was given: nothing was confirmed") from None
        name = line.strip() or claimed
        try:
            check_local_name(name)
            Contacts.load(home.contacts_path).confirmable(name, key)
            return name
        except GageError as exc:
            err(f"   {show(str(exc))}")


def ceremony_with(home: Home, args: argparse.Namespace, side: Any, theirs: Any, source: str) -> int:
    """The mutual ceremony; the other side hears how ours ended. Their route is kept only once confirmed."""
    from gage.cli import pairing

    with relay_extra():
        from gage.carriers.relay import meet
    key = theirs.keyfile.key
    try:
        meet.refuse_before_words(home, theirs)
        out(f"Their key {short_fingerprint(key)} claims the name \"{show(theirs.keyfile.name)}\" (a claim, not a fact),")
        out(f"with a mailbox on {show(relayurl.public(theirs.relay))}, signed by that key: kept only if the words confirm it.")
        name = _name(home, args, key, theirs.keyfile.name)
    except (GageError, KeyboardInterrupt):
        meet.tell(side, "stopped before the ceremony")
        raise
    out("")
    out("The word-pair ceremony, both ways at once. Stay on the call (a channel neither machine controls).")
    out(f"They will be known here as: {show(name)}. Take turns, pair by pair: read your pair, then type theirs as")
    out("they read it. A pair that does not match is asked again; `give up` stops (nothing is confirmed on either side).")
    watch = meet.Watch(side)

    def agree(matched: bool, why: str) -> str | None:
        watch.stop()  # this side's typing is over: from here it waits for their outcome itself
        result: str | None = side.outcome(matched, why)
        return result

    try:
        code = pairing.mutual(home, name, key, ceremony.my_words(home), agree=agree, stopped=watch.stopped)
    except KeyboardInterrupt:
        err("")  # the prompt's line is left open
        meet.tell(side, "Ctrl-C")
        _how_to_finish(key, name)
        raise
    except GageError:
        _how_to_finish(key, name)
        raise
    finally:
        watch.stop()
    if code == 0:
        meet.keep_route(home, theirs, source)
        out(f"Mail now flows: `gage deliver ID --to {show(name)}`; `gage watch` (or an open `gage`) fetches what they send.")
    return code


def _how_to_finish(key: bytes, name: str) -> None:
    """An interrupted ceremony can be finished without the relay: `pair --mutual` on both sides."""
    err("To finish without the relay, both run `gage pair KEY --name NAME --mutual` on a call; here:")
    err(f"  gage pair {key_text(key)} --name {show(name)} --mutual")
    err("(their mailbox is then set from their key file, `gage key export`, or a new `gage invite`).")
