"""`gage contacts where NAME [--a2a URL] [--folder DIR] [--relay URL] [--clear WHAT]`.

Where a contact is reached, as the person says (source "you"): an A2A agent's URL, a drop
folder, the relay their mailbox is on. Kept in where.json beside the claims a key file, a
card or a directory made (gage.home.whereabouts), and like them a claim: `gage deliver`
uses it to choose where to send, and nothing here is read by the verdict or confirms a key.
The mailbox itself comes with their sealing key (a key file, a card, the directory), since
an address nobody bound cannot be sealed to; `--clear mailbox` forgets it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gage.cli.output import emit_json, open_home, out, show
from gage.format.errors import GageIOError, RefusedError, UnknownKeyError, UsageError
from gage.format.keys import (
    HYBRID_PREFIX,
    KEY_PREFIX,
    key_text,
    matches_ref,
    ref_digits,
    short_fingerprint,
)
from gage.home import whereabouts
from gage.home.contacts import Contacts
from gage.home.layout import Home


def _key_of(home: Home, name: str) -> tuple[bytes, str]:
    """A confirmed contact by name, or a candidate by its key (a unique prefix of 8 hex digits or more)."""
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


def candidate_key(contacts: Contacts, text: str) -> bytes:
    """A candidate named by its key text, its fingerprint as listed, or a unique prefix of its hex."""
    wanted = ref_digits(text)
    if len(wanted) < 8 or any(c not in "0123456789abcdef" for c in wanted):
        raise UsageError("give at least 8 hex digits of the candidate's key (as `gage contacts` shows it)")
    matches = [k for k in contacts.candidates if matches_ref(k, wanted)]
    if not matches:
        if any(matches_ref(c.key, wanted) for c in contacts.confirmed.values()):
            raise RefusedError("that key is a confirmed contact: `gage contacts remove NAME` unpairs it")
        raise UnknownKeyError(f"no candidate key starts with {wanted}")
    if len(matches) > 1:
        raise UsageError(f"{wanted} matches {len(matches)} candidates; give more of the key")
    return matches[0]


def _folder(text: str) -> str:
    """An existing folder, kept as an absolute path (a relative one would mean another place tomorrow)."""
    p = Path(text).expanduser()
    if not p.is_dir():
        raise GageIOError("is not a folder (make it first, or check the path)", path=text)
    return str(p.resolve())


def cmd_contacts_where(args: Any) -> int:
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
