"""Generate spec/vectors/hybrid.json: hybrid (Ed25519 + ML-DSA-65) keys, bundles, statements, and
every downgrade and swap case a receiver must refuse.

Independent of gage: nothing here imports gage's code but its word lists (the one input taken
from gage, as in generate.py). Keys, key text, fingerprints, words, manifests, ids and both
signature halves are made here from the rules in spec/bundle.md sections 6-7, spec/keys.md
sections 2 and 11 and spec/words.md, with pyca `cryptography` for both Ed25519 and ML-DSA-65
(gage itself signs Ed25519 with PyNaCl), hashlib, and PyNaCl's Argon2id.

ML-DSA-65 signing is hedged (randomised, FIPS 204 section 3.4), so running this again gives new
signature bytes: the keys, manifests, ids and words are deterministic, the signatures are not.
`--check` therefore rebuilds everything deterministic, compares it with the committed file,
and verifies every committed signature half with `cryptography`, instead of comparing bytes.

    python spec/vectors/generate_hybrid.py          # rewrite hybrid.json
    python spec/vectors/generate_hybrid.py --check  # exit 1 if hybrid.json disagrees with the rules
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.pwhash
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519, mldsa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from gage.format.words.wordlist import EVEN, ODD  # noqa: E402

OUT = HERE / "hybrid.json"
MANIFEST = b"gage/manifest/v1\x00"
RETIRING = b"gage/key-statement/v1/retiring\x00"
REPLACEMENT = b"gage/key-statement/v1/replacement\x00"
ID_CONTEXT = b"gage/id/v1\x00"
STATEMENT_ID = b"gage/key-statement-id/v1\x00"
FINGERPRINT = b"gage/fingerprint/v1\x00"
WORDS_SALT = b"gage/words/v1\x00\x00\x00"
CREATED = "2026-06-01T12:00:00Z"
RETIRED_AT = "2026-06-02T09:00:00Z"
PEOPLE = ("alice", "alice-new", "carol-classical")


def seed(label: str, half: str) -> bytes:
    return hashlib.sha256(b"gage hybrid vector seed\x00" + label.encode() + b"\x00" + half.encode()).digest()


class Person:
    """A key made from fixed seeds: hybrid unless the label says classical."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.ed_seed = seed(label, "ed25519")
        self.ed = ed25519.Ed25519PrivateKey.from_private_bytes(self.ed_seed)
        self.ed_pub = self.ed.public_key().public_bytes_raw()
        self.hybrid = not label.endswith("classical")
        self.pq_seed = seed(label, "ml-dsa-65") if self.hybrid else None
        self.pq = mldsa.MLDSA65PrivateKey.from_seed_bytes(self.pq_seed) if self.pq_seed else None
        self.pq_pub = self.pq.public_key().public_bytes_raw() if self.pq else b""

    @property
    def key(self) -> bytes:
        return self.ed_pub + self.pq_pub

    @property
    def text(self) -> str:
        return ("ed25519+mldsa65:" if self.hybrid else "ed25519:") + self.key.hex()

    @property
    def half_text(self) -> str:
        return "ed25519:" + self.ed_pub.hex()

    def sign(self, context: bytes, message: bytes) -> bytes:
        """spec/bundle.md section 6: Ed25519 over context || message, then ML-DSA-65 over the same bytes, ctx = prefix."""
        data = context + message
        out = self.ed.sign(data)
        if self.pq is not None:
            out += self.pq.sign(data, context.rstrip(b"\x00"))
        return out


def fingerprint(key: bytes) -> str:
    # 96 bits, in groups of four hex digits (spec/words.md, "Fingerprints").
    h = hashlib.sha256(FINGERPRINT + key).hexdigest() if len(key) == 1984 else key.hex()
    return "-".join(h[i : i + 4] for i in range(0, 24, 4))


