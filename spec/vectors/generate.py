"""Write the JSON test vectors in this folder, deterministically.

Run from the repository root: `python spec/vectors/generate.py`. The output depends only on
the fixed seeds, times and nonces below, so running it twice gives identical files; the
committed JSON is the contract and the tests read it, never this script.

Where it can, this script computes the expected values with the primitives directly
(hashlib, PyNaCl's Ed25519 and Argon2id) rather than through gage's own functions, so
the vectors check gage against the spec instead of against itself. The word lists are
the one input taken from gage (spec/wordlist-source.md says where they come from).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.pwhash
import nacl.signing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from gage.wordlist import EVEN, ODD  # noqa: E402

ID_CONTEXT = b"gage/id/v1\x00"
SIG_CONTEXT = b"gage/manifest/v1\x00"
WORDS_SALT = b"gage/words/v1\x00\x00\x00"
WORDS_OPSLIMIT = 2
WORDS_MEMLIMIT = 64 * 1024 * 1024
WORDS_DIGEST_LEN = 16
CREATED = "2026-01-31T12:00:00Z"


def seed(label: str) -> bytes:
    """A fixed 32-byte Ed25519 seed named by a label, so vectors never depend on randomness."""
    return hashlib.sha256(b"gage test vector seed\x00" + label.encode()).digest()


def signing_key(label: str) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(seed(label))


def key_text(sk: nacl.signing.SigningKey) -> str:
    return "ed25519:" + bytes(sk.verify_key).hex()


def canonical(obj: Any) -> bytes:
    """The writer's form: sorted keys, no spaces, UTF-8 (readers accept any strict JSON)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def write(name: str, value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    (HERE / name).write_text(text, encoding="utf-8")


# --- keys and words ------------------------------------------------------------------


def keys_words() -> dict[str, Any]:
    keys = []
    fixed = [
        ("all-zero seed", bytes(32)),
        ("seed 00..1f", bytes(range(32))),
        ("alice", seed("alice")),
        ("bob", seed("bob")),
        ("carol", seed("carol")),
    ]
    for label, s in fixed:
        sk = nacl.signing.SigningKey(s)
        pub = bytes(sk.verify_key)
        digest = nacl.pwhash.argon2id.kdf(WORDS_DIGEST_LEN, pub, WORDS_SALT, opslimit=WORDS_OPSLIMIT, memlimit=WORDS_MEMLIMIT)
        pairs = [[EVEN[digest[2 * i]], ODD[digest[2 * i + 1]]] for i in range(4)]
        keys.append(
            {
                "label": label,
                "seed_hex": s.hex(),
                "public_key_hex": pub.hex(),
                "key": "ed25519:" + pub.hex(),
                "argon2id_digest_hex": digest.hex(),
                "words": pairs,
                "spoken": " ".join(" ".join(p) for p in pairs),
            }
        )
    # Byte-to-word mapping without Argon2id, so a second implementation can check its lists alone.
    mapping = []
    for data in (bytes(8), bytes([0xFF] * 8), bytes(range(8)), bytes([0xE5, 0xE5, 0x17, 0x17, 0x80, 0x7F, 0x01, 0xFE])):
        mapping.append({"bytes_hex": data.hex(), "words": [[EVEN[data[2 * i]], ODD[data[2 * i + 1]]] for i in range(4)]})
    spoken = [
        {"typed": "Aardvark adroitness, ABSURD-adviser\taccrue  Aftermath", "words": ["aardvark", "adroitness", "absurd", "adviser", "accrue", "aftermath"]},
        {"typed": "  topmost--travesty ,, zulu\n yucatan ", "words": ["topmost", "travesty", "zulu", "yucatan"]},
        {"typed": "", "words": []},
        {"typed": " , - ", "words": []},
    ]
    return {
        "about": "Public keys, their Argon2id digests and word-pairs (spec/words.md). "
        "Argon2id: password = the 32 raw public key bytes, salt = 'gage/words/v1' + three NUL bytes, "
        "opslimit 2, memlimit 67108864 bytes, output 16 bytes. Pair i = (EVEN[d[2i]], ODD[d[2i+1]]) for i in 0..3.",
        "argon2id": {
            "salt_hex": WORDS_SALT.hex(),
            "opslimit": WORDS_OPSLIMIT,
            "memlimit": WORDS_MEMLIMIT,
            "digest_len": WORDS_DIGEST_LEN,
            "parallelism": 1,
            "version": "0x13",
        },
        "keys": keys,
        "byte_mapping": mapping,
        "spoken": spoken,
    }


