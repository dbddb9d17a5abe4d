"""The verdict: what the receiver computes about a bundle at the moment of reading.

Inputs are the bundle's bytes, this home's contacts, journal and authority file.
Nothing the sender says about itself (its claimed name, a chain, a subject) can raise
the verdict; those are reported as claims. See spec/verdict.md.
"""

from __future__ import annotations

from pathlib import Path

from gage import bundle as bundle_mod
from gage.bundle import Problem
from gage.format.errors import GageError
from gage.format.keys import key_text, short_fingerprint
from gage.format.manifest import Manifest
from gage.format.record import Record
from gage.home import authority as authority_mod
from gage.home.contacts import Contacts
from gage.home.journal.facts import JournalFacts, Seen
from gage.home.layout import Home
from gage.home.listing import Stored
from gage.trust.keytrust import (
    KeyTrust as KeyTrust,  # re-exported: a listing's memo type
)
from gage.trust.keytrust import key_trust
from gage.trust.sender import (
    ChainClaim as ChainClaim,  # re-exported, as Sender and TransportClaim
)
from gage.trust.sender import Sender as Sender
from gage.trust.sender import TransportClaim as TransportClaim
from gage.trust.sender import transport_claim

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import Place, VerdictLevel

NO_AUTHORITY = "no authority: treat as information only"


