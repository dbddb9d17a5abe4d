"""Who a verdict says a bundle is from, and who others only claim it is from.

`Sender` is the signer as this home computed it (gage.trust.verdict); a `ChainClaim` is a
forwarder's word about an earlier hop, and a `TransportClaim` a carrier's word about where the
bundle came from. Claims are shown beside the verdict and never raise it (spec/verdict.md).
Records, not dataclasses: every verdict loads them (start-up; gage/format/record.py).
"""

from __future__ import annotations

from gage.format.errors import MalformedError
from gage.format.keys import key_scheme, key_text, parse_key, short_fingerprint
from gage.format.manifest import Manifest
from gage.format.record import Record
from gage.format.sanitize import quoted

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import KeyStanding, KeyStatus


class Sender(Record):
    __slots__ = (
        "key",
        "name",
        "status",
        "claimed_name",
        "signature_ok",
        "is_me",
        "retired",
    )
    key: bytes | None
    # The local contact name, only when confirmed (or a superseded key of theirs) and signed.
    name: str | None
    status: KeyStatus  # a fact about the key (spec/verdict.md)
    claimed_name: str | None
    # False when the signature does not verify: the key is then only what the manifest
    # names, not a proven signer, so it is never given a contact's name.
    signature_ok: bool
    # The key is this home's own identity (a bundle I made, come back). Its status is
    # still what the contacts say, and the verdict is not raised: this is a fact for the
    # reader, so the frame never calls my own key one this home does not know.
    is_me: bool
    # Set when a key statement retired this key (spec/keys.md): `reason` (superseded or
    # compromised), `retired_at` (the signer's claim), `replacement`, `statement` (its id),
    # and `contact`, the local name of the contact whose key it is (null for my own key).
    retired: dict[str, Any] | None

    def __init__(
        self,
        key: bytes | None,
        name: str | None,
        status: KeyStatus,
        claimed_name: str | None,
        signature_ok: bool = True,
        is_me: bool = False,
        retired: dict[str, Any] | None = None,
    ) -> None:
        self.key = key
        self.name = name
        self.status = status
        self.claimed_name = claimed_name
        self.signature_ok = signature_ok
        self.is_me = is_me
        self.retired = retired

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


class ChainClaim(Record):
    __slots__ = (
        "forwarder",
        "key",
        "claimed_name",
        "contact_name",
        "bundle",
        "kind",
        "created",
        "standing",
        "mine",
    )
    forwarder: str
    key: bytes
    claimed_name: str
    contact_name: str | None
    bundle: str
    kind: str
    created: str
    standing: KeyStanding  # what the hop's key is to this home (gage.trust.keytrust)
    mine: bool  # one of this home's own keys, current or retired

    def __init__(
        self,
        forwarder: str,
        key: bytes,
        claimed_name: str,
        contact_name: str | None,
        bundle: str,
        kind: str,
        created: str,
        standing: KeyStanding = "unknown",
        mine: bool = False,
    ) -> None:
        self.forwarder = forwarder
        self.key = key
        self.claimed_name = claimed_name
        self.contact_name = contact_name
        self.bundle = bundle
        self.kind = kind
        self.created = created
        self.standing = standing
        self.mine = mine

    def sentence(self) -> str:
        fp = short_fingerprint(self.key)
        if self.standing == "compromised":
            who = f"compromised key {fp}"
        elif self.standing == "superseded" and self.contact_name:
            who = f"{self.contact_name} (previous key)"
        elif self.standing == "superseded" and self.mine:
            who = f"my own previous key {fp}"
        else:
            who = self.contact_name or (
                f"my own key {fp}" if self.standing == "mine" else f"key {fp}"
            )
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


class TransportClaim(Record):
    """What the carrier said about where a bundle came from (an A2A peer, the agent it
    names). Never an input to the verdict: shown beside it, and where it disagrees with
    the signature, the disagreement is shown and the signature wins."""

    __slots__ = ("carrier", "fields", "disagreements")
    carrier: str
    fields: dict[str, str]
    disagreements: list[str]

    def __init__(
        self, carrier: str, fields: dict[str, str], disagreements: list[str]
    ) -> None:
        self.carrier = carrier
        self.fields = fields
        self.disagreements = disagreements

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
        # Imported here: JSON output only, not every verdict's start-up.
        from gage.format.keys.asjson import with_fingerprints

        fields = with_fingerprints(self.fields)
        return {
            "carrier": self.carrier,
            **fields,
            "claim": self.sentence(),
            "disagreements": self.disagreements,
        }


def transport_claim(
    raw: dict[str, Any] | None, m: Manifest, sender: Sender
) -> TransportClaim | None:
    """The carrier's word on where `m` came from, with every point where it disagrees with the
    signature (which wins); None when the carrier said nothing."""
    if not raw:
        return None
    from gage.format import relayurl  # only where a carrier said something

    # A journal line written before relay URLs were cleaned may hold a password: never shown on.
    fields = relayurl.clean_transport(
        {
            k: v
            for k, v in raw.items()
            if isinstance(k, str) and isinstance(v, str) and k != "carrier"
        }
    )
    carrier = raw.get("carrier") if isinstance(raw.get("carrier"), str) else "unknown"
    disagree: list[str] = []
    claimed_key = fields.get("from_key")
    if claimed_key and claimed_key != key_text(m.sender.key):
        signer = (
            "signed by" if sender.signature_ok else "whose unverified signature names"
        )
        disagree.append(
            f"the transport names key {_fingerprint_of(claimed_key)} as the sender, but this bundle is {signer} "
            f"key {short_fingerprint(m.sender.key)}: the signature wins"
        )
    claimed_name = fields.get("from_name")
    if (
        claimed_name
        and sender.signature_ok
        and claimed_name not in (sender.name, m.sender.name)
    ):
        who = (
            f"the confirmed contact {quoted(sender.name)}"
            if sender.name
            else f"a key claiming the name {quoted(m.sender.name)}"
        )
        disagree.append(
            f"the transport calls the sender {quoted(claimed_name)}, but the signature is {who}'s: the signature wins"
        )
    return TransportClaim(carrier=str(carrier), fields=fields, disagreements=disagree)
