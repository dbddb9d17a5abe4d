"""What this home knows about a key now: the one trust decision (spec/verdict.md, "Key standing").

Every caller asks `key_trust`: the verdict for a bundle's signer and for each forwarded hop,
`forward`, the pending limits, pairing, the interface and every carrier. Given a key it says
what the key is here (mine, confirmed, candidate, superseded, compromised or unknown, from the
contacts, the key statements they hold and this home's identity) and the name it may be shown
under. A listing computes it once per key it meets and never keeps it past the command."""

from __future__ import annotations

from gage.format.errors import GageError
from gage.format.keys import key_text, short_fingerprint
from gage.format.keys import statement as keystatement
from gage.format.record import Frozen, set_field
from gage.home.authority import Grant
from gage.home.contacts import Contact, Contacts
from gage.home.layout import Home
from gage.trust.downgrade import Downgrade, downgrade_of

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import KeyStanding, KeyStatus


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
            "replacement_fingerprint": short_fingerprint(r.replacement) if r.replacement else None,
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
        "replacement_fingerprint": short_fingerprint(mine.replacement) if mine.replacement else None,
        "statement": statement,
    }


class KeyTrust(Frozen):
    """What this home's contacts and identity say about one signing key, now: the trust half
    of a verdict that depends on the key alone. A listing computes it once per key it meets
    (`compute(..., keys=...)`), never keeps it past the command."""

    __slots__ = ("contact", "status", "retired", "mine", "downgrade", "grants", "key")
    contact: Contact | None  # the contact it names the sender after (before the signature is looked at)
    status: KeyStatus
    retired: dict[str, Any] | None
    mine: bool  # one of this home's own keys
    # Set when the key is the Ed25519 half of a hybrid key confirmed here: what it signs is a bad signature.
    downgrade: Downgrade | None
    # The authority file's grants to `contact`, by bundle kind, filled as a listing meets kinds.
    grants: dict[str, tuple[Grant, ...]]
    key: bytes

    def __init__(
        self,
        contact: Contact | None,
        status: KeyStatus,
        retired: dict[str, Any] | None,
        mine: bool,
        downgrade: Downgrade | None = None,
        grants: dict[str, tuple[Grant, ...]] | None = None,
        key: bytes = b"",
    ) -> None:
        set_field(self, "contact", contact)
        set_field(self, "status", status)
        set_field(self, "retired", retired)
        set_field(self, "mine", mine)
        set_field(self, "downgrade", downgrade)
        set_field(self, "grants", {} if grants is None else grants)
        set_field(self, "key", key)

    @property
    def standing(self) -> KeyStanding:
        """What the key is to this home now. A retirement outranks all else: a contact's key
        its own statement retired is superseded (still that contact's, as a previous key) or
        compromised (nobody's: anything it signs may be the thief's). Then mine, confirmed,
        candidate (a claim from a bundle, a card, a file or a directory) or unknown."""
        if self.retired is not None:
            return "compromised" if self.retired["reason"] == "compromised" else "superseded"
        if self.mine:
            return "mine"
        if self.status == "confirmed":
            return "confirmed"
        return "candidate" if self.status == "candidate" else "unknown"

    @property
    def name(self) -> str | None:
        """The name the key may be shown under: a confirmed contact's, or for a superseded key the
        contact it was confirmed for. Never for a compromised, candidate or unknown key."""
        if self.contact is None or self.standing not in ("confirmed", "superseded"):
            return None
        return self.contact.name

    @property
    def trusted(self) -> bool:
        """Confirmed by the ceremony and not retired: the only standing that vouches for new content."""
        return self.standing == "confirmed"

    def label(self) -> str:
        """The key in a sentence: its contact's name, else what it is (`compromised key fef1-...`)."""
        fp = short_fingerprint(self.key)
        if self.standing == "superseded" and self.name:
            return f"{self.name} (previous key)"
        if self.name:
            return self.name
        if self.standing == "mine":
            return f"my own key {fp}"
        return f"{self.standing} key {fp}"


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
    mine = home.identity.owns(key)
    if mine and status == "unknown":
        # One of this home's own keys (never a contact, never a candidate): "retired" when a
        # statement of mine retired it, else "mine". Never "unknown" beside is_me: a home's own key is never shown as a stranger's.
        status = "retired" if retired is not None else "mine"
    return KeyTrust(contact=contact, status=status, retired=retired, mine=mine, downgrade=down, key=key)