class Verdict(Record):
    __slots__ = (
        "id",
        "path",
        "state",
        "verdict",
        "problems",
        "warnings",
        "sender",
        "manifest",
        "seen",
        "addressed_to_me",
        "authority",
        "authority_errors",
        "chain",
        "accepted_how",
        "transport",
        "extra",
    )
    id: str | None
    path: Path
    state: Place | None
    verdict: VerdictLevel
    problems: list[Problem]
    warnings: list[Problem]
    sender: Sender
    manifest: Manifest | None
    seen: Seen | None
    addressed_to_me: bool | None  # None: no recipients named
    authority: list[authority_mod.Grant]
    authority_errors: list[str]
    chain: list[ChainClaim]
    accepted_how: str | None  # human, human-unverified, unattended
    transport: TransportClaim | None
    extra: dict[str, Any]

    def __init__(
        self,
        id: str | None,
        path: Path,
        state: Place | None,
        verdict: VerdictLevel,
        problems: list[Problem],
        warnings: list[Problem],
        sender: Sender,
        manifest: Manifest | None,
        seen: Seen | None,
        addressed_to_me: bool | None,
        authority: list[authority_mod.Grant],
        authority_errors: list[str],
        chain: list[ChainClaim],
        accepted_how: str | None = None,
        transport: TransportClaim | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.path = path
        self.state = state
        self.verdict = verdict
        self.problems = problems
        self.warnings = warnings
        self.sender = sender
        self.manifest = manifest
        self.seen = seen
        self.addressed_to_me = addressed_to_me
        self.authority = authority
        self.authority_errors = authority_errors
        self.chain = chain
        self.accepted_how = accepted_how
        self.transport = transport
        self.extra = {} if extra is None else extra

    @property
    def kind(self) -> str | None:
        return self.manifest.kind if self.manifest else None

    @property
    def authority_text(self) -> list[str]:
        if self.authority:
            return [g.may for g in self.authority]
        return [NO_AUTHORITY]

    def to_json(self) -> dict[str, Any]:
        m = self.manifest
        return {
            "id": self.id,
            "state": self.state,
            "verdict": self.verdict,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [p.to_json() for p in self.warnings],
            "sender": self.sender.to_json(),
            "kind": m.kind if m else None,
            "subject": m.subject if m else None,
            "created": m.created if m else None,
            "thread": m.thread_root if m else None,
            "files": [f.to_json() for f in m.files] if m else [],
            "seen": self.seen.to_json() if self.seen else None,
            "addressed_to_me": self.addressed_to_me,
            "recipients": [{"key": key_text(p.key), "fingerprint": short_fingerprint(p.key), "claimed_name": p.name} for p in m.to] if m else [],
            "authority": [g.to_json() for g in self.authority],
            "authority_note": None if self.authority else NO_AUTHORITY,
            "authority_errors": self.authority_errors,
            "chain": [c.to_json() for c in self.chain],
            "accepted_how": self.accepted_how,
            "transport": self.transport.to_json() if self.transport else None,
        }


def load_authority(home: Home, contacts: Contacts) -> authority_mod.AuthorityFile:
    """The authority file as a verdict reads it: a file that cannot be read is an error
    that withholds every grant, never a failure of the verdict."""
    try:
        return authority_mod.load(home.authority_path, contacts)
    except GageError as exc:
        return authority_mod.AuthorityFile(grants=[], errors=[str(exc)])


def compute(
    home: Home,
    target: Stored | Path,
    *,
    contacts: Contacts | None = None,
    facts: JournalFacts | None = None,
    check: bundle_mod.Check | None = None,
    authority: authority_mod.AuthorityFile | None = None,
    keys: dict[bytes, KeyTrust] | None = None,
) -> Verdict:
    """The verdict on `target` now.

    `contacts`, `facts`, `authority`: this home's contacts, journal facts and authority
    file (`load_authority`, with these same contacts), read once by a caller that
    computes many verdicts in one command; each is read here when not given.

    `check`: a `bundle.check` of this same directory, made now or taken from the check
    cache (gage.home.cache.checks), whose key guarantees it is a check of these exact bytes.
    Left None, the bytes are checked afresh.

    `keys`: a memo of `key_trust` by signing key, filled here, for a caller computing many
    verdicts from the same `contacts` and `authority` in one command (a listing); it must start empty.
    """
    if isinstance(target, Stored):
        path, state, in_home = target.path, target.state, True
    else:
        path, state, in_home = Path(target), None, False
    if check is None:
        check = bundle_mod.check(path, expect_name=in_home)
    contacts = contacts if contacts is not None else Contacts.load(home.contacts_path)
    m = check.manifest
    if m is None:
        return Verdict(
            id=None,
            path=path,
            state=state,
            verdict="invalid",
            problems=check.problems,
            warnings=check.warnings,
            sender=Sender(key=None, name=None, status="unknown", claimed_name=None, signature_ok=False),
            manifest=None,
            seen=None,
            addressed_to_me=None,
            authority=[],
            authority_errors=[],
            chain=[],
        )
    trust = keys.get(m.sender.key) if keys is not None else None
    if trust is None:
        trust = key_trust(home, contacts, m.sender.key)
        if keys is not None:
            keys[m.sender.key] = trust
    contact, status, retired = trust.contact, trust.status, trust.retired
    # A contact's name only for a key that really signed this manifest: a forged bundle
    # can write any confirmed key into `sender`, and must not be shown under its name.
    signed = check.signature_ok
    problems = check.problems
    if trust.downgrade is not None:
        # The Ed25519 half of a hybrid key confirmed here, alone: a bad signature, never a
        # lesser verdict (spec/keys.md section 12). A new list: the check may be the cache's.
        problems = [*problems, Problem("signature", "manifest.sig", trust.downgrade.sentence())]
        signed = False
    sender = Sender(
        key=m.sender.key,
        name=contact.name if contact and signed else None,
        status=status,
        claimed_name=m.sender.name,
        signature_ok=signed,
        is_me=signed and trust.mine,
        retired=dict(retired) if retired is not None else None,
    )
    verdict: VerdictLevel
    if problems:
        verdict = "invalid"
    elif status == "confirmed" or (status == "retired" and contact is not None):
        verdict = "verified"
    else:
        verdict = "unverified"

    grants: list[authority_mod.Grant] = []
    authority_errors: list[str] = []
    if verdict == "verified" and contact is not None:
        # Used only now: after the signature verified and the key is confirmed.
        af = authority if authority is not None else load_authority(home, contacts)
        authority_errors = list(af.errors)
        if not af.errors:
            # Per kind, once per key in a listing (the memo lives as long as `keys`, this command).
            found = trust.grants.get(m.kind)
            if found is None or authority is None:
                found = trust.grants[m.kind] = tuple(af.for_bundle(contact.name, m.kind))
            grants = list(found)

    facts = facts if facts is not None else home.journal.index.facts()
    bid = m.id  # a hash of the manifest bytes: computed once, not per use
    seen = facts.seen(bid, m.parent)
    accepted_how = facts.accepted_how.get(bid)

    # Addressed to any key of mine, the current one or one this home retired.
    addressed = None if not m.to else any(home.identity.owns(p.key) for p in m.to)

    forwarder = sender.label() if sender.name else f"the sender ({sender.label()})"
    chain = []
    for hop in m.chain:
        # The same trust function as the sender's: a compromised hop is nobody's, however the
        # forwarder names it (its thief may have signed what was forwarded).
        hop_trust = keys.get(hop.key) if keys is not None else None
        if hop_trust is None:
            hop_trust = key_trust(home, contacts, hop.key)
            if keys is not None:
                keys[hop.key] = hop_trust
        chain.append(
            ChainClaim(
                forwarder=forwarder,
                key=hop.key,
                claimed_name=hop.name,
                contact_name=hop_trust.name,
                bundle=hop.bundle,
                kind=hop.kind,
                created=hop.created,
                standing=hop_trust.standing,
                mine=hop_trust.mine,
            )
        )
    return Verdict(
        id=bid,
        path=path,
        state=state,
        verdict=verdict,
        problems=problems,
        warnings=check.warnings,
        sender=sender,
        manifest=m,
        seen=seen,
        addressed_to_me=addressed,
        authority=grants,
        authority_errors=authority_errors,
        chain=chain,
        accepted_how=accepted_how if state == "accepted" else None,
        transport=transport_claim(facts.transport.get(bid), m, sender),
    )
