"""Generate spec/vectors/sealed-identity.json: a passphrase-protected identity file (spec/keys.md section 11).

Made with PyNaCl directly from the rules in the spec, never with gage's own seal code, so
the vector checks that code rather than copies it. Deterministic: the seed, salt and nonce
are fixed (a real seal draws salt and nonce at random). The cost is libsodium's minimum
memory and two passes, so the test is quick; gage writes at the documented cost.

    python spec/vectors/generate_sealed.py          # rewrite sealed-identity.json
    python spec/vectors/generate_sealed.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import nacl.pwhash
import nacl.secret
import nacl.signing

HERE = Path(__file__).resolve().parent
OUT = HERE / "sealed-identity.json"
SEED = bytes(range(32))
RETIRED_SEED = bytes(range(32, 64))
PASSPHRASE = "correct horse battery staple"
SALT = bytes.fromhex("00112233445566778899aabbccddeeff")
NONCE = bytes.fromhex("0102030405060708090a0b0c0d0e0f101112131415161718")
OPS, MEM = 2, 8192


def dumps(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def build() -> str:
    key = "ed25519:" + bytes(nacl.signing.SigningKey(SEED).verify_key).hex()
    old = "ed25519:" + bytes(nacl.signing.SigningKey(RETIRED_SEED).verify_key).hex()
    retired = {
        "key": old,
        "name": "alice",
        "secret": RETIRED_SEED.hex(),
        "reason": "superseded",
        "retired_at": "2026-02-01T09:00:00Z",
        "replacement": key,
        "statement": "(the signed statement file, as text)",
        "origin": "this home",
    }
    plain = dumps({"gage-identity": 1, "name": "alice", "secret": SEED.hex(), "key": key, "retired": [retired]}) + b"\n"
    k = nacl.pwhash.argon2id.kdf(32, PASSPHRASE.encode("utf-8"), SALT, opslimit=OPS, memlimit=MEM)
    box = nacl.secret.SecretBox(k).encrypt(plain, NONCE).ciphertext
    sealed = {
        "gage-sealed": 1,
        "kdf": "argon2id13",
        "opslimit": OPS,
        "memlimit": MEM,
        "salt": SALT.hex(),
        "nonce": NONCE.hex(),
        "box": base64.b64encode(box).decode("ascii"),
    }
    public = {"gage-identity": 1, "name": "alice", "key": key, "retired": [{**retired, "secret": None}], "sealed": sealed}
    file = dumps(public) + b"\n"
    doc = {
        "about": "spec/keys.md section 11. `file` is identity.json as gage writes it with this salt and nonce; "
        "opening `file.sealed` with `passphrase` gives `plain` (the plain identity file); `wrong` is refused.",
        "passphrase": PASSPHRASE,
        "wrong": "correct horse battery stapler",
        "derived_key": k.hex(),
        "plain": plain.decode("utf-8"),
        "file": file.decode("utf-8"),
        "public_key": key,
    }
    return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"


if __name__ == "__main__":
    text = build()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text(encoding="utf-8") == text else 1)
    OUT.write_text(text, encoding="utf-8")
