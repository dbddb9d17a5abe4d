"""Generate spec/vectors/relay.json: sealing keys, bindings, mailbox addresses, envelopes and directory records.

Deterministic but for one part: keys come from fixed seeds, times are fixed and Ed25519 is
deterministic. Everything is made here from the rules in spec/relay.md with hashlib, PyNaCl
and a bech32 written out below, never with gage's relay code, so the vectors check that
code rather than copy it. The one bundle uses gage's manifest writer (the manifest has its
own vectors). age encryption is randomised, so the sealed envelope is made once (with
pyrage) and kept as long as it still opens to the plaintext here.

    python spec/vectors/generate_relay.py          # rewrite relay.json
    python spec/vectors/generate_relay.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import sys
from pathlib import Path
from typing import Any

import nacl.public
import nacl.signing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from gage.format.manifest import FileEntry, Manifest, Party  # noqa: E402

OUT = HERE / "relay.json"
BINDING = b"gage/sealing-binding/v1\x00"
RECORD = b"gage/directory-record/v1\x00"
MAILBOX = b"gage/mailbox/v1\x00"
MANIFEST = b"gage/manifest/v1\x00"
T1, T2, T3 = "2026-05-01T09:00:00Z", "2026-06-01T09:00:00Z", "2026-07-01T09:00:00Z"
MAGIC = b"gage-envelope/v1\n"

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _polymod(values: list[int]) -> int:
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        b = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if ((b >> i) & 1) else 0
    return chk


def bech32(hrp: str, data: bytes) -> str:
    acc = bits = 0
    five: list[int] = []
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    pm = _polymod(expanded + five + [0] * 6) ^ 1
    return hrp + "1" + "".join(CHARSET[d] for d in five + [(pm >> 5 * (5 - i)) & 31 for i in range(6)])


def seed(name: str) -> bytes:
    return hashlib.sha256(b"gage-vector/relay-seed/" + name.encode()).digest()


def signer(name: str) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(seed(name))


def x25519(name: str) -> tuple[bytes, bytes]:
    secret = hashlib.sha256(b"gage-vector/relay-x25519/" + name.encode()).digest()
    return secret, bytes(nacl.public.PrivateKey(secret).public_key)


def key(name: str) -> str:
    return "ed25519:" + bytes(signer(name).verify_key).hex()


def recipient(name: str) -> str:
    return bech32("age", x25519(name)[1])


def identity(name: str) -> str:
    return bech32("age-secret-key-", x25519(name)[0]).upper()


def address(rcpt_public: bytes) -> str:
    return "mb" + hashlib.sha256(MAILBOX + rcpt_public).hexdigest()[:40]


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def binding(name: str, sealing_of: str | None = None, at: str = T1, signed_by: str | None = None) -> dict[str, str]:
    raw = canonical({"gage-sealing-binding": 1, "signing_key": key(name), "sealing_key": recipient(sealing_of or name), "bound_at": at})
    sig = signer(signed_by or name).sign(BINDING + raw).signature
    return {"binding": raw.decode(), "signature": sig.hex()}


def signed_record(raw: bytes, by: str) -> bytes:
    return canonical({"gage-signed-directory-record": 1, "record": raw.decode(), "signature": signer(by).sign(RECORD + raw).signature.hex()})


def record_raw(
    handle: str, name: str, *, b: dict[str, str] | None = None, mailbox: str | None = None,
    relay: str | None = "nats://relay.example:4222", published_at: str = T2,
) -> bytes:
    b = b or binding(name)
    sealing_name = json.loads(b["binding"])["sealing_key"]
    pub = None
    for who in ("bob", "mallory", "alice"):
        if recipient(who) == sealing_name:
            pub = x25519(who)[1]
    assert pub is not None
    return canonical(
        {
            "gage-directory-record": 1,
            "handle": handle,
            "signing_key": key(name),
            "sealing": b,
            "mailbox": mailbox or address(pub),
            "relay": relay,
            "published_at": published_at,
        }
    )


def the_bundle() -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    files = [("notes/q3.txt", b"the numbers for Q3\n"), ("empty", b"")]
    entries = [FileEntry(p, len(d), hashlib.sha256(d).hexdigest()) for p, d in files]
    sender = Party(key=bytes(signer("alice").verify_key), name="alice")
    m = Manifest.build(kind="share", sender=sender, files=entries, nonce="00" * 16, created=T1, subject="Q3")
    sig = signer("alice").sign(MANIFEST + m.raw).signature
    data = dict(files)
    return m.raw, sig, [(f.path, data[f.path]) for f in m.files]


def entry(path: str, data: bytes, tag: bytes = b"F", size: int | None = None) -> bytes:
    p = path.encode()
    return tag + struct.pack(">I", len(p)) + p + struct.pack(">Q", len(data) if size is None else size) + data


def plaintext(raw: bytes, sig: bytes, entries: list[bytes], end: bytes = b"E") -> bytes:
    return MAGIC + struct.pack(">I", len(raw)) + raw + struct.pack(">I", len(sig)) + sig + b"".join(entries) + end


def sealing_file(name: str) -> dict[str, Any]:
    """A protected home's sealing.json (spec/relay.md section 2): the X25519 secret in a secretbox
    under BLAKE2b-256(the binder's Ed25519 seed, person "gage/sealingfile"), a fixed nonce here."""
    import nacl.secret

    file_key = hashlib.blake2b(seed(name), digest_size=32, person=b"gage/sealingfile").digest()
    nonce = hashlib.sha256(b"gage/vector/sealing-file").digest()[:24]
    box = nacl.secret.SecretBox(file_key).encrypt(x25519(name)[0], nonce).ciphertext
    doc = {"gage-sealing-key": 1, "sealed": {"gage-sealed-sealing-key": 1, "nonce": nonce.hex(), "box": box.hex()}, "sealing": binding(name)}
    return {"of": name, "file_key": file_key.hex(), "file": canonical(doc).decode("ascii")}


def big_envelope() -> dict[str, Any]:
    """A big envelope's mailbox message and metas (spec/relay.md section 4), from the rules alone."""
    size, chunk = 300_000, 131072
    stream = b"".join(hashlib.sha256(b"gage/vector/big-envelope" + struct.pack(">I", i)).digest() for i in range(size // 32 + 1))[:size]
    name = hashlib.sha256(b"gage/vector/object-name").hexdigest()[:32]
    nuid = hashlib.sha256(b"gage/vector/nuid").hexdigest()[:32]
    bucket = "GAGE_OB_" + address(x25519("bob")[1])
    digest = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(stream).digest()).decode()
    chunks = -(-size // chunk)

    def meta(**over: Any) -> dict[str, Any]:
        m = {"name": name, "bucket": bucket, "nuid": nuid, "size": size, "chunks": chunks, "digest": digest,
             "deleted": False, "options": {"max_chunk_size": chunk}}
        return {**m, **over}

    other = "SHA-256=" + base64.urlsafe_b64encode(bytes(32)).decode()
    metas = [
        ("another size", canonical(meta(size=size - 1))),
        ("another digest", canonical(meta(digest=other, nuid="mallory"))),
        ("not JSON", b"{"),
        ("the sender's", canonical(meta())),
        ("a later one that says the same (never read)", canonical(meta(nuid="later"))),
    ]
    headers = {"Gage-Envelope": "1", "Nats-Msg-Id": hashlib.sha256(b"gage/vector/msg-id").hexdigest()[:32],
               "Gage-Object": name, "Gage-Object-Size": str(size), "Gage-Object-Digest": digest}
    bad = [
        ("name-short", {"Gage-Object": name[:31]}),
        ("name-upper", {"Gage-Object": name.upper()}),
        ("size-leading-zero", {"Gage-Object-Size": "0" + str(size)}),
        ("size-negative", {"Gage-Object-Size": "-1"}),
        ("size-without-digest", {"Gage-Object-Digest": None}),
        ("digest-without-size", {"Gage-Object-Size": None}),
        ("digest-unpadded", {"Gage-Object-Digest": digest.rstrip("=")}),
        ("digest-hex", {"Gage-Object-Digest": "SHA-256=" + hashlib.sha256(stream).hexdigest()}),
    ]
    refused = []
    for why, edit in bad:
        h = {**headers, **edit}
        refused.append({"why": why, "headers": {k: v for k, v in h.items() if v is not None}})
    return {
        "envelope": {"rule": "SHA-256(\"gage/vector/big-envelope\" || u32 i) for i = 0, 1, ... concatenated, cut to size",
                     "size": size, "sha256": hashlib.sha256(stream).hexdigest()},
        "bucket": bucket,
        "message": {"subject": "gage.mb." + address(x25519("bob")[1]), "body_b64": "", "headers": headers},
        "chunk_subject": f"$O.{bucket}.C.{nuid}",
        "chunk_sizes": [min(chunk, size - i) for i in range(0, size, chunk)],
        "meta_subject": f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}",
        "metas": [{"what": w, "data_b64": b64(d)} for w, d in metas],
        "taken": 3,
        "older_message": {"headers": {"Gage-Envelope": "1", "Nats-Msg-Id": name, "Gage-Object": name}, "taken": 0},
        "refused_headers": refused,
    }


def build(old: dict[str, Any] | None) -> dict[str, Any]:
    raw, sig, files = the_bundle()
    good = plaintext(raw, sig, [entry(p, d) for p, d in files])
    (p1, d1), (p2, d2) = files
    refused = [
        ("magic", b"gage-envelope/v2\n" + good[len(MAGIC) :]),
        ("link", plaintext(raw, sig, [entry(p1, d1, tag=b"L")])),
        ("absolute", plaintext(raw, sig, [entry("/" + p1, d1)])),
        ("dotdot", plaintext(raw, sig, [entry("../" + p1, d1)])),
        ("duplicate", plaintext(raw, sig, [entry(p1, d1), entry(p1, d1)])),
        ("order", plaintext(raw, sig, [entry(p2, d2), entry(p1, d1)])),
        ("unlisted", plaintext(raw, sig, [entry(p1, d1), entry(p2, d2), entry("extra.txt", b"")])),
        ("size", plaintext(raw, sig, [entry(p1, d1 + b"more"), entry(p2, d2)])),
        ("missing", plaintext(raw, sig, [entry(p1, d1)])),
        ("truncated", good[:-5]),
        ("trailing", good + b"\x00"),
        ("signature-length", MAGIC + struct.pack(">I", len(raw)) + raw + struct.pack(">I", 63) + sig[:63]),
        ("manifest", MAGIC + struct.pack(">I", 7) + b'{"a":1}' + struct.pack(">I", 64) + sig + b"E"),
    ]
    # The one sealed envelope: kept while it still opens to `good` with bob's identity.
    sealed = None
    if old is not None:
        prev = old.get("sealed", {})
        try:
            import pyrage
            from pyrage import x25519 as ax

            if pyrage.decrypt(base64.b64decode(prev["age_b64"]), [ax.Identity.from_str(identity("bob"))]) == good:
                sealed = prev["age_b64"]
        except Exception:
            sealed = None
    if sealed is None:
        import pyrage
        from pyrage import x25519 as ax

        sealed = b64(pyrage.encrypt(good, [ax.Recipient.from_str(recipient("bob"))]))

    bob_record = record_raw("bob", "bob")
    hostile = [
        ("swapped-sealing-key", "refused", canonical({**json.loads(signed_record(bob_record, "bob")),
                                                       "record": record_raw("bob", "bob", b=binding("bob")).decode().replace(recipient("bob"), recipient("mallory"))})),
        ("binding-by-another-key", "refused", signed_record(record_raw("bob", "bob", b=binding("bob", sealing_of="mallory", signed_by="mallory")), "bob")),
        ("record-by-another-key", "refused", signed_record(bob_record, "mallory")),
        ("mailbox-elsewhere", "refused", signed_record(record_raw("bob", "bob", mailbox="mb" + "0" * 40), "bob")),
        ("other-handle", "refused", signed_record(record_raw("bobby", "bob"), "bob")),
        ("unknown-version", "malformed", canonical({"gage-signed-directory-record": 2, "record": bob_record.decode(), "signature": "00" * 64})),
        ("extra-field", "malformed", signed_record(canonical({**json.loads(bob_record), "trust": "confirmed"}), "bob")),
        ("not-json", "malformed", b"{bob"),
    ]
    return {
        "about": (
            "Vectors for spec/relay.md. `keys`: each person's Ed25519 signing key (from `seed`), X25519 sealing secret, "
            "and the age texts and mailbox address derived from them. `bindings`: the exact statement bytes and the "
            "signature (hex) over context || bytes; `bad_bindings` must not verify under `signing_key`. `envelope`: "
            "the plaintext of one bundle (base64) and the bundle it holds; `refused` plaintexts must be refused for "
            "the reason named, before anything is written. `sealed`: an age envelope (base64) that opens with bob's "
            "identity to the envelope plaintext. `records`: a directory record read under `handle` is valid, or is "
            "refused (well-formed, does not hold together) or malformed. `replays`: a reader that has seen the valid record "
            "`seen` for `handle` and then reads `then` (valid on its own, by the same key) refuses it when it was published "
            "before the newest record it has seen for that handle and key. `sealing_file`: a protected home's sealing.json, "
            "whose `box` opens under `file_key` (from the binder's seed) to that person's `x25519_secret`. `big_envelope`: "
            "the mailbox message of an envelope sent by the object store (its headers name the object, its size and its "
            "SHA-256), the metas stored under the object's name in order, and the one a reader takes (`taken`, an index: "
            "the first that is well-formed and says the message's size and digest); an `older_message` names the object "
            "alone, and its reader takes the first meta under the name whatever it says (index `taken`), checked alone; "
            "`refused_headers` are messages dropped before anything is read."
        ),
        "contexts": {"binding": BINDING.decode("ascii"), "record": RECORD.decode("ascii"), "mailbox": MAILBOX.decode("ascii")},
        "keys": {
            who: {
                "seed": seed(who).hex(),
                "signing_key": key(who),
                "x25519_secret": x25519(who)[0].hex(),
                "x25519_public": x25519(who)[1].hex(),
                "identity": identity(who),
                "recipient": recipient(who),
                "mailbox": address(x25519(who)[1]),
            }
            for who in ("alice", "bob", "mallory")
        },
        "bindings": [{"of": who, **binding(who)} for who in ("alice", "bob")],
        "bad_bindings": [
            {"why": "signed by another key", "signing_key": key("bob"), **binding("bob", signed_by="mallory")},
            {"why": "statement edited after signing", "signing_key": key("bob"),
             "binding": binding("bob")["binding"].replace(T1, T2), "signature": binding("bob")["signature"]},
            {"why": "a manifest signature over the same bytes", "signing_key": key("bob"),
             "binding": binding("bob")["binding"],
             "signature": signer("bob").sign(MANIFEST + binding("bob")["binding"].encode()).signature.hex()},
        ],
        "envelope": {
            "plaintext_b64": b64(good),
            "manifest_b64": b64(raw),
            "signature_hex": sig.hex(),
            "bundle_id": hashlib.sha256(b"gage/id/v1\x00" + raw).hexdigest(),
            "files": [{"path": p, "data_b64": b64(d)} for p, d in files],
        },
        "refused": [{"why": why, "plaintext_b64": b64(data)} for why, data in refused],
        "sealed": {"to": "bob", "age_b64": sealed},
        "records": [
            {"name": "honest", "handle": "bob", "expect": "valid", "data_b64": b64(signed_record(bob_record, "bob")),
             "signing_key": key("bob"), "sealing_key": recipient("bob"), "mailbox": address(x25519("bob")[1])},
            *({"name": n, "handle": "bob", "expect": e, "data_b64": b64(d)} for n, e, d in hostile),
        ],
        "sealing_file": sealing_file("bob"),
        "big_envelope": big_envelope(),
        "replays": [
            {"name": n, "handle": "bob", "expect": e,
             "seen_b64": b64(signed_record(record_raw("bob", "bob", published_at=T2), "bob")),
             "then_b64": b64(signed_record(record_raw("bob", "bob", published_at=at, relay=relay), "bob"))}
            for n, e, at, relay in (
                ("older", "refused", T1, "nats://old-relay.example:4222"),
                ("same", "valid", T2, "nats://relay.example:4222"),
                ("newer", "valid", T3, "nats://new-relay.example:4222"),
            )
        ],
    }


def main() -> int:
    old = json.loads(OUT.read_text()) if OUT.exists() else None
    text = json.dumps(build(old), indent=2, ensure_ascii=True) + "\n"
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
