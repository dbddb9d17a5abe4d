"""The verdict: what the receiver computes about a bundle at the moment of reading.

Inputs are the bundle's bytes, this home's contacts, journal and authority file.
Nothing the sender says about itself (its claimed name, a chain, a subject) can raise
the verdict; those are reported as claims. See spec/verdict.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gage import bundle as bundle_mod
from gage.bundle import Problem
from gage.format import relayurl
from gage.format.errors import GageError, MalformedError
from gage.format.keyjson import with_fingerprints
from gage.format.keys import key_scheme, key_text, parse_key, short_fingerprint
from gage.format.manifest import Manifest
from gage.format.sanitize import quoted
from gage.format.vocab import KeyStanding, KeyStatus, Place, VerdictLevel
from gage.home import authority as authority_mod
from gage.home.contacts import Contacts
from gage.home.journal.facts import JournalFacts, Seen
from gage.home.layout import Home
from gage.home.listing import Stored
from gage.trust.keytrust import (
    KeyTrust as KeyTrust,  # re-exported: a listing's memo type
)
from gage.trust.keytrust import key_trust

NO_AUTHORITY = "no authority: treat as information only"


@dataclass
class Sender:
    key: bytes | None
    name: str | None  # the local contact name, only when confirmed (or a superseded key of theirs) and signed
    status: KeyStatus  # a fact about the key (spec/verdict.md)
    claimed_name: str | None
    # False when the signature does not verify: the key is then only what the manifest
    # names, not a proven signer, so it is never given a contact's name.
    signature_ok: bool = True
    # The key is this home's own identity (a bundle I made, come back). Its status is
    # still what the contacts say, and the verdict is not raised: this is a fact for the
    # reader, so the frame never calls my own key one this home does not know.
    is_me: bool = False
    # Set when a key statement retired this key (spec/keys.md): `reason` (superseded or
    # compromised), `retired_at` (the signer's claim), `replacement`, `statement` (its id),
    # and `contact`, the local name of the contact whose key it is (null for my own key).
    retired: dict[str, Any] | None = None

    def label(self) -> str:
        if self.name is not None:
            return self.name
        if self.key is None:
            return "no key (manifest unreadable)"
        if not self.signature_ok:
            return f"unproven key {short_fingerprint(self.key)}"
        if self.is_me:
            return f"my own key {short_fingerprint(self.key)}"
        if self.retired is not None and self.retired["reason"] == "compromised":
            return f"compromised key {short_fingerprint(self.key)}"
        return f"{self.status} key {short_fingerprint(self.key)}"

    def describe(self) -> str:
        """`label()` for a one-line list (the inbox, `gage list`): a contact's superseded key says so."""
        if self.name is not None and self.retired is not None:
            return f"{self.name} (previous key)"
        return self.label()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": key_text(self.key) if self.key else None,
            "fingerprint": short_fingerprint(self.key) if self.key else None,
            "name": self.name,
            "status": self.status,
            "claimed_name": self.claimed_name,
            "signature_ok": self.signature_ok,
            "is_me": self.is_me,
            # How the key signs: `hybrid` (Ed25519 and ML-DSA-65) or `classical-only` (Ed25519). A fact.
            "scheme": key_scheme(self.key) if self.key else None,
        }
        if self.retired is not None:
            # Only for a key a statement retired (spec/keys.md section 5).
            out["retired"] = self.retired
        return out


def _fingerprint_of(text: str) -> str:
    """A key a transport claims, named as every screen names a key; text that is no key, shown quoted."""
    try:
        return short_fingerprint(parse_key(text))
    except MalformedError:
        return quoted(text[:80])


