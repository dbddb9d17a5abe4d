"""What two homes say to each other under an invite's code, and how it is sealed (spec/relay.md section 10).

The box keys are drawn from the SPAKE2 key by HKDF, as magic-wormhole draws its own. The claims carry a
signature, by the key they offer, over the mailbox and relay and over this exchange's two SPAKE2 messages
(`session_id`): someone in the middle who knows the code runs one exchange with each side, so a route
signed for one never verifies in the other, and both real keys cannot carry a relay of theirs. The
steps that move these over the relay are gage.carriers.relay.invite's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import nacl.exceptions
import nacl.secret
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from gage.carriers.relay import rendezvous
from gage.format import relayurl, signing, strictjson
from gage.format.errors import MalformedError
from gage.format.keys.file import KeyFile
from gage.home import sealing, whereabouts

SESSION_CONTEXT = b"gage/invite/v1/session\x00"
ROUTE_CONTEXT = b"gage/invite-route/v1\x00"
BOX_INFO = b"gage/invite/v1/box/"


def box_key(shared: bytes, side: str) -> bytes:
    """The secretbox key of one side ("i" or "j"): HKDF-SHA256 of the SPAKE2 key, no salt, as magic-wormhole."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=BOX_INFO + side.encode()).derive(shared)


def session_id(msg_a: bytes, msg_b: bytes) -> bytes:
    """What one exchange is: its two SPAKE2 messages, hashed. Someone in the middle runs two."""
    return hashlib.sha256(SESSION_CONTEXT + msg_a + msg_b).digest()


def route_bytes(session: bytes, mailbox_address: str, relay: str) -> bytes:
    """What a route signature covers: this exchange, the mailbox and the relay (neither holds a NUL)."""
    return session + mailbox_address.encode("utf-8") + b"\x00" + relay.encode("utf-8")


@dataclass(frozen=True)
class Claims:
    """What one home says about itself: its key file (with the sealing binding), mailbox and relay. Claims only.

    `signer` is this home's own key, present only on the claims it sends: it signs the route."""

    keyfile: KeyFile
    mailbox: str
    relay: str
    signer: signing.SecretKey | None = field(default=None, compare=False, repr=False)

    def to_json(self, session: bytes) -> dict[str, Any]:
        assert self.signer is not None, "only this home's own claims are sent"
        relay = relayurl.public(self.relay)
        sig = signing.sign(self.signer, ROUTE_CONTEXT, route_bytes(session, self.mailbox, relay))
        kf = self.keyfile.to_bytes().decode("utf-8")
        return {"kind": "claims", "keyfile": kf, "mailbox": self.mailbox, "relay": relay, "signature": sig.hex()}

    def where(self, source: str) -> whereabouts.Where:
        assert self.keyfile.sealing is not None
        return whereabouts.from_binding(sealing.parse_carried(self.keyfile.sealing), relay=self.relay, source=source)


_CLAIM_FIELDS = {"kind", "keyfile", "mailbox", "relay", "signature"}


def parse_claims(body: Any, session: bytes) -> Claims:
    """Their claims, refused unless the sealing binding is by their key, the mailbox is its own, and their
    key signed the mailbox and relay for this exchange."""
    if not isinstance(body, dict) or body.get("kind") != "claims" or set(body) != _CLAIM_FIELDS:
        raise MalformedError("the other side's claims are not in gage's form")
    kf_text, mb, relay, sig = body["keyfile"], body["mailbox"], body["relay"], body["signature"]
    if not all(isinstance(v, str) for v in (kf_text, mb, relay, sig)):
        raise MalformedError("the other side's claims are not in gage's form")
    kf = KeyFile.parse(kf_text.encode("utf-8"))
    if kf.sealing is None:
        raise MalformedError("the other side's key file carries no sealing binding (no mailbox)")
    binding = sealing.parse_carried(kf.sealing)
    if binding.signing_key != kf.key or not binding.verifies():
        raise MalformedError("the other side's sealing binding is not signed by their key")
    if mb != sealing.mailbox_address(binding.sealing_key):
        raise MalformedError("the other side's mailbox is not the one their sealing key derives")
    if not relay or len(relay) > whereabouts.MAX_TEXT or any(ord(c) < 32 or c == "\x7f" for c in relay):
        raise MalformedError("the other side's relay is not one line of text")
    if relayurl.has_userinfo(relay):
        raise MalformedError("the other side's relay names a user or password")
    try:
        signature = bytes.fromhex(sig)
    except ValueError:
        raise MalformedError("the other side's route signature is not hex") from None
    if not signing.verifies(kf.key, ROUTE_CONTEXT, route_bytes(session, mb, relay), signature):
        raise MalformedError("the other side's mailbox and relay are not signed by their key for this exchange")
    return Claims(kf, mb, relay)


class Session:
    """The shared key, once the PAKE finished: a box each way, and what this exchange is."""

    def __init__(self, key: bytes, mine: str, session: bytes = b"") -> None:
        self._mine = nacl.secret.SecretBox(box_key(key, mine))
        self._theirs = nacl.secret.SecretBox(box_key(key, "j" if mine == "i" else "i"))
        self.id = session

    def seal(self, body: dict[str, Any]) -> str:
        """Lower-case hex of the 24-byte nonce and the ciphertext (spec/relay.md section 10)."""
        return bytes(self._mine.encrypt(strictjson.dumps(body))).hex()

    def open(self, box: object) -> Any:
        """Their sealed JSON; MalformedError if it does not open with the shared key."""
        try:
            if not isinstance(box, str):
                raise ValueError
            return strictjson.loads(self._theirs.decrypt(bytes.fromhex(box)), limit=rendezvous.MAX_MESSAGE, what="invite box")
        except (ValueError, nacl.exceptions.CryptoError):
            raise MalformedError("it does not open with the key the code gives") from None
