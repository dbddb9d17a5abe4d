"""Commands about trust: pair, contacts, journal, verdict, authority, forward, read.

What only one command runs (the ceremony, forwarding, the journal check) is imported inside
it (issue 28: `gage verdict ID` and `gage read ID` start fast).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

from gage.cli.output import emit_json, err, open_home, out, show
from gage.format.errors import (
    Exit,
    GageError,
    GageIOError,
    MalformedError,
    RefusedError,
    UsageError,
)
from gage.format.keyjson import with_fingerprints
from gage.format.keys import (
    key_text,
    parse_key,
    short_fingerprint,
)
from gage.format.sanitize import json_text
from gage.home import authority as authority_mod
from gage.home import listing
from gage.home.contacts import Contacts
from gage.trust import frame
from gage.trust import verdict as verdict_mod

TYPE_CHECKING = False  # importing typing costs start-up time (issue 28)
if TYPE_CHECKING:
    from typing import Any
    # What a pairing learned of where the key is (a key file's or card's mailbox, a directory record's): kept only
    # once the ceremony confirmed it, so a refused or abandoned pairing writes nothing to where.json (spec/relay.md 2).
    Route = Any  # a whereabouts.Where, or None


def _their_key(home: Any, source: str) -> tuple[bytes, str, str, Route]:
    """The key to pair with, the name it claims, where it came from, and the route it offers."""
    from gage.home.identity import load_key_file

    if source.startswith(("ed25519:", "ed25519+mldsa65:")):
        return parse_key(source), "", "typed key", None
    path = Path(source)
    if not path.exists() and "-" in source and all(c in "0123456789abcdefABCDEF-" for c in source):
        # A candidate's fingerprint, as `gage contacts` and the messages that suggest pairing show it (issue 27).
        from gage.cli.cmd_where import candidate_key

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


def cmd_pair(args: Any) -> int:
    from gage.trust import ceremony

    home = open_home(args)
    given = [x for x in (args.source, args.card, getattr(args, "directory", None)) if x is not None]
    if len(given) != 1:
        raise UsageError("give their key file (or key, or bundle id), --card FILE|URL or --directory HANDLE: one of them")
    if getattr(args, "directory", None) is not None:
        from gage.cli import (
            cmd_relay,  # the relay extra: loaded only when the directory is asked
        )

        # The directory's record is a claim: its key becomes a candidate and starts the ceremony.
        key, claimed, source, route = cmd_relay.directory_claim(home, args)
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
        # Said before any word is read: nothing would change (issue 27).
        out(
            f"That key is already a confirmed contact here, as {show(known.name)} ({short_fingerprint(key)}),"
            f" since {show(known.confirmed_at)} ({show(known.method)}). Nothing to pair."
        )
        return 0
    down = ceremony.downgrade(home, key)
    if down is not None:
        raise RefusedError(ceremony.mismatch_message(down))
    ceremony.add_candidate(home, key, claimed, source)
    # A name clash is found now, before anyone reads a word (issue 18).
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
    from gage.format import (
        words,  # the word pairs: only for pairing and contacts (start-up, issue 28)
    )

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


def _kept(home: Any, code: int, route: Route) -> int:
    """After the ceremony: the route the source offered is kept only if the key was confirmed."""
    if code == 0 and route is not None:
        from gage.home import whereabouts

        whereabouts.remember(home, route)
    return code


def cmd_contacts(args: Any) -> int:
    from gage.cli.cmd_where import candidate_key
    from gage.trust import ceremony

    if args.action == "where":
        from gage.cli.cmd_where import cmd_contacts_where

        return cmd_contacts_where(args)
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
    from gage.format.words import (
        format_pairs,  # with the word list: only here (start-up, issue 28)
    )
    from gage.home.cache.wordpairs import WordCache

    cache = WordCache(home.cache / "words.json")
    from gage.home import (
        whereabouts,  # each key's "where": a claim kept beside it spec/relay.md
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
    # Every field here was read from contacts.toml, which anyone with the file can edit: never raw.
    out = f"retired as {show(r.reason)} as of {show(r.retired_at)} (their claim; applied {show(r.applied_at)})"
    if r.replacement is not None:
        out += f", names the new key {short_fingerprint(r.replacement)}"
    return out


def cmd_journal_verify(args: Any) -> int:
    from gage.home.journal.verify import verify as verify_journal

    home = open_home(args)
    report = verify_journal(home.journal, inbox=home.root / "inbox")
    if args.json:
        emit_json(report.to_json())
    else:
        # Notes and problems quote values read from the journal and its head: never raw.
        for n in report.notes:
            out(f"note: {show(n)}")
        for p in report.problems:
            err(f"problem: {show(p)}")
        out(f"{'ok' if report.ok else 'NOT ok'}: {report.entries} entries")
    return 0 if report.ok else int(Exit.FAILED)


def cmd_journal_show(args: Any) -> int:
    home = open_home(args)
    # Streamed: a long journal is never held whole. A transport a gage before issue 26 journaled may
    # name a relay with its password: shown without it (the line on disk is as it was written).
    entries: Any = (_clean(e) for e in home.journal.iter_entries())
    if args.n is not None:
        entries = collections.deque(entries, maxlen=args.n)  # the last N, as `git log -n` shows the newest
    if args.json:
        # Each entry as written, with a fingerprint beside every key it names (issue 27).
        _emit_json_stream(with_fingerprints(e) for e in entries)
        return 0
    for e in entries:
        rest = {k: v for k, v in e.items() if k not in ("seq", "time", "event", "prev")}
        # Values as JSON writes them (null, true, a list), strings bare: never Python's None/True.
        detail = " ".join(f"{show(k)}={show(_journal_value(v))}" for k, v in rest.items())
        out(f"{show(str(e.get('seq'))):>5} {show(str(e.get('time'))):<20} {show(str(e.get('event'))):<10} {detail}")
    return 0


def _clean(e: dict[str, Any]) -> dict[str, Any]:
    from gage.format import relayurl

    t = e.get("transport")
    return {**e, "transport": relayurl.clean_transport(t)} if isinstance(t, dict) else e


def _journal_value(v: Any) -> str:
    """A journal value for a person: strings bare, anything else as JSON writes it (null, true,
    a list), never Python's None/True; a key by its fingerprint, as every screen names it
    (a hybrid key's 3968 hex digits would fill the screen; `journal show --json` has every byte)."""
    if isinstance(v, list) and v and all(isinstance(x, str) and x.startswith(("ed25519:", "ed25519+mldsa65:")) for x in v):
        return ",".join(_journal_value(x) for x in v)  # `to=`: the recipients' keys, each by its fingerprint
    if not isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    if v.startswith(("ed25519:", "ed25519+mldsa65:")):
        try:
            return f"key {short_fingerprint(parse_key(v))}"
        except GageError:
            return v[:80] + "..."
    return v


def _emit_json_stream(items: Any) -> None:
    """What `emit_json(list(items))` prints, byte for byte, written as the items are read."""
    import json

    first = True
    for item in items:
        body = json.dumps(item, indent=2, ensure_ascii=True).replace("\n", "\n  ")
        sys.stdout.write(("[\n  " if first else ",\n  ") + body)
        first = False
    sys.stdout.write("[]\n" if first else "\n]\n")
    sys.stdout.flush()


def cmd_verdict(args: Any) -> int:
    from gage.inbox.listed import indexed_check

    home = open_home(args)
    stored = listing.resolve(home, args.id)
    # The check the row index kept, when the folder is that tree still; else checked afresh.
    v = verdict_mod.compute(home, stored, check=indexed_check(home, stored))
    if args.json:
        emit_json(v.to_json())
        return 0
    for f in frame.fields(v):
        out(f"{f.label + ':':<11} {f.value}")
    return 0


def cmd_authority_check(args: Any) -> int:
    home = open_home(args)
    contacts = Contacts.load(home.contacts_path)
    if not home.authority_path.exists():
        if args.json:
            emit_json({"path": json_text(str(home.authority_path)), "exists": False, "ok": True, "errors": [], "grants": []})
            return 0
        out("no authority.toml: every bundle is information only (`gage authority init` writes an example)")
        return 0
    try:
        af = authority_mod.load(home.authority_path, contacts)
    except GageError as exc:
        if not args.json:
            raise
        # cli.md promises the object whatever the file holds: a file that is not TOML (or not a
        # readable file) is one error, with its stage's exit code.
        emit_json({"path": json_text(str(home.authority_path)), "exists": True, "ok": False, "errors": [str(exc)], "grants": []})
        return int(exc.exit_code)
    if args.json:
        # Errors and grants quote the file, which anyone who can edit it wrote: JSON escapes them.
        doc = {"path": json_text(str(home.authority_path)), "exists": True, "ok": not af.errors}
        emit_json({**doc, "errors": af.errors, "grants": [g.to_json() for g in af.grants]})
        return int(Exit.MALFORMED) if af.errors else 0
    for e in af.errors:
        err(show(e))
    if af.errors:
        return int(Exit.MALFORMED)
    for g in af.grants:
        out(f"line {g.line}: {show(g.contact)} / {g.kind}: {show(g.may)}")
    out(f"ok: {len(af.grants)} grant(s)")
    return 0


def cmd_authority_init(args: Any) -> int:
    from gage.bundle import atomic

    home = open_home(args)
    if home.authority_path.exists():
        raise RefusedError("authority.toml exists; edit it by hand", path=str(home.authority_path))
    atomic.write_bytes(home.authority_path, authority_mod.EXAMPLE.encode("utf-8"), 0o600)
    if args.json:
        emit_json({"path": json_text(str(home.authority_path))})
    else:
        out(f"wrote {home.authority_path}")
    return 0


def cmd_forward(args: Any) -> int:
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


def cmd_read(args: Any) -> int:
    home = open_home(args)
    v = verdict_mod.compute(home, listing.resolve(home, args.id))
    if getattr(args, "json", False):
        from gage.inbox.read_json import read_json

        emit_json(read_json(v, show_pending=args.pending))
        return 0
    for line in frame.render(v, show_pending=args.pending):
        out(line)
    return 0
