"""Generate spec/vectors/invite.json: invite codes, rendezvous subjects, SPAKE2 and the sealed boxes.

Made here from the rules in spec/relay.md section 10 with hashlib, PyNaCl, `cryptography`'s HKDF
and the `spake2` package (with fixed randomness), never with gage's invite code, so the vectors check that code
rather than copy it. Deterministic throughout.

    python spec/vectors/generate_invite.py          # rewrite invite.json
    python spec/vectors/generate_invite.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.secret
import nacl.signing
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from spake2 import SPAKE2_A, SPAKE2_B

HERE = Path(__file__).resolve().parent
OUT = HERE / "invite.json"
ID_A, ID_B = b"gage/invite/v1/inviter", b"gage/invite/v1/joiner"


def subject(side: str, n: int) -> str:
    return "gage.rv." + hashlib.sha256(b"gage/rendezvous/v1\x00" + side.encode() + b"\x00" + str(n).encode()).hexdigest()[:32]


def box_key(side: str, k: bytes) -> bytes:
    """HKDF-SHA256, no salt, info "gage/invite/v1/box/" || side, 32 bytes."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"gage/invite/v1/box/" + side.encode()).derive(k)


def session_id(msg_a: bytes, msg_b: bytes) -> bytes:
    return hashlib.sha256(b"gage/invite/v1/session\x00" + msg_a + msg_b).digest()


def route(session: bytes, mailbox: str, relay: str) -> bytes:
    return session + mailbox.encode() + b"\x00" + relay.encode()


def fixed(seed: bytes) -> Any:
    """Entropy for SPAKE2 from a seed: SHA-512 in counter mode (only so the vectors are fixed)."""
    state = {"n": 0}

    def entropy(size: int) -> bytes:
        out = b""
        while len(out) < size:
            out += hashlib.sha512(seed + state["n"].to_bytes(4, "big")).digest()
            state["n"] += 1
        return out[:size]

    return entropy


def build() -> dict[str, Any]:
    code = "7-tiger-guitarist"
    a = SPAKE2_A(code.encode(), idA=ID_A, idB=ID_B, entropy_f=fixed(b"alice"))
    b = SPAKE2_B(code.encode(), idA=ID_A, idB=ID_B, entropy_f=fixed(b"bob"))
    msg_a, msg_b = a.start(), b.start()
    k = a.finish(msg_b)
    assert k == b.finish(msg_a)
    wrong = SPAKE2_B(b"7-tiger-gadgetry", idA=ID_A, idB=ID_B, entropy_f=fixed(b"bob"))
    msg_w = wrong.start()
    k_wrong = wrong.finish(msg_a)
    plaintext = b'{"kind":"outcome","matched":true,"why":""}'
    nonce = bytes(24)
    sid = session_id(msg_a, msg_b)
    other = session_id(msg_a, msg_w)
    signer = nacl.signing.SigningKey(hashlib.sha256(b"gage/vectors/invite/bob").digest())
    mailbox, relay = "mb" + "0" * 40, "nats://relay.example:4222"
    signed = route(sid, mailbox, relay)
    sig = signer.sign(b"gage/invite-route/v1\x00" + signed).signature
    return {
        "about": "spec/relay.md section 10. Made by generate_invite.py from the rules, not from gage's code.",
        "codes": {
            "valid": {"7-tiger-guitarist": "7-tiger-guitarist", "  7-Tiger-Guitarist ": "7-tiger-guitarist", "9999-orca-ohio": "9999-orca-ohio"},
            "refused": ["7-guitar-orbit", "tiger-guitarist", "07-tiger-guitarist", "7-guitarist-tiger", "10000-orca-ohio", "0-orca-ohio", "7 tiger guitarist"],
        },
        "subjects": [{"nameplate": n, "side": s, "subject": subject(s, n)} for n in (1, 7, 99, 9999) for s in ("i", "j")],
        "spake2": {
            "password": code,
            "idA": ID_A.decode(),
            "idB": ID_B.decode(),
            "msg_a": msg_a.hex(),
            "msg_b": msg_b.hex(),
            "key": k.hex(),
            "wrong_password": "7-tiger-gadgetry",
            "msg_b_wrong": msg_w.hex(),
            "key_wrong": k_wrong.hex(),
        },
        "boxes": {
            "key": k.hex(),
            "box_key_i": box_key("i", k).hex(),
            "box_key_j": box_key("j", k).hex(),
            "plaintext": plaintext.decode(),
            "nonce": nonce.hex(),
            "sealed_by_i": bytes(nacl.secret.SecretBox(box_key("i", k)).encrypt(plaintext, nonce)).hex(),
        },
        "route": {
            "session": sid.hex(),
            "session_other": other.hex(),
            "signing_key": "ed25519:" + bytes(signer.verify_key).hex(),
            "mailbox": mailbox,
            "relay": relay,
            "signed_bytes": signed.hex(),
            "signature": sig.hex(),
            "swapped_relay": "nats://mallory.example:4222",
        },
    }


def main() -> int:
    text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
    if "--check" in sys.argv:
        return 0 if OUT.exists() and OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