def words(key: bytes) -> list[list[str]]:
    d = nacl.pwhash.argon2id.kdf(16, key, WORDS_SALT, opslimit=2, memlimit=64 * 1024 * 1024)
    return [[EVEN[d[2 * i]], ODD[d[2 * i + 1]]] for i in range(4)]


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def manifest(sender_text: str, name: str, files: dict[str, bytes], nonce: str, subject: str) -> bytes:
    return canonical(
        {
            "gage": 1,
            "kind": "share",
            "created": CREATED,
            "nonce": hashlib.sha256(b"gage hybrid vector nonce\x00" + nonce.encode()).hexdigest()[:32],
            "sender": {"key": sender_text, "name": name},
            "thread": None,
            "parent": None,
            "to": [],
            "subject": subject,
            "files": [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in sorted(files.items())],
            "chain": [],
        }
    )


def bundle_id(raw: bytes) -> str:
    return hashlib.sha256(ID_CONTEXT + raw).hexdigest()


def build(people: dict[str, Person]) -> dict[str, Any]:
    alice, new, carol = people["alice"], people["alice-new"], people["carol-classical"]
    files = {"report.txt": b"the numbers, signed twice\n"}
    raw = manifest(alice.text, "alice", files, "good", "hybrid vector")
    other = manifest(alice.text, "alice", {"other.txt": b"another bundle\n"}, "other", "hybrid vector, another bundle")
    assert alice.pq is not None
    pq_ctx = MANIFEST.rstrip(b"\x00")
    data = MANIFEST + raw
    ed_sig = alice.ed.sign(data)
    pq_sig = alice.pq.sign(data, pq_ctx)
    half = manifest(alice.half_text, "alice", files, "half", "signed with the Ed25519 half alone")
    classical = manifest(carol.text, "carol", files, "classical", "an Ed25519-only bundle")

    def case(name: str, description: str, m: bytes, sig: bytes, valid: bool, *, downgrade: bool = False) -> dict[str, Any]:
        return {
            "name": name,
            "description": description,
            "manifest": b64(m),
            "signature": b64(sig),
            "files": {p: b64(d) for p, d in files.items()},
            "id": bundle_id(m),
            "signature_length": len(sig),
            "valid": valid,
            "stage": None if valid else "signature",
            # A receiver that confirmed alice's hybrid key: invalid at stage signature even though the bundle checks out alone.
            "downgrade_for_a_receiver_who_confirmed_alice": downgrade,
        }

    bundles = [
        case("hybrid", "both halves over the same bytes: valid", raw, ed_sig + pq_sig, True),
        case("classical", "an Ed25519-only key and a 64-byte signature: valid, classical-only", classical, carol.sign(MANIFEST, classical), True),
        case("ed25519-only", "a hybrid key with only the Ed25519 half (64 bytes)", raw, ed_sig, False),
        case("mldsa-only", "a hybrid key with only the ML-DSA-65 half (3309 bytes)", raw, pq_sig, False),
        case("mldsa-from-another-bundle", "the ML-DSA-65 half is alice's signature over another manifest", raw, ed_sig + alice.pq.sign(MANIFEST + other, pq_ctx), False),
        case("ed25519-from-another-bundle", "the Ed25519 half is alice's signature over another manifest", raw, alice.ed.sign(MANIFEST + other) + pq_sig, False),
        case("mldsa-statement-context", "the ML-DSA-65 half made in the retiring statement context", raw, ed_sig + alice.pq.sign(RETIRING + raw, RETIRING.rstrip(b"\x00")), False),
        case("mldsa-no-context", "the ML-DSA-65 half made with an empty context string", raw, ed_sig + alice.pq.sign(data), False),
        case("mldsa-no-prefix", "the ML-DSA-65 half over the bare manifest bytes (right context string, no prefix)", raw, ed_sig + alice.pq.sign(raw, pq_ctx), False),
        case("halves-swapped", "ML-DSA-65 first, then Ed25519", raw, pq_sig + ed_sig, False),
        case("one-byte-short", "3372 bytes", raw, (ed_sig + pq_sig)[:-1], False),
        case("other-keys-mldsa", "the ML-DSA-65 half by another hybrid key (alice-new)", raw, ed_sig + new.sign(MANIFEST, raw)[64:], False),
        case("ed25519-half-alone", "sender is alice's Ed25519 half as a classical key, validly signed by it: valid on its own, "
             "a downgrade for a receiver who confirmed alice's hybrid key", half, alice.ed.sign(MANIFEST + half), True, downgrade=True),
    ]  # fmt: skip

    def statement(key: Person | str, replacement: Person | None) -> bytes:
        return canonical(
            {
                "gage-key-statement": 1,
                "key": key if isinstance(key, str) else key.text,
                "name": "alice",
                "reason": "superseded",
                "retired_at": RETIRED_AT,
                "replacement": replacement.text if replacement else None,
            }
        )

    def signed(raw_st: bytes, sig: bytes, rsig: bytes | None) -> bytes:
        return canonical(
            {
                "gage-signed-key-statement": 1,
                "statement": raw_st.decode("utf-8"),
                "signature": sig.hex(),
                "replacement_signature": rsig.hex() if rsig else None,
            }
        ) + b"\n"

    st = statement(alice, new)
    full_r = alice.sign(RETIRING, st)
    full_n = new.sign(REPLACEMENT, st)
    st_half = statement(alice.half_text, None)
    upgrade = statement(carol, new)
    statements = [
        {"name": "hybrid-superseded", "description": "alice's hybrid key names alice-new's; both sign with both halves",
         "file": b64(signed(st, full_r, full_n)), "id": hashlib.sha256(STATEMENT_ID + st).hexdigest(),
         "signed_by_key": True, "signed_by_replacement": True, "outcome": "applied"},
        {"name": "retiring-ed25519-half-only", "description": "the retiring signature is only its Ed25519 half",
         "file": b64(signed(st, full_r[:64], full_n)), "signed_by_key": False, "signed_by_replacement": True, "outcome": "new-key-only"},
        {"name": "retiring-mldsa-from-replacement-role", "description": "the retiring signature's ML-DSA half made in the replacement context",
         "file": b64(signed(st, full_r[:64] + alice.pq.sign(REPLACEMENT + st, REPLACEMENT.rstrip(b"\x00")), full_n)),
         "signed_by_key": False, "signed_by_replacement": True, "outcome": "new-key-only"},
        {"name": "replacement-ed25519-half-only", "description": "the replacement signature is only its Ed25519 half",
         "file": b64(signed(st, full_r, full_n[:64])), "signed_by_key": True, "signed_by_replacement": False, "outcome": "replacement-unsigned"},
        {"name": "speaks-for-the-ed25519-half", "description": "a statement for alice's Ed25519 half, signed by it: a downgrade",
         "file": b64(signed(st_half, alice.ed.sign(RETIRING + st_half), None)), "signed_by_key": True, "signed_by_replacement": False,
         "outcome": "downgraded"},
        {"name": "upgrade", "description": "what `gage key upgrade` makes: a classical key (carol) names a hybrid one; 64 + 3373 bytes",
         "file": b64(signed(upgrade, carol.sign(RETIRING, upgrade), new.sign(REPLACEMENT, upgrade))),
         "signed_by_key": True, "signed_by_replacement": True, "outcome": None},
    ]  # fmt: skip

    key_files = [
        {"name": "hybrid", "file": b64(canonical({"gage-key": 1, "key": alice.text, "name": "alice"}) + b"\n"), "valid": True,
         "key": alice.text},
        {"name": "ed25519-half", "file": b64(canonical({"gage-key": 1, "key": alice.half_text, "name": "alice"}) + b"\n"), "valid": True,
         "key": alice.half_text, "mismatch_for_a_receiver_who_confirmed_alice": True},
        {"name": "hybrid-short", "file": b64(canonical({"gage-key": 1, "key": alice.text[:-2], "name": "alice"}) + b"\n"), "valid": False,
         "field": "key"},
        {"name": "hybrid-prefix-classical-length", "file": b64(canonical({"gage-key": 1, "key": "ed25519+mldsa65:" + alice.ed_pub.hex(), "name": "a"}) + b"\n"),
         "valid": False, "field": "key"},
    ]  # fmt: skip

    return {
        "about": "Hybrid keys (spec/bundle.md sections 6-7, spec/keys.md sections 2 and 12, spec/words.md). Made by "
        "spec/vectors/generate_hybrid.py, which does not use gage's code. A hybrid key is the Ed25519 public key (32 "
        "bytes) then the ML-DSA-65 one (1952); a hybrid signature is Ed25519 (64) then ML-DSA-65 (3309) over the same "
        "`context || message`, the ML-DSA context string being the context without its NUL. `bundles`: write "
        "manifest.json, manifest.sig and payload/<path>; `valid` and `stage` are what a check of the folder gives. "
        "ML-DSA signatures are hedged, so the signature bytes change when this file is regenerated.",
        "contexts": {"manifest": MANIFEST.decode(), "retiring": RETIRING.decode(), "replacement": REPLACEMENT.decode()},
        "people": [
            {
                "label": p.label,
                "ed25519_seed_hex": p.ed_seed.hex(),
                "mldsa65_seed_hex": p.pq_seed.hex() if p.pq_seed else None,
                "ed25519_public_hex": p.ed_pub.hex(),
                "mldsa65_public_hex": p.pq_pub.hex() or None,
                "key": p.text,
                "ed25519_half": p.half_text,
                "fingerprint": fingerprint(p.key),
                "ed25519_half_fingerprint": fingerprint(p.ed_pub),
                "words": words(p.key),
            }
            for p in people.values()
        ],
        "bundles": bundles,
        "statements": statements,
        "key_files": key_files,
    }


