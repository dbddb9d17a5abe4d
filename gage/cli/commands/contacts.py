"""`gage contacts [list | remove NAME | forget KEY | where NAME]`: confirmed contacts and candidates.

`remove` unpairs a confirmed contact and `forget` drops a candidate (gage.trust.ceremony); `where`
shows or sets where a contact is reached, a claim (gage.home.whereabouts) that `gage deliver`
reads and nothing else trusts.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

    from gage.home.layout import Home


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("list", "remove", "forget", "where"), default="list")
    p.add_argument(
        "name", nargs="?",
        help="NAME for remove and where; for forget (and a candidate's where), the key or fingerprint (a unique prefix will do)",
    )
    p.add_argument("--a2a", metavar="URL", help="with where: their A2A agent's URL, your claim (gage deliver --via a2a)")
    p.add_argument("--folder", metavar="DIR", help="with where: a drop folder they watch, your claim (gage deliver --via folder)")
    p.add_argument("--relay", metavar="URL", help="with where: the relay their mailbox is on, your claim")
    p.add_argument(
        "--clear", action="append", choices=("mailbox", "relay", "a2a", "folder"), metavar="WHAT",
        help="with where: forget that claim (mailbox, relay, a2a, folder; repeatable)",
    )
    json_option(p)


def run(args: argparse.Namespace) -> int:
    from gage.cli.candidates import candidate_key
    from gage.cli.output import emit_json, open_home, out, show
    from gage.format.errors import UsageError
    from gage.format.keys import key_text, parse_key, short_fingerprint
    from gage.home.contacts import Contacts
    from gage.trust import ceremony

    if args.action == "where":
        return where(args)
    if args.a2a is not None or args.folder is not None or args.relay is not None or args.clear:
        raise UsageError("--a2a, --folder, --relay and --clear go with `gage contacts where NAME`")
    home = open_home(args)
    if args.action == "remove":
        if not args.name:
            raise UsageError("give the name to remove: gage contacts remove NAME")
        c = ceremony.unpair(home, args.name)
        if args.json:
            emit_json({"removed": c.to_json()})
            return 0
        out(f"removed {show(c.name)} ({short_fingerprint(c.key)}); its bundles are now from an unknown key")
        return 0
    if args.action == "forget":
        if not args.name:
            raise UsageError("give the candidate's key or fingerprint: gage contacts forget KEY")
        key = candidate_key(Contacts.load(home.contacts_path), args.name)
        ceremony.forget_candidate(home, key)
        if args.json:
            emit_json({"forgot": key_text(key), "forgot_fingerprint": short_fingerprint(key)})
            return 0
        out(f"forgot the candidate {short_fingerprint(key)}; bundles it signed stay unverified")
        return 0
    contacts = Contacts.load(home.contacts_path)
    from gage.format.words import format_pairs  # with the word list: only here
    from gage.home.cache.wordpairs import WordCache

    cache = WordCache(home.cache / "words.json")
    from gage.home import (
        whereabouts,  # each key's "where": a claim kept beside it (spec/relay.md)
    )

    wheres = whereabouts.load(home)
    rows = [c.to_json() for c in sorted(contacts.confirmed.values(), key=lambda c: c.name.casefold())]
    rows += [c.to_json() for c in sorted(contacts.candidates.values(), key=lambda c: c.seen_at)]
    for row in rows:
        w = wheres.get(parse_key(row["key"]))
        if w is not None:
            row["where"] = w.to_json()
    if args.json:
        emit_json(rows)
        return 0
    if not rows:
        out("no contacts yet: `gage pair KEYFILE --name NAME` starts the ceremony")
        return 0
    for c in sorted(contacts.confirmed.values(), key=lambda c: c.name.casefold()):
        out(f"{c.status:<10} {show(c.name):<20} {short_fingerprint(c.key)}  {format_pairs(cache.words_for(c.key))}  ({show(c.method)}, {show(c.confirmed_at)})")
        # The key history (spec/keys.md): the current key's retirement, then earlier keys.
        if c.retired is not None:
            out(f"{'':<10} {'':<20} {_retirement_text(c.retired)}")
        for prev in reversed(c.previous):
            out(f"{'':<10} {'':<20} previous key {short_fingerprint(prev.key)}: {_retirement_text(prev.retirement)}")
        if c.key in wheres:
            out(f"{'':<10} {'':<20} {show(wheres[c.key].summary())}")
    for cand in sorted(contacts.candidates.values(), key=lambda c: c.seen_at):
        out(
            f"candidate  {'(unconfirmed)':<20} {short_fingerprint(cand.key)}  claims \"{show(cand.claimed_name)}\""
            f" from {show(cand.source)} ({show(cand.seen_at)})"
        )
        if cand.replaces is not None:
            who = show(cand.replaces_contact or "?")
            out(
                f"{'':<10} {'':<20} named as {who}'s new key by the retired key {short_fingerprint(cand.replaces)};"
                f" not trusted until the ceremony: gage pair {short_fingerprint(cand.key)} --name {who}"
            )
        if cand.key in wheres:
            out(f"{'':<10} {'':<20} {show(wheres[cand.key].summary())}")
    return 0


def _retirement_text(r: Any) -> str:
    from gage.cli.output import show
    from gage.format.keys import short_fingerprint

    # Every field here was read from contacts.toml, which anyone with the file can edit: never raw.
    out = f"retired as {show(r.reason)} as of {show(r.retired_at)} (their claim; applied {show(r.applied_at)})"
    if r.replacement is not None:
        out += f", names the new key {short_fingerprint(r.replacement)}"
    return out


def where(args: argparse.Namespace) -> int:
    """`gage contacts where NAME [--a2a URL] [--folder DIR] [--relay URL] [--clear WHAT]`.

    Where a contact is reached, as the person says (source "you"): an A2A agent's URL, a drop
    folder, the relay their mailbox is on. Kept in where.json beside the claims a key file, a
    card or a directory made (gage.home.whereabouts), and like them a claim: `gage deliver`
    uses it to choose where to send, and nothing here is read by the verdict or confirms a key.
    The mailbox itself comes with their sealing key (a key file, a card, the directory), since
    an address nobody bound cannot be sealed to; `--clear mailbox` forgets it."""
    from pathlib import Path

    from gage.cli.output import emit_json, open_home, out, show
    from gage.format.errors import UsageError
    from gage.format.keys import key_text, short_fingerprint
    from gage.home import whereabouts

    home = open_home(args)
    if not args.name:
        raise UsageError("give the contact: gage contacts where NAME [--a2a URL] [--folder DIR] [--clear WHAT]")
    if args.relay is not None:  # a secret in it would travel with the route: refused before anything is looked up
        from gage.home.settings import relay_url_problem

        if relay_url_problem(args.relay) is not None:
            raise UsageError(str(relay_url_problem(args.relay)))
    key, label = _key_of(home, args.name)
    a2a = folder = relay = None
    if args.a2a is not None:
        from gage.carriers.a2a.card import check_url

        a2a = check_url(args.a2a)
    if args.folder is not None:
        folder = _folder(args.folder)
        home.refuse_inside(Path(folder), "a delivery")
    if args.relay is not None:
        if not args.relay.startswith(("nats://", "tls://", "ws://", "wss://")):
            raise UsageError(f"{args.relay!r} is not a NATS URL (nats://HOST:PORT)")
        relay = args.relay
    clear = {"drop" if c == "folder" else c for c in (args.clear or [])}
    if clear & {n for n, v in (("a2a", a2a), ("drop", folder), ("relay", relay)) if v is not None}:
        raise UsageError("a field cannot be both set and cleared in one call")
    changing = a2a is not None or folder is not None or relay is not None or clear
    w = whereabouts.set_own(home, key, a2a=a2a, drop=folder, relay=relay, clear=clear) if changing else whereabouts.of(home, key)
    if w is not None and not any(getattr(w, n) is not None for n in whereabouts.FIELDS):
        w = None
    if args.json:
        emit_json({"contact": label, "key": key_text(key), "fingerprint": short_fingerprint(key), "where": w.to_json() if w is not None else None})
        return 0
    out(f"{show(label)}: {show(w.summary()) if w is not None else 'where: nowhere known'}")
    if changing:
        out("Kept as your claim: `gage deliver` uses it; it confirms no key and changes no verdict.")
    return 0


def _key_of(home: Home, name: str) -> tuple[bytes, str]:
    """A confirmed contact by name, or a candidate by its key (a unique prefix of 8 hex digits or more)."""
    from gage.cli.candidates import candidate_key
    from gage.format.errors import UnknownKeyError
    from gage.format.keys import HYBRID_PREFIX, KEY_PREFIX, ref_digits
    from gage.home.contacts import Contacts

    contacts = Contacts.load(home.contacts_path)
    c = contacts.by_name(name)
    if c is not None:
        return c.key, c.name
    # Read as a key only when it is one as a person types it: key text (either kind), or a fingerprint
    # or hex of 8 digits or more. Anything else (`abcd12` too) is a name, and unknown: exit 6.
    digits = ref_digits(name)
    typed_key = name.strip().lower().startswith((KEY_PREFIX, HYBRID_PREFIX))
    if not typed_key and (len(digits) < 8 or any(ch not in "0123456789abcdef" for ch in digits)):
        raise UnknownKeyError(f"no contact named {name!r} (a candidate is named by its key: as `gage contacts` shows it)")
    return candidate_key(contacts, name), f"candidate {name}"


def _folder(text: str) -> str:
    """An existing folder, kept as an absolute path (a relative one would mean another place tomorrow)."""
    from pathlib import Path

    from gage.format.errors import GageIOError

    p = Path(text).expanduser()
    if not p.is_dir():
        raise GageIOError("is not a folder (make it first, or check the path)", path=text)
    return str(p.resolve())