# --- bundles -------------------------------------------------------------------------


def manifest_obj(sender: nacl.signing.SigningKey, sender_name: str, files: list[tuple[str, bytes]], **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "gage": 1,
        "kind": "share",
        "created": CREATED,
        "nonce": "00112233445566778899aabbccddeeff",
        "sender": {"key": key_text(sender), "name": sender_name},
        "thread": None,
        "parent": None,
        "to": [],
        "subject": None,
        "files": sorted(
            ({"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in files),
            key=lambda f: f["path"],
        ),
        "chain": [],
    }
    obj.update(extra)
    return obj


def bundle_vector(
    name: str,
    description: str,
    raw: bytes,
    signer: nacl.signing.SigningKey,
    signature: bytes,
    files: list[tuple[str, bytes]],
    sender_label: str,
    signer_label: str,
    valid: bool,
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "manifest_utf8": raw.decode("utf-8"),
        "manifest_b64": b64(raw),
        "id": hashlib.sha256(ID_CONTEXT + raw).hexdigest(),
        "sender_seed_label": sender_label,
        "signed_by": {"seed_label": signer_label, "seed_hex": bytes(signer).hex(), "key": key_text(signer)},
        "signature_hex": signature.hex(),
        "signature_valid": valid,
        "expected_stage": None if valid else "signature",
        "files": [
            {"path": p, "content_b64": b64(d), "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
            for p, d in sorted(files)
        ],
    }


def sign(sk: nacl.signing.SigningKey, raw: bytes) -> bytes:
    return sk.sign(SIG_CONTEXT + raw).signature


def bundles() -> dict[str, Any]:
    alice, bob = signing_key("alice"), signing_key("bob")
    out = []

    files1 = [("hello.txt", b"hello, bob\n"), ("docs/notes.md", b"# Notes\n\nline two\n"), ("docs/empty.bin", b"")]
    m1 = canonical(manifest_obj(alice, "alice", files1, to=[{"key": key_text(bob), "name": "bob"}], subject="Notes for Bob"))
    out.append(bundle_vector("share", "a share with three files, one empty, one in a folder", m1, alice, sign(alice, m1), files1, "alice", "alice", True))
    id1 = hashlib.sha256(ID_CONTEXT + m1).hexdigest()

    files2 = [("answer.txt", "Grüße, ünïcödé ✓\n".encode())]
    m2 = canonical(
        manifest_obj(bob, "bob ✓", files2, kind="answer", thread=id1, parent=id1, subject="Re: Notes — ünïcödé", nonce="ffeeddccbbaa99887766554433221100")
    )
    out.append(bundle_vector("answer", "a reply: thread and parent set, non-ASCII name and subject", m2, bob, sign(bob, m2), files2, "bob", "bob", True))

    files3 = files1[:1]
    hop = {"key": key_text(alice), "name": "alice", "bundle": id1, "kind": "share", "created": CREATED}
    m3 = canonical(manifest_obj(bob, "bob", files3, chain=[hop], nonce="0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"))
    out.append(bundle_vector("forward", "a forward: one hop in chain (a claim by bob)", m3, bob, sign(bob, m3), files3, "bob", "bob", True))

    m4 = b'{\n  "gage": 1, "kind": "question", "created": "2026-01-31T12:00:00Z",\n  "nonce": "0123456789abcdef0123456789abcdef",\n  "sender": {"name": "alice", "key": "' + key_text(alice).encode() + b'"},\n  "thread": null, "parent": null, "to": [], "subject": "a question?", "files": [], "chain": []\n}\n'
    out.append(
        bundle_vector(
            "noncanonical", "not in the writer's canonical form (spaces, newlines, unsorted keys): still valid, and the id is over these exact bytes", m4, alice, sign(alice, m4), [], "alice", "alice", True
        )
    )

    out.append(
        bundle_vector("other-key", "the manifest names alice as sender but bob signed it", m1, bob, sign(bob, m1), files1, "alice", "bob", False)
    )
    out.append(
        bundle_vector("other-bytes", "alice's signature over a different manifest (the forward's bytes)", m1, alice, sign(alice, m3), files1, "alice", "alice", False)
    )
    out.append(
        bundle_vector("short", "the right signature cut to 63 bytes", m1, alice, sign(alice, m1)[:63], files1, "alice", "alice", False)
    )
    out.append(
        bundle_vector("long", "the right signature with one byte appended (65 bytes)", m1, alice, sign(alice, m1) + b"\x00", files1, "alice", "alice", False)
    )
    out.append(
        bundle_vector("no-context", "plain Ed25519 over the manifest bytes, without the gage/manifest/v1 prefix", m1, alice, alice.sign(m1).signature, files1, "alice", "alice", False)
    )
    out.append(
        bundle_vector("empty", "an empty signature file", m1, alice, b"", files1, "alice", "alice", False)
    )
    return {
        "about": "Manifests with their ids and signatures (spec/bundle.md). id = hex(SHA-256('gage/id/v1' NUL + manifest bytes)); "
        "signature = Ed25519 by the sender over 'gage/manifest/v1' NUL + manifest bytes, 64 raw bytes in manifest.sig. "
        "Seeds are sha256('gage test vector seed' NUL + label).",
        "id_context_hex": ID_CONTEXT.hex(),
        "signature_context_hex": SIG_CONTEXT.hex(),
        "bundles": out,
    }


# --- malformed manifests ---------------------------------------------------------------


def malformed() -> dict[str, Any]:
    alice = signing_key("alice")
    good = manifest_obj(alice, "alice", [("a.txt", b"a\n")])
    ka = key_text(alice)
    cases: list[dict[str, Any]] = []

    def add(name: str, description: str, raw: bytes | dict[str, Any], field: str | None, contains: str) -> None:
        # A huge manifest is stored as a recipe (prefix + byte * count + suffix), not 1 MiB of base64.
        data = {"manifest_parts": raw} if isinstance(raw, dict) else {"manifest_b64": b64(raw)}
        cases.append(
            {
                "name": name,
                "description": description,
                **data,
                "expected_stage": "malformed",
                "field": field,
                "message_contains": contains,
            }
        )

    def variant(**changes: Any) -> dict[str, Any]:
        obj = json.loads(json.dumps(good))
        for k, v in changes.items():
            if v is _DELETE:
                del obj[k]
            else:
                obj[k] = v
        return obj

    def files(*entries: tuple[str, int, str]) -> list[dict[str, Any]]:
        return [{"path": p, "size": s, "sha256": h} for p, s, h in entries]

    def sub(raw: bytes, old: bytes, new: bytes) -> bytes:
        """Replace exactly one occurrence, so a vector can never silently stay valid."""
        assert raw.count(old) == 1, old
        return raw.replace(old, new)

    h = "0" * 64
    good_raw = canonical(good)
    text = good_raw.decode()

    # Strict JSON.
    add("duplicate-key", "the key 'kind' twice", sub(good_raw, b'"kind":"share"', b'"kind":"share","kind":"ack"'), None, "duplicate key")
    add("duplicate-nested-key", "a duplicate key inside sender", sub(good_raw, b'"name":"alice"', b'"name":"alice","name":"mallory"'), None, "duplicate key")
    add("nan", "NaN as a value", sub(good_raw, b'"subject":null', b'"subject":NaN'), None, "NaN")
    add("infinity", "Infinity as a value", sub(good_raw, b'"subject":null', b'"subject":Infinity'), None, "Infinity")
    add("float", "a size written as a float", sub(good_raw, b'"size":2', b'"size":2.0'), None, "floating-point")
    add("float-exponent", "a size written with an exponent", sub(good_raw, b'"size":2', b'"size":2e0'), None, "floating-point")
    add("version-float", "the version written as 1.0", sub(good_raw, b'"gage":1', b'"gage":1.0'), None, "floating-point")
    add("bom", "a UTF-8 byte-order mark before the object", b"\xef\xbb\xbf" + good_raw, None, "byte-order mark")
    add("invalid-utf8", "a subject holding the byte 0xff", sub(good_raw, b'"subject":null', b'"subject":"\xff"'), None, "UTF-8")
    add("overlong-utf8", "an overlong UTF-8 encoding of '/' (C0 AF)", sub(good_raw, b'"subject":null', b'"subject":"\xc0\xaf"'), None, "UTF-8")
    add("utf16", "the manifest encoded as UTF-16", text.encode("utf-16-le"), None, "not valid JSON")
    add("lone-surrogate", "a subject holding the escaped lone surrogate \\ud800", sub(good_raw, b'"subject":null', b'"subject":"\\ud800"'), None, "surrogate")
    add("lone-surrogate-key", "an object key that is a lone surrogate", sub(good_raw, b'{"chain"', b'{"\\udfff":1,"chain"'), None, "surrogate")
    add("trailing-data", "a second value after the object", good_raw + b"{}", None, "not valid JSON")
    add("truncated", "the object cut off", good_raw[:-1], None, "not valid JSON")
    add("empty", "zero bytes", b"", None, "not valid JSON")
    add("huge-integer", "a size with 5000 digits", sub(good_raw, b'"size":2', b'"size":' + b"9" * 5000), None, "not valid JSON")
    add("deep-nesting", "a subject nested 40 arrays deep", sub(good_raw, b'"subject":null', b'"subject":' + b"[" * 40 + b"]" * 40), None, "nested too deeply")
    add("oversize", "a manifest one byte over the 1 MiB limit (a long subject makes it so)", _oversize(good), None, "over the limit")

    # Schema: top level.
    add("not-object", "a JSON array instead of an object", b"[]", "(top)", "must be a JSON object")
    add("unknown-version", "gage: 2", canonical(variant(gage=2)), "gage", "unknown manifest version")
    add("version-zero", "gage: 0", canonical(variant(gage=0)), "gage", "unknown manifest version")
    add("version-bool", "gage: true (a boolean is not the number 1)", canonical(variant(gage=True)), "gage", "unknown manifest version")
    add("version-string", "gage: \"1\"", canonical(variant(gage="1")), "gage", "unknown manifest version")
    add("version-missing", "no gage field", canonical(variant(gage=_DELETE)), "gage", "unknown manifest version")
    add("unknown-kind", "kind: note", canonical(variant(kind="note")), "kind", "unknown kind")
    add("kind-case", "kind: Share (kinds are lower case)", canonical(variant(kind="Share")), "kind", "unknown kind")
    add("unknown-field", "an extra top-level field 'trust'", canonical(variant(trust="verified")), "(top)", "unknown field")
    add("missing-field", "no files field", canonical(variant(files=_DELETE)), "(top)", "missing files")
    add("missing-chain", "no chain field", canonical(variant(chain=_DELETE)), "(top)", "missing chain")
    add("bad-created", "created without the Z", canonical(variant(created="2026-01-31T12:00:00")), "created", "UTC time")
    add("impossible-date", "created on 30 February", canonical(variant(created="2026-02-30T12:00:00Z")), "created", "real date")
    add("bad-nonce", "a nonce of 31 hex digits", canonical(variant(nonce="0" * 31)), "nonce", "32 lower-case hex")
    add("upper-nonce", "a nonce in upper-case hex", canonical(variant(nonce="A" * 32)), "nonce", "32 lower-case hex")

    # Keys and parties.
    add("bad-key-prefix", "a sender key without the ed25519: prefix", canonical(variant(sender={"key": ka[8:], "name": "alice"})), "sender.key", "ed25519:")
    add("bad-key-upper", "a sender key in upper-case hex", canonical(variant(sender={"key": "ed25519:" + ka[8:].upper(), "name": "alice"})), "sender.key", "64 lower-case hex")
    add("bad-key-short", "a sender key of 62 hex digits", canonical(variant(sender={"key": ka[:-2], "name": "alice"})), "sender.key", "64 lower-case hex")
    add("sender-extra-field", "a sender with a 'verified' field", canonical(variant(sender={"key": ka, "name": "alice", "verified": True})), "sender", "unknown field")
    add("sender-no-name", "a sender without a name", canonical(variant(sender={"key": ka})), "sender", "missing name")
    add("sender-long-name", "a claimed name of 201 characters", canonical(variant(sender={"key": ka, "name": "n" * 201})), "sender.name", "longer than 200")
    add("to-not-list", "to is an object", canonical(variant(to={})), "to", "must be a list")
    add("to-bad-key", "a recipient with a bad key", canonical(variant(to=[{"key": "ed25519:xyz", "name": "bob"}])), "to[0].key", "64 lower-case hex")
    add("subject-not-string", "subject is a number", canonical(variant(subject=5)), "subject", "must be a string or null")
    add("subject-too-long", "a subject of 1001 characters", canonical(variant(subject="s" * 1001)), "subject", "longer than 1000")

    # Thread, parent, kinds.
    add("parent-without-thread", "parent set, thread null", canonical(variant(parent=h)), "thread", "both null")
    add("thread-without-parent", "thread set, parent null", canonical(variant(thread=h)), "thread", "both null")
    add("answer-without-parent", "kind answer with no parent", canonical(variant(kind="answer")), "parent", "must have a parent")
    add("ack-without-parent", "kind ack with no parent", canonical(variant(kind="ack")), "parent", "must have a parent")
    add("parent-not-id", "a parent that is not 64 hex digits", canonical(variant(thread=h, parent="abc")), "parent", "bundle id")

    # Files and paths.
    def with_path(path: str) -> bytes:
        return canonical(variant(files=files((path, 1, h))))

    add("path-dotdot", "a path with a '..' component", with_path("a/../b"), "files[0].path", "'..'")
    add("path-dotdot-only", "the path '..'", with_path(".."), "files[0].path", "'..'")
    add("path-dot", "a path with a '.' component", with_path("./a"), "files[0].path", "'.'")
    add("path-absolute", "an absolute path", with_path("/etc/passwd"), "files[0].path", "relative")
    add("path-trailing-slash", "a path ending in '/'", with_path("dir/"), "files[0].path", "relative")
    add("path-empty-component", "a path with '//'", with_path("a//b"), "files[0].path", "empty")
    add("path-empty", "an empty path", with_path(""), "files[0].path", "non-empty")
    add("path-backslash", "a path with a backslash", with_path("a\\b"), "files[0].path", "backslash")
    add("path-control", "a path with a newline", with_path("a\nb"), "files[0].path", "control")
    add("path-escape", "a path with an ESC character", with_path("a\x1b[31mb"), "files[0].path", "control")
    add("path-bidi", "a path with a right-to-left override (format character)", with_path("a\u202eb"), "files[0].path", "control or format")
    add("path-nfd", "a path not in NFC (e + combining acute)", with_path("caf" + "e\u0301"), "files[0].path", "NFC")
    add("path-colon", "a path component with ':' (unsafe on Windows)", with_path("c:x"), "files[0].path", "unsafe")
    add("path-trailing-dot", "a path component ending in '.'", with_path("a./b"), "files[0].path", "unsafe")
    add("path-long-component", "a path component of 256 bytes", with_path("x" * 256), "files[0].path", "over 255 bytes")
    add("path-too-long", "a path of 1025 characters", with_path("/".join(["y" * 100] * 10) + "/" + "z" * 15), "files[0].path", "longer than 1024")
    add("path-not-string", "a path that is a number", canonical(variant(files=[{"path": 1, "size": 1, "sha256": h}])), "files[0].path", "non-empty string")
    add(
        "case-collision",
        "two paths that differ only in case",
        canonical(variant(files=files(("Readme.txt", 1, h), ("README.txt", 1, h)))),
        "files[1].path",
        "differ in more than case",
    )
    add(
        "duplicate-path",
        "the same path listed twice",
        canonical(variant(files=files(("a.txt", 1, h), ("a.txt", 1, h)))),
        "files[1].path",
        "differ in more than case",
    )
    add(
        "file-inside-file",
        "a path below a path that is itself a listed file",
        canonical(variant(files=files(("a", 1, h), ("a/b", 1, h)))),
        "files",
        "inside another listed file",
    )
    add("size-negative", "a size of -1", canonical(variant(files=files(("a", -1, h)))), "files[0].size", "whole number")
    add("size-bool", "a size of true", canonical(variant(files=[{"path": "a", "size": True, "sha256": h}])), "files[0].size", "whole number")
    add("size-too-big", "a size of 2**53", canonical(variant(files=files(("a", 1 << 53, h)))), "files[0].size", "whole number")
    add("sha256-upper", "a digest in upper-case hex", canonical(variant(files=files(("a", 1, "A" * 64)))), "files[0].sha256", "64 lower-case hex")
    add("file-extra-field", "a file entry with a 'mode' field", canonical(variant(files=[{"path": "a", "size": 1, "sha256": h, "mode": 493}])), "files[0]", "unknown field")
    add("files-not-list", "files is an object", canonical(variant(files={})), "files", "must be a list")

    # Chain.
    hop = {"key": ka, "name": "alice", "bundle": h, "kind": "share", "created": CREATED}
    add("chain-bad-bundle", "a hop whose bundle is not an id", canonical(variant(chain=[{**hop, "bundle": "x"}])), "chain[0].bundle", "bundle id")
    add("chain-unknown-kind", "a hop with kind 'note'", canonical(variant(chain=[{**hop, "kind": "note"}])), "chain[0].kind", "unknown kind")
    add("chain-extra-field", "a hop with a 'signature' field", canonical(variant(chain=[{**hop, "signature": "00"}])), "chain[0]", "unknown field")
    add("chain-too-long", "17 hops (the limit is 16)", canonical(variant(chain=[hop] * 17)), "chain", "at most 16")
    return {
        "about": "Manifests every reader must reject at the malformed stage (spec/bundle.md). "
        "`field` is the field the error names, or null for errors of the JSON layer; "
        "`message_contains` is a fragment of gage's message, for gage's own tests only.",
        "manifests": cases,
    }


class _Delete:
    pass


_DELETE = _Delete()


def _oversize(good: dict[str, Any]) -> dict[str, Any]:
    base = canonical({**good, "subject": "@"})
    prefix, suffix = base.split(b'"@"')
    count = (1 << 20) + 1 - len(prefix) - len(suffix) - 2
    raw = prefix + b'"' + b"s" * count + b'"' + suffix
    assert len(raw) == (1 << 20) + 1, len(raw)
    return {"prefix_b64": b64(prefix + b'"'), "repeat_byte": "s", "repeat_count": count, "suffix_b64": b64(b'"' + suffix)}


def main() -> None:
    write("keys-words.json", keys_words())
    write("bundles.json", bundles())
    write("malformed-manifests.json", malformed())


if __name__ == "__main__":
    main()
