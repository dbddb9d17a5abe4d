"""The half of a verdict that depends on the signing key alone: what this home's contacts and
identity say about it now (spec/verdict.md). Split out of gage.verdict so a listing can compute
it once per key it meets, never once per bundle, and never keep it past the command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import keystatement
from .authority import Grant
from .contacts import Contact, Contacts
from .downgrade import Downgrade, downgrade_of
from .errors import GageError
from .home import Home
from .keys import key_text
from .vocab import KeyStatus


def _retired(home: Home, contacts: Contacts, key: bytes) -> dict[str, Any] | None:
    """What a key statement said about `key`, for a contact's key or one of this home's own."""
    found = contacts.retirement_of(key)
    if found is not None:
        owner, r = found
        return {
            "contact": owner.name,
            "reason": r.reason,
            "retired_at": r.retired_at,
            "replacement": key_text(r.replacement) if r.replacement else None,
            "statement": r.statement,
        }
    mine = home.identity.retirement_of(key)
    if mine is None:
        return None
    try:
        statement: str | None = keystatement.parse(mine.statement.encode("utf-8")).statement.id
    except GageError:
        statement = None
    return {
        "contact": None,
        "reason": mine.reason,
        "retired_at": mine.retired_at,
        "replacement": key_text(mine.replacement) if mine.replacement else None,
        "statement": statement,
    }


@dataclass(frozen=True)
class KeyTrust:
    """What this home's contacts and identity say about one signing key, now: the trust half
    of a verdict that depends on the key alone. A listing computes it once per key it meets
    (`compute(..., keys=...)`), never keeps it past the command."""

    contact: Contact | None  # the contact it names the sender after (before the signature is looked at)
    status: KeyStatus
    retired: dict[str, Any] | None
    mine: bool  # one of this home's own keys
    # Set when the key is the Ed25519 half of a hybrid key confirmed here: what it signs is a bad signature.
    downgrade: Downgrade | None = None
    # The authority file's grants to `contact`, by bundle kind, filled as a listing meets kinds.
    grants: dict[str, tuple[Grant, ...]] = field(default_factory=dict)


def key_trust(home: Home, contacts: Contacts, key: bytes) -> KeyTrust:
    contact = contacts.by_key(key)
    status = contacts.status_of(key)
    retired = _retired(home, contacts, key)
    if retired is not None and retired["contact"] is not None:
        # A retired key (spec/keys.md): superseded keeps its contact (still verified, shown
        # as the contact's previous key); compromised keeps none: nothing it signs verifies.
        owner = contacts.owner_of(key)
        contact = owner if retired["reason"] == "superseded" else None
    down = downgrade_of(contacts, home.identity, key)
    if down is not None:
        contact = None
    return KeyTrust(contact=contact, status=status, retired=retired, mine=home.identity.owns(key), downgrade=down)
