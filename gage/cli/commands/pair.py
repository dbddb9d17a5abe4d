"""`gage pair`: confirm someone's key by reading word-pairs aloud with them (the ceremony).

The key comes from a key file, a typed key, a bundle they signed, a candidate's fingerprint, an
A2A agent card (`--card`) or a relay's directory (`--directory`): each only a claim until the
ceremony (gage.trust.ceremony, spoken through gage/cli/pairing.py) confirms it. A route the source
offers (where their mailbox is) is kept only once the key is confirmed, so a refused or abandoned
pairing writes nothing to where.json (spec/relay.md section 2).
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

    from gage.home.layout import Home

    Route = Any  # a whereabouts.Where, or None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "source", metavar="KEYFILE", nargs="?", help="their key file (or a key ed25519:..., the id of a bundle they signed, or a candidate's fingerprint)"
    )
    p.add_argument("--card", metavar="FILE|URL", help="start from the key an A2A agent card claims (a file, or the agent's URL)")
    p.add_argument("--refresh", action="store_true", help="with --card URL: fetch the card again instead of using the cached copy")
    p.add_argument("--directory", metavar="HANDLE", help="start from the key a relay's directory claims for HANDLE (needs gage[relay])")
    p.add_argument("--relay", metavar="URL", help="with --directory: the relay whose directory to ask (default: this home's relay)")
    p.add_argument("--name", required=True, help="what you will call them here")
    p.add_argument("--mutual", action="store_true", help="both ways in one call: they run it with your key at the same time")


def run(args: argparse.Namespace) -> int:
    import sys

    from gage.cli.output import open_home, out, show
    from gage.format.errors import RefusedError, UsageError
    from gage.format.keys import short_fingerprint
    from gage.home.contacts import Contacts
    from gage.trust import ceremony

    home = open_home(args)
    given = [x for x in (args.source, args.card, getattr(args, "directory", None)) if x is not None]
    if len(given) != 1:
        raise UsageError("give their key file (or key, or bundle id), --card FILE|URL or --directory HANDLE: one of them")
    if getattr(args, "directory", None) is not None:
        from gage.cli import (
            relaying,  # the relay extra: loaded only when the directory is asked
        )

        # The directory's record is a claim: its key becomes a candidate and starts the ceremony.
        key, claimed, source, route = relaying.directory_claim(home, args)
    elif args.card is not None:
        from gage.carriers.a2a import (
            card,  # urllib and ssl: loaded only when a card is asked for
        )

        # A card's key is a claim: it becomes a candidate and starts the ceremony, nothing more.
        claim = card.load(home, args.card, refresh=args.refresh)
        key, claimed, source = claim.key, claim.claimed_name, claim.description
        route = _route(key, claim.sealing, source, relay=claim.relay) if claim.sealing is not None else None
    else:
        key, claimed, source, route = _their_key(home, args.source)
    if key == home.identity.key:
        raise RefusedError("that is your own key")
    known = Contacts.load(home.contacts_path).by_key(key)
    if known is not None and known.retired is None and known.name == args.name:
        # Said before any word is read: nothing would change.
        out(
            f"That key is already a confirmed contact here, as {show(known.name)} ({short_fingerprint(key)}),"
            f" since {show(known.confirmed_at)} ({show(known.method)}). Nothing to pair."
        )
        return 0
    down = ceremony.downgrade(home, key)
    if down is not None:
        raise RefusedError(ceremony.mismatch_message(down))
    ceremony.add_candidate(home, key, claimed, source)
    # A name clash is found now, before anyone reads a word.
    Contacts.load(home.contacts_path).confirmable(args.name, key)
    if not sys.stdin.isatty():
        raise RefusedError(
            "pairing is a human act: it needs a person at a terminal on standard input. Nothing was confirmed."
        )
    from gage.cli import pairing

    mine = ceremony.my_words(home)
    out("The word-pair ceremony. Call them on a channel neither machine controls (phone, in person).")
    out(f"Pairing with the key from {show(source)}, which claims the name \"{show(claimed)}\" (a claim, not a fact).")
    out(f"It will be known here as: {show(args.name)}")
    out("")
    if args.mutual:
        out("Both ways at once: they run `gage pair --mutual` with your key now. Take turns, pair by pair:")
        out("read your pair, then type theirs as they read it. A pair that does not match is asked again.")
        return _kept(home, pairing.mutual(home, args.name, key, mine), route)
    from gage.format import words  # the word pairs: only for pairing and contacts

    out("1. Read YOUR words to them, slowly:")
    for i, (a, b) in enumerate(mine, 1):
        out(f"     {i}. {words.pair_text(a, b)}")
    out("")
    out("2. Ask them to read THEIR words (from `gage id` on their machine), and type all eight here (or one pair")
    out("   at a time). A pair that does not match is asked again; type `give up` to stop.")
    code = _kept(home, pairing.one_way(home, args.name, key), route)
    if code == 0:
        out("They should pair with you too, from your key file, so that both sides are confirmed.")
    return code


def _kept(home: Home, code: int, route: Route) -> int:
    """After the ceremony: the route the source offered is kept only if the key was confirmed."""
    if code == 0 and route is not None:
        from gage.home import whereabouts

        whereabouts.remember(home, route)
    return code


def _their_key(home: Home, source: str) -> tuple[bytes, str, str, Route]:
    """The key to pair with, the name it claims, where it came from, and the route it offers."""
    from pathlib import Path

    from gage.format.errors import GageIOError, MalformedError, RefusedError
    from gage.format.keys import parse_key
    from gage.home import listing
    from gage.home.contacts import Contacts
    from gage.home.identity import load_key_file

    if source.startswith(("ed25519:", "ed25519+mldsa65:")):
        return parse_key(source), "", "typed key", None
    path = Path(source)
    if not path.exists() and "-" in source and all(c in "0123456789abcdefABCDEF-" for c in source):
        # A candidate's fingerprint, as `gage contacts` and the messages that suggest pairing show it.
        from gage.cli.candidates import candidate_key

        contacts = Contacts.load(home.contacts_path)
        key = candidate_key(contacts, source)
        cand = contacts.candidates[key]
        return key, cand.claimed_name, cand.source, None
    if path.exists():
        kf = load_key_file(path)
        route = _route(kf.key, kf.sealing, f"key file {path.name}") if kf.sealing is not None else None
        return kf.key, kf.name, f"key file {path.name}", route
    if not source or any(c not in "0123456789abcdefABCDEF" for c in source):
        # Not an id, so it was meant as a key file: the one rule for a missing path (spec/cli.md).
        raise GageIOError("does not exist", path=source)
    stored = listing.resolve(home, source)
    from gage import bundle as bundle_mod

    checked = bundle_mod.check(stored.path, expect_name=True)
    m = checked.manifest
    if m is None:
        raise MalformedError("that bundle's manifest cannot be read", path=str(stored.path))
    if not checked.signature_ok:
        # Anyone can write any key into a manifest: only a key that signed the bundle is its sender's.
        raise RefusedError(
            "that bundle's signature does not verify, so the key it names is not its sender's; pair from a key file",
            path=str(stored.path),
        )
    return m.sender.key, m.sender.name, f"bundle {stored.id[:12]}", None


def _route(carrier: bytes, carried: dict[str, str], source: str, relay: str | None = None) -> Route:
    """A key file's or a card's mailbox, as a claim for the key that carries it; None if its
    binding names another key (ignored: spec/relay.md section 2)."""
    from gage.home import sealing, whereabouts

    return whereabouts.claim_of(carrier, sealing.parse_carried(carried), relay=relay, source=source)