@dataclass
class ChainClaim:
    forwarder: str
    key: bytes
    claimed_name: str
    contact_name: str | None
    bundle: str
    kind: str
    created: str
    standing: KeyStanding = "unknown"  # what the hop's key is to this home (gage.trust.keytrust)
    mine: bool = False  # one of this home's own keys, current or retired

    def sentence(self) -> str:
        fp = short_fingerprint(self.key)
        if self.standing == "compromised":
            who = f"compromised key {fp}"
        elif self.standing == "superseded" and self.contact_name:
            who = f"{self.contact_name} (previous key)"
        elif self.standing == "superseded" and self.mine:
            who = f"my own previous key {fp}"
        else:
            who = self.contact_name or (f"my own key {fp}" if self.standing == "mine" else f"key {fp}")
        if self.claimed_name and self.claimed_name != self.contact_name:
            who += f", named {quoted(self.claimed_name)} by the forwarder"
        return (
            f"{self.forwarder} says this came from {who} (bundle {self.bundle[:12]}, {self.kind}, {self.created}); "
            "a claim by the forwarder, not checked"
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "claimed_by": self.forwarder,
            "key": key_text(self.key),
            "fingerprint": short_fingerprint(self.key),
            "claimed_name": self.claimed_name,
            "contact_name": self.contact_name,
            "bundle": self.bundle,
            "kind": self.kind,
            "created": self.created,
            "claim": self.sentence(),
        }
        if self.standing in ("superseded", "compromised"):
            # Only for a hop whose key a statement retired, as for a sender (spec/verdict.md).
            out["key_standing"] = self.standing
        return out


@dataclass
class TransportClaim:
    """What the carrier said about where a bundle came from (an A2A peer, the agent it
    names). Never an input to the verdict: shown beside it, and where it disagrees with
    the signature, the disagreement is shown and the signature wins."""

    carrier: str
    fields: dict[str, str]
    disagreements: list[str]

    def sentence(self) -> str:
        f = self.fields
        out = "A2A" if self.carrier == "a2a" else quoted(self.carrier)
        if f.get("protocol"):
            out += f" (protocol {f['protocol']})"
        if f.get("from_name"):
            out += f" from {quoted(f['from_name'])}"
        if f.get("from_card"):
            out += f" (card {quoted(f['from_card'])})"
        if f.get("from_key"):
            out += f", naming key {_fingerprint_of(f['from_key'])}"
        if f.get("peer"):
            out += f", connection from {quoted(f['peer'])}"
        if f.get("file"):
            out += f", imported from the file {quoted(f['file'])}"
        return out + "; what the transport says, not checked"

    def to_json(self) -> dict[str, Any]:
        # A key the carrier names gets its fingerprint beside it (`from_key_fingerprint`), as every key in JSON.
        fields = with_fingerprints(self.fields)
        return {"carrier": self.carrier, **fields, "claim": self.sentence(), "disagreements": self.disagreements}


def _transport_claim(raw: dict[str, Any] | None, m: Manifest, sender: Sender) -> TransportClaim | None:
    if not raw:
        return None
    # A journal line written before relay URLs were cleaned may hold a password: never shown on.
    fields = relayurl.clean_transport({k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str) and k != "carrier"})
    carrier = raw.get("carrier") if isinstance(raw.get("carrier"), str) else "unknown"
    disagree: list[str] = []
    claimed_key = fields.get("from_key")
    if claimed_key and claimed_key != key_text(m.sender.key):
        signer = "signed by" if sender.signature_ok else "whose unverified signature names"
        disagree.append(
            f"the transport names key {_fingerprint_of(claimed_key)} as the sender, but this bundle is {signer} "
            f"key {short_fingerprint(m.sender.key)}: the signature wins"
        )
    claimed_name = fields.get("from_name")
    if claimed_name and sender.signature_ok and claimed_name not in (sender.name, m.sender.name):
        who = f"the confirmed contact {quoted(sender.name)}" if sender.name else f"a key claiming the name {quoted(m.sender.name)}"
        disagree.append(f"the transport calls the sender {quoted(claimed_name)}, but the signature is {who}'s: the signature wins")
    return TransportClaim(carrier=str(carrier), fields=fields, disagreements=disagree)


@dataclass
class Verdict:
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
    accepted_how: str | None = None  # human, human-unverified, unattended
    transport: TransportClaim | None = None
    extra: dict[str, Any] = field(default_factory=dict)

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
    cache (gage.home.checkcache), whose key guarantees it is a check of these exact bytes.
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
        transport=_transport_claim(facts.transport.get(bid), m, sender),
    )
