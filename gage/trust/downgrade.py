"""Downgrade refusal: the Ed25519 half of a confirmed hybrid key, offered alone, is never that key.

A hybrid key protects a signature only if the receiver insists on both halves. A forger who
breaks Ed25519 alone could otherwise sign as the bare `ed25519:` key inside a contact's hybrid
key and hope to be shown as a lesser, classical-only version of the same person. So once a key
is confirmed as hybrid here (a contact's current or previous key, or this home's own), its
Ed25519 half on its own is refused everywhere: a bundle signed with it is a bad signature
(stage `signature`), a key statement speaking for it is refused, and a key file offering it is
a mismatch. See spec/keys.md section 12.
"""

from __future__ import annotations

from gage.format.keys import Identity, short_fingerprint
from gage.format.record import Frozen, set_field
from gage.format.signing import ed25519_half, is_hybrid
from gage.home.contacts import Contacts


class Downgrade(Frozen):
    """`key` is the Ed25519 half of `hybrid`, confirmed here for `owner` (None: this home's own key)."""

    __slots__ = ("key", "hybrid", "owner")
    key: bytes
    hybrid: bytes
    owner: str | None

    def __init__(self, key: bytes, hybrid: bytes, owner: str | None) -> None:
        set_field(self, "key", key)
        set_field(self, "hybrid", hybrid)
        set_field(self, "owner", owner)

    def whose(self) -> str:
        if self.owner is None:
            return f"this home's own hybrid key {short_fingerprint(self.hybrid)}"
        return f"{self.owner}'s confirmed hybrid key {short_fingerprint(self.hybrid)}"

    def sentence(self) -> str:
        return (
            f"signed with only the Ed25519 half of {self.whose()}: a hybrid key needs both signatures "
            "(Ed25519 and ML-DSA-65), so this is a downgrade and a bad signature"
        )


def hybrid_keys(contacts: Contacts, me: Identity | None) -> dict[bytes, tuple[bytes, str | None]]:
    """Ed25519 half -> (hybrid key, owner) for every hybrid key confirmed here, current or previous."""
    out: dict[bytes, tuple[bytes, str | None]] = {}
    for c in contacts.confirmed.values():
        for k in (c.key, *(p.key for p in c.previous)):
            if is_hybrid(k):
                out.setdefault(ed25519_half(k), (k, c.name))
    if me is not None:
        for k in (me.named_key, *(r.key for r in me.retired)):
            if is_hybrid(k):
                out.setdefault(ed25519_half(k), (k, None))
    return out


def downgrade_of(contacts: Contacts, me: Identity | None, key: bytes) -> Downgrade | None:
    """The refusal for `key` when it is a classical key that is the Ed25519 half of a hybrid key confirmed here."""
    if is_hybrid(key):
        return None
    found = hybrid_keys(contacts, me).get(key)
    if found is None:
        return None
    return Downgrade(key=key, hybrid=found[0], owner=found[1])
