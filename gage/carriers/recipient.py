"""Who `gage deliver --to NAME` means, and where they are said to be: one rule for every way.

The mailbox, the A2A agent and the drop folder all start here, so the same rule holds for
each: a confirmed contact's key, or, only when the person says `--unconfirmed`, a candidate
(a key never confirmed by the ceremony). The "where" that comes with it is a claim
(gage.home.whereabouts): it says where to send, never who is there; the verdict the
receiver computes does not depend on it. Needs no optional extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gage.format.errors import RefusedError, UnknownKeyError, UsageError
from gage.format.keys import key_text, matches_ref, ref_digits, short_fingerprint
from gage.home import whereabouts
from gage.home.contacts import Contacts
from gage.home.layout import Home


@dataclass(frozen=True)
class Recipient:
    name: str  # as given to --to
    key: bytes
    confirmed: bool
    where: whereabouts.Where | None


def key_of(home: Home, to: str, *, unconfirmed: bool) -> tuple[bytes, bool]:
    """(signing key, confirmed?) for a name: a confirmed contact's, or a candidate's with `unconfirmed`."""
    contacts = Contacts.load(home.contacts_path)
    c = contacts.by_name(to)
    if c is not None and c.status == "confirmed":
        return c.key, True
    if c is not None:
        raise RefusedError(f"{to}'s key is retired; pair with their new key before delivering to them")
    # As `gage contacts` lists a candidate: its key text, its fingerprint (for a hybrid key a hash
    # of both halves, not a prefix of the hex), or a prefix of either with at least 8 digits.
    wanted = ref_digits(to)
    by_key = len(wanted) >= 8 and all(ch in "0123456789abcdef" for ch in wanted)
    cands = [k for k in contacts.candidates if by_key and matches_ref(k, wanted)]
    cands += [k for k, cand in contacts.candidates.items() if cand.claimed_name == to and k not in cands]
    if not cands:
        raise UnknownKeyError(f"no confirmed contact named {to!r}: `gage pair` first (or give a candidate with --unconfirmed)")
    if len(cands) > 1:
        raise UsageError(f"{to!r} matches {len(cands)} candidates; give more of the key")
    if not unconfirmed:
        raise RefusedError(
            f"{to!r} is a candidate, not a confirmed contact: its key {short_fingerprint(cands[0])} is a claim. "
            "Pair with them first, or give --unconfirmed to deliver to the claim anyway"
        )
    return cands[0], False


def recipient(home: Home, to: str, *, unconfirmed: bool) -> Recipient:
    key, confirmed = key_of(home, to, unconfirmed=unconfirmed)
    return Recipient(name=to, key=key, confirmed=confirmed, where=whereabouts.load(home).get(key))


def delivery_json(bundle_id: str, to: str, key: bytes, confirmed: bool) -> dict[str, Any]:
    """The fields every way's `deliver --json` starts with: what was sent, and to whom, as a contact or a claim."""
    return {
        "id": bundle_id,
        "to": to,
        "key": key_text(key),
        "fingerprint": short_fingerprint(key),
        "recipient": "confirmed contact" if confirmed else "unconfirmed claim",
    }