def _deterministic(doc: dict[str, Any]) -> Any:
    """Everything but signature bytes (which ML-DSA's hedging makes new each run)."""

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("signature", "file")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return strip(doc)


def _verifies(text: str, context: bytes, message: bytes, sig: bytes) -> bool:
    """Key text's signature over context || message, both halves for a hybrid key (spec/bundle.md section 6)."""
    hybrid = text.startswith("ed25519+mldsa65:")
    key = bytes.fromhex(text.partition(":")[2])
    if len(sig) != (3373 if hybrid else 64):
        return False
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(key[:32]).verify(sig[:64], context + message)
        if hybrid:
            mldsa.MLDSA65PublicKey.from_public_bytes(key[32:]).verify(sig[64:], context + message, context.rstrip(b"\x00"))
    except InvalidSignature:
        return False
    return True


def check(doc: dict[str, Any], people: dict[str, Person]) -> list[str]:
    """The committed file against the rules: deterministic parts equal, every signature's claim true."""
    problems = []
    if _deterministic(doc) != _deterministic(build(people)):
        problems.append("keys, manifests, ids or words differ from what the rules give")
    for c in doc["bundles"]:
        raw = base64.b64decode(c["manifest"])
        sender = json.loads(raw)["sender"]["key"]
        ok = _verifies(sender, MANIFEST, raw, base64.b64decode(c["signature"]))
        if ok != c["valid"]:
            problems.append(f"bundle {c['name']}: signature verifies is {ok}, the file says valid {c['valid']}")
    for s in doc["statements"]:
        f = json.loads(base64.b64decode(s["file"]))
        st = f["statement"].encode()
        body = json.loads(st)
        got = _verifies(body["key"], RETIRING, st, bytes.fromhex(f["signature"]))
        rs = f["replacement_signature"]
        rgot = bool(rs) and _verifies(body["replacement"], REPLACEMENT, st, bytes.fromhex(rs))
        if (got, rgot) != (s["signed_by_key"], s["signed_by_replacement"]):
            problems.append(f"statement {s['name']}: signatures say {(got, rgot)}")
    return problems


def main() -> int:
    people = {label: Person(label) for label in PEOPLE}
    if sys.argv[1:] == ["--check"]:
        problems = check(json.loads(OUT.read_text(encoding="utf-8")), people)
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    doc = build(people)
    OUT.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    problems = check(doc, people)
    assert not problems, problems
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
