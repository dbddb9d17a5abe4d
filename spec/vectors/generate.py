"""Write the JSON test vectors in this folder, deterministically.

Run from the repository root with Python 3.11: `python spec/vectors/generate.py`. The output
depends only on the fixed seeds, times and nonces below and on Unicode 14.0.0 (Python 3.11's
unicodedata, the version spec/bundle.md pins), so running it twice gives identical files; the
committed JSON is the contract and the tests read it (tests/test_spec_agree_vectors.py also
checks that this script still writes exactly it). `--sanitize-table` writes the Unicode 14.0
table of plain code points into gage/format/sanitize.py.

Where it can, this script computes the expected values with the primitives directly
(hashlib, PyNaCl's Ed25519 and Argon2id) rather than through gage's own functions, so
the vectors check gage against the spec instead of against itself. The word lists are
the one input taken from gage (spec/wordlist-source.md says where they come from).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import nacl.pwhash
import nacl.signing

HERE = Path(__file__).resolve().parent
MANIFEST_LIMIT = 4 << 20  # spec/bundle.md section 3: 4 MiB (4 194 304 bytes)
sys.path.insert(0, str(HERE.parent.parent))

from gage.format.words.wordlist import EVEN, ODD  # noqa: E402

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


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write(name: str, value: Any) -> None:
    (HERE / name).write_text(dump(value), encoding="utf-8")


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
    recipe: dict[str, Any] | None = None,
) -> dict[str, Any]:
    # A manifest of megabytes is stored as its recipe (prefix + repeat * repeat_count + suffix).
    text: dict[str, Any] = {"manifest_parts": recipe} if recipe is not None else {"manifest_utf8": raw.decode("utf-8"), "manifest_b64": b64(raw)}
    return {
        "name": name,
        "description": description,
        **text,
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

    # At the path limits: exactly 1024 bytes of UTF-8, a component of exactly 255 bytes, and a
    # character new in Unicode 14.0 (U+1FAE0 MELTING FACE), the pinned version.
    comp = "\u00e9" * 127 + "x"
    long_path = _sized("/".join([comp] * 3 + ["\u00e9" * 125 + "\U0001fae0", "z"]), chars=515, size=1024)
    files5 = [(long_path, b"at the limits\n")]
    m5 = canonical(manifest_obj(alice, "alice", files5, nonce="5555aaaa5555aaaa5555aaaa5555aaaa"))
    out.append(
        bundle_vector(
            "path-limits",
            "a payload path of exactly 1024 bytes in UTF-8 (515 characters), with components of exactly 255 bytes and U+1FAE0 (new in Unicode 14.0)",
            m5, alice, sign(alice, m5), files5, "alice", "alice", True,
        )
    )
    # Valid manifests over 1 MiB (issue 19): the cap is 4 MiB, and a reader with an older, smaller
    # cap must fail a vector. White space between tokens is allowed (bundle.md section 3), so
    # the bytes are the canonical manifest with spaces after its first `{`.
    base = canonical(manifest_obj(alice, "alice", files1[:1], nonce="4444bbbb4444bbbb4444bbbb4444bbbb"))
    for vname, size, what in (("manifest-2mib", 2 * 1024 * 1024 + 1, "2 MiB + 1 byte"), ("manifest-at-cap", MANIFEST_LIMIT, "exactly 4 MiB (4194304 bytes)")):
        count = size - len(base)
        big = base[:1] + b" " * count + base[1:]
        assert len(big) == size
        recipe = {"prefix_b64": b64(base[:1]), "repeat": " ", "repeat_count": count, "suffix_b64": b64(base[1:])}
        out.append(
            bundle_vector(
                vname, f"a valid manifest of {what}: white space between tokens; a reader whose cap is under 4 MiB fails it",
                big, alice, sign(alice, big), files1[:1], "alice", "alice", True, recipe=recipe,
            )
        )
    return {
        "about": "Manifests with their ids and signatures (spec/bundle.md). id = hex(SHA-256('gage/id/v1' NUL + manifest bytes)); "
        "signature = Ed25519 by the sender over 'gage/manifest/v1' NUL + manifest bytes, 64 raw bytes in manifest.sig. "
        "Seeds are sha256('gage test vector seed' NUL + label). A manifest is given as `manifest_b64` (and `manifest_utf8`), "
        "or, when it is megabytes, as `manifest_parts`: prefix_b64 decoded + repeat * repeat_count + suffix_b64 decoded. "
        "The manifest cap is 4 MiB (4194304 bytes); manifest.sig's is 256 bytes.",
        "id_context_hex": ID_CONTEXT.hex(),
        "signature_context_hex": SIG_CONTEXT.hex(),
        "bundles": out,
        "signature_files": signature_files(),
    }


def signature_files() -> list[dict[str, Any]]:
    """What `verify` and `import` both say when manifest.sig is not a 64-byte regular file (bundle.md sections 8, 10)."""
    arrives = [
        ("absent", "no manifest.sig at all", "is missing"),
        ("empty", "a regular file of 0 bytes", "0 bytes"),
        ("65-bytes", "the right signature and one more byte", "65 bytes"),
        ("over-cap", "a regular file of 1 MiB + 1 bytes, far over the signature's cap (256 bytes)", "over the limit"),
    ]
    refused = [
        ("symlink", "a symlink to a file holding the right signature (never followed)"),
        ("fifo", "a FIFO (never opened in a way that blocks)"),
        ("directory", "a directory"),
    ]
    out: list[dict[str, Any]] = [
        {"how": how, "description": d, "bundle": "share", "verify_stage": "signature", "import": "arrives", "import_stage": "signature", "message_contains": m}
        for how, d, m in arrives
    ]
    out += [
        {"how": how, "description": d, "bundle": "share", "verify_stage": "tampered", "import": "refused", "import_stage": "tampered", "message_contains": ""}
        for how, d in refused
    ]
    return out


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
    add("huge-integer", "a size with 5000 digits", sub(good_raw, b'"size":2', b'"size":' + b"9" * 5000), None, "out of range")
    add("integer-17-digits", "a size of 17 digits (10^16): beyond 2^53 - 1, so refused by the JSON layer before any schema rule", sub(good_raw, b'"size":2', b'"size":10000000000000000'), None, "out of range")
    add("integer-2-53-version", "gage: 2^53 + 1, which a reader using doubles (JavaScript) would round to 2^53", sub(good_raw, b'"gage":1', b'"gage":9007199254740993'), None, "out of range")
    add("integer-negative-2-53", "a size of -2^53: out of range at the JSON layer, before the schema's sign rule", sub(good_raw, b'"size":2', b'"size":-9007199254740992'), None, "out of range")
    add("deep-nesting", "a subject nested 40 arrays deep", sub(good_raw, b'"subject":null', b'"subject":' + b"[" * 40 + b"]" * 40), None, "nested too deeply")
    add(
        "nesting-33",
        "33 arrays and objects open at once: the manifest object and a subject of 32 nested arrays",
        sub(good_raw, b'"subject":null', b'"subject":' + b"[" * 32 + b"]" * 32),
        None,
        "nested too deeply",
    )
    add(
        "nesting-32",
        "32 open at once (the object and 31 nested arrays) is strict JSON: it fails the schema, so the field is named",
        sub(good_raw, b'"subject":null', b'"subject":' + b"[" * 31 + b"]" * 31),
        "subject",
        "must be a string",
    )
    add("oversize", "a manifest one byte over the 4 MiB limit (a long subject makes it so)", _oversize(good), None, "over the limit")

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
    add("created-leap-second", "second 60 (a leap second) is not accepted", canonical(variant(created="2026-12-31T23:59:60Z")), "created", "real date")
    add("created-hour-24", "hour 24", canonical(variant(created="2026-01-31T24:00:00Z")), "created", "real date")
    add("created-year-zero", "year 0000 (years run from 0001 to 9999)", canonical(variant(created="0000-01-01T00:00:00Z")), "created", "real date")
    add(
        "created-arabic-indic-digits",
        "the year in Arabic-Indic digits (U+0662 U+0660 U+0662 U+0666): the digits are ASCII 0-9 only",
        canonical(variant(created="\u0662\u0660\u0662\u0666-01-31T12:00:00Z")),
        "created",
        "UTC time",
    )
    add("created-fullwidth-digits", "the year in full-width digits (U+FF12 ...)", canonical(variant(created="\uff12\uff10\uff12\uff16-01-31T12:00:00Z")), "created", "UTC time")
    add("created-devanagari-digit", "one Devanagari digit (U+0968) in the hour", canonical(variant(created="2026-01-31T1\u0968:00:00Z")), "created", "UTC time")
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
    add("path-long-component-utf8", "a component of 128 characters, 256 bytes in UTF-8", with_path("\u00e9" * 128), "files[0].path", "over 255 bytes")
    add("path-too-long", "a path of 1025 characters", with_path("/".join(["y" * 100] * 10) + "/" + "z" * 15), "files[0].path", "longer than 1024")
    add(
        "path-too-long-utf8",
        "a path of 515 characters but 1025 bytes in UTF-8: the limit is in bytes",
        with_path(_sized("/".join(["\u00e9" * 127] * 4) + "/\u00e9\u00e9x", chars=515, size=1025)),
        "files[0].path",
        "longer than 1024 bytes",
    )
    add(
        "path-4096-bytes",
        "a path of 1024 characters, 4048 bytes in UTF-8, every component within 255 bytes: as long as Linux allows any path (PATH_MAX, 4096 with the NUL) before a home's own prefix",
        with_path(_sized("/".join(["\U0001f600" * 62] * 17)[:1024], chars=1024, size=4048)),
        "files[0].path",
        "longer than 1024 bytes",
    )
    # Unicode is pinned at 14.0.0 (bundle.md section 4): a code point assigned later is unassigned here,
    # whatever the reader's own Unicode tables say.
    add(
        "path-unicode-15-0",
        "U+11F04 KAWI LETTER A: assigned in Unicode 15.0 (Python 3.12), unassigned in 14.0",
        with_path("a\U00011f04.txt"),
        "files[0].path",
        "unassigned in Unicode 14.0",
    )
    add(
        "path-unicode-15-1",
        "U+2EBF0, a CJK ideograph of Extension I: assigned in Unicode 15.1 (Python 3.13), unassigned in 14.0",
        with_path("\U0002ebf0.txt"),
        "files[0].path",
        "unassigned in Unicode 14.0",
    )
    add("path-unicode-later", "U+1FAE9: unassigned in Unicode 14.0, 15.0 and 15.1 (an emoji of a later version)", with_path("\U0001fae9"), "files[0].path", "unassigned in Unicode 14.0")
    add("path-never-assigned", "U+0378, a hole in the Greek block", with_path("\u0378"), "files[0].path", "unassigned")
    add("path-noncharacter", "U+FDD0, a noncharacter", with_path("a\ufdd0"), "files[0].path", "unassigned")
    add("path-private-use", "U+E000, private use", with_path("\ue000.txt"), "files[0].path", "private-use")
    add("path-soft-hyphen", "U+00AD SOFT HYPHEN, a format character that most fonts do not draw", with_path("pay\u00admentorder.txt"), "files[0].path", "control or format")
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
        "a path below a path that is itself a listed file: the entry below is named",
        canonical(variant(files=files(("a", 1, h), ("a/b", 1, h)))),
        "files[1].path",
        "inside another listed file",
    )
    add(
        "file-inside-file-listed-first",
        "the same, with the entry below listed first: still the entry below is named (list order does not matter)",
        canonical(variant(files=files(("A/b", 1, h), ("a", 1, h)))),
        "files[0].path",
        "inside another listed file",
    )
    add("size-negative", "a size of -1", canonical(variant(files=files(("a", -1, h)))), "files[0].size", "whole number")
    add("size-bool", "a size of true", canonical(variant(files=[{"path": "a", "size": True, "sha256": h}])), "files[0].size", "whole number")
    add("size-too-big", "a size of 2**53: beyond what strict JSON allows, so the JSON layer refuses it", canonical(variant(files=files(("a", 1 << 53, h)))), None, "out of range")
    add("sha256-upper", "a digest in upper-case hex", canonical(variant(files=files(("a", 1, "A" * 64)))), "files[0].sha256", "64 lower-case hex")
    add("file-extra-field", "a file entry with a 'mode' field", canonical(variant(files=[{"path": "a", "size": 1, "sha256": h, "mode": 493}])), "files[0]", "unknown field")
    add("files-not-list", "files is an object", canonical(variant(files={})), "files", "must be a list")

    # Chain.
    hop = {"key": ka, "name": "alice", "bundle": h, "kind": "share", "created": CREATED}
    add("chain-bad-bundle", "a hop whose bundle is not an id", canonical(variant(chain=[{**hop, "bundle": "x"}])), "chain[0].bundle", "bundle id")
    add("chain-unknown-kind", "a hop with kind 'note'", canonical(variant(chain=[{**hop, "kind": "note"}])), "chain[0].kind", "unknown kind")
    add("chain-extra-field", "a hop with a 'signature' field", canonical(variant(chain=[{**hop, "signature": "00"}])), "chain[0]", "unknown field")
    add("chain-too-long", "17 hops (the limit is 16)", canonical(variant(chain=[hop] * 17)), "chain", "at most 16")
    add(
        "chain-created-digits",
        "a hop whose created has Arabic-Indic digits",
        canonical(variant(chain=[{**hop, "created": "\u0662\u0660\u0662\u0666-01-31T12:00:00Z"}])),
        "chain[0].created",
        "UTC time",
    )
    return {
        "about": "Manifests every reader must reject at the malformed stage (spec/bundle.md). "
        "`field` is the field the error names, or null for errors of the JSON layer; "
        "`message_contains` is a fragment of gage's message, for gage's own tests only.",
        "manifests": cases,
    }


class _Delete:
    pass


def _sized(text: str, *, chars: int, size: int) -> str:
    """`text`, checked to be `chars` code points and `size` bytes of UTF-8 (what its vector says)."""
    assert (len(text), len(text.encode("utf-8"))) == (chars, size), (len(text), len(text.encode("utf-8")))
    return text


_DELETE = _Delete()


def _oversize(good: dict[str, Any]) -> dict[str, Any]:
    base = canonical({**good, "subject": "@"})
    prefix, suffix = base.split(b'"@"')
    count = MANIFEST_LIMIT + 1 - len(prefix) - len(suffix) - 2
    raw = prefix + b'"' + b"s" * count + b'"' + suffix
    assert len(raw) == MANIFEST_LIMIT + 1, len(raw)
    return {"prefix_b64": b64(prefix + b'"'), "repeat": "s", "repeat_count": count, "suffix_b64": b64(b'"' + suffix)}


# --- strict JSON ------------------------------------------------------------------------


def parts(prefix: bytes, repeat: bytes, count: int, suffix: bytes) -> dict[str, Any]:
    """Large inputs as a recipe: prefix + repeat * count + suffix (`repeat` is one or more ASCII bytes)."""
    return {"prefix_b64": b64(prefix), "repeat": repeat.decode("ascii"), "repeat_count": count, "suffix_b64": b64(suffix)}


def strict_json() -> dict[str, Any]:
    cases: list[dict[str, Any]] = []

    def ok(name: str, description: str, raw: bytes | dict[str, Any], value: Any) -> None:
        data = {"json_parts": raw} if isinstance(raw, dict) else {"json_b64": b64(raw)}
        cases.append({"name": name, "description": description, **data, "valid": True, "value": value})

    def bad(name: str, description: str, raw: bytes | dict[str, Any], contains: str) -> None:
        data = {"json_parts": raw} if isinstance(raw, dict) else {"json_b64": b64(raw)}
        cases.append({"name": name, "description": description, **data, "valid": False, "message_contains": contains})

    def nest(n: int, inner: Any) -> Any:
        for _ in range(n):
            inner = [inner]
        return inner

    # Depth: the number of arrays and objects open at once. A scalar alone is 0 deep, [] is 1.
    ok("scalar", "a number alone: depth 0", b"7", 7)
    ok("depth-32-arrays", "32 arrays inside each other", b"[" * 32 + b"]" * 32, nest(31, []))
    ok("depth-32-with-a-value", "32 arrays with a number in the innermost (a value adds no depth)", b"[" * 32 + b"0" + b"]" * 32, nest(32, 0))
    bad("depth-33-arrays", "33 arrays inside each other", b"[" * 33 + b"]" * 33, "nested too deeply")
    bad("depth-33-objects", "33 objects inside each other", b'{"a":' * 33 + b"1" + b"}" * 33, "nested too deeply")
    mixed = b'{"a":[' * 16 + b"]}" * 16
    ok("depth-32-mixed", "16 objects and 16 arrays, alternating", mixed, json.loads(mixed))
    bad("depth-33-mixed", "the same inside one more array", b"[" + mixed + b"]", "nested too deeply")
    bad("depth-huge", "100 000 arrays (a reader must not overflow its stack)", parts(b"", b"[", 100_000, b""), "nested too deeply")

    # Integers: at most 2^53 - 1 either side of zero, so that every reader holds the same value.
    ok("integer-max", "2^53 - 1", b"9007199254740991", 9007199254740991)
    ok("integer-min", "-(2^53 - 1)", b"-9007199254740991", -9007199254740991)
    ok("zero", "0", b"0", 0)
    bad("integer-2-53", "2^53 (a reader using doubles cannot tell it from 2^53 + 1)", b"9007199254740992", "out of range")
    bad("integer-minus-2-53", "-2^53", b"-9007199254740992", "out of range")
    bad("integer-17-digits", "17 digits", b"10000000000000000", "out of range")
    bad("integer-5000-digits", "5000 digits (whatever the reader's own digit limits)", parts(b"[", b"9", 5000, b"]"), "out of range")
    bad("minus-zero", "-0: an integer to some readers, a negative-zero float to others", b"-0", "-0")
    bad("float", "a fraction", b"0.5", "floating-point")
    bad("float-whole", "1.0, though its value is whole", b"1.0", "floating-point")
    bad("exponent", "1e2", b"1e2", "floating-point")
    bad("leading-zero", "01 (not JSON)", b"01", "not valid JSON")
    bad("non-ascii-digit", "an Arabic-Indic digit as a number (not JSON)", "[\u0661]".encode(), "not valid JSON")
    bad("nan", "NaN", b"NaN", "NaN")
    bad("infinity", "-Infinity", b"-Infinity", "Infinity")

    # Strings, keys, encoding.
    ok("paired-surrogates", "a correctly paired escape is one character (U+1F600)", b'"\\ud83d\\ude00"', "\U0001f600")
    bad("lone-surrogate-escape", "\\udc00 alone", b'"\\udc00"', "surrogate")
    bad("lone-surrogate-in-key", "an object key holding \\ud800", b'{"\\ud800":1}', "surrogate")
    bad("surrogate-utf8", "a surrogate encoded in UTF-8 (ED A0 80)", b'"\xed\xa0\x80"', "UTF-8")
    bad("overlong-utf8", "an overlong encoding of '/' (C0 AF)", b'"\xc0\xaf"', "UTF-8")
    bad("bom", "a byte-order mark first", b"\xef\xbb\xbf{}", "byte-order mark")
    bad("duplicate-key", "the same key twice", b'{"a":1,"a":1}', "duplicate key")
    bad("duplicate-key-escaped", "the same key twice, once written as an escape (keys are compared after unescaping)", b'{"a":1,"\\u0061":2}', "duplicate key")
    bad("raw-control-in-string", "a raw tab inside a string (JSON requires \\t)", b'"a\tb"', "not valid JSON")
    ok("raw-del-in-string", "a raw DEL (0x7F) inside a string is JSON", b'"a\x7fb"', "a\x7fb")
    ok("white-space-around", "space, tab, CR and LF around the value", b" \t\r\n{}\r\n", {})
    bad("trailing-data", "a second value", b"{}{}", "not valid JSON")
    bad("empty", "no value at all", b"", "not valid JSON")
    return {
        "about": "Strict JSON (spec/bundle.md section 3) at its edges, outside any schema. `valid` documents parse to `value`; "
        "the others are refused whatever they hold. Depth counts the arrays and objects open at once (a scalar alone is 0, "
        "[] is 1); 32 is the most. Integers lie within -(2^53 - 1) .. 2^53 - 1. A `json_parts` recipe is "
        "prefix + repeat * repeat_count + suffix. `message_contains` is a fragment of gage's message, for gage's own tests.",
        "cases": cases,
    }


# --- key files ---------------------------------------------------------------------------


KEYFILE_LIMIT = 32768  # room for a hybrid key (3984 characters), a 200-character name in any script, and a hybrid sealing binding (spec/relay.md)


def key_files() -> dict[str, Any]:
    alice = signing_key("alice")
    ka = key_text(alice)
    cases: list[dict[str, Any]] = []

    def file(data: bytes | dict[str, Any]) -> dict[str, Any]:
        return {"file_parts": data} if isinstance(data, dict) else {"file_b64": b64(data)}

    def ok(name: str, description: str, data: bytes, claimed: str) -> None:
        cases.append({"name": name, "description": description, **file(data), "valid": True, "key": ka, "claimed_name": claimed})

    def bad(name: str, description: str, data: bytes | dict[str, Any], field: str | None) -> None:
        cases.append({"name": name, "description": description, **file(data), "valid": False, "field": field})

    writer = canonical({"gage-key": 1, "key": ka, "name": "alice"}) + b"\n"
    ok("writer-form", "what `gage key export` writes: the writer's form and one newline", writer, "alice")
    ok("no-newline", "without the final newline", writer[:-1], "alice")
    ok("crlf", "ending in CR LF", writer[:-1] + b"\r\n", "alice")
    ok("spaced", "white space inside and around the object", b' {\n  "name": "alice",\n  "key": "' + ka.encode() + b'",\n  "gage-key": 1\n}\n\n', "alice")
    at_cap = writer + b"\n" * (KEYFILE_LIMIT - len(writer))
    assert len(at_cap) == KEYFILE_LIMIT
    ok("at-the-cap", f"{KEYFILE_LIMIT} bytes exactly, most of them trailing newlines", at_cap, "alice")
    bad("over-the-cap-by-newlines", f"{KEYFILE_LIMIT + 1} bytes: the cap counts trailing newlines too", at_cap + b"\n", None)
    bad("far-over-the-cap", "the key file followed by 100 000 spaces", parts(writer, b" ", 100_000, b"\n"), None)
    ok("no-name", "no name field: the claimed name is empty", canonical({"gage-key": 1, "key": ka}) + b"\n", "")
    ok("name-200", "a claimed name of 200 characters", canonical({"gage-key": 1, "key": ka, "name": "\u00e9" * 200}) + b"\n", "\u00e9" * 200)
    bad("name-201", "a claimed name of 201 characters", canonical({"gage-key": 1, "key": ka, "name": "n" * 201}) + b"\n", "name")
    bad("name-null", "a name that is not a string", canonical({"gage-key": 1, "key": ka, "name": None}) + b"\n", "name")
    bad("version-true", "gage-key: true (a boolean is not the integer 1)", canonical({"gage-key": True, "key": ka, "name": "a"}), "gage-key")
    bad("version-string", 'gage-key: "1"', canonical({"gage-key": "1", "key": ka, "name": "a"}), "gage-key")
    bad("version-2", "gage-key: 2", canonical({"gage-key": 2, "key": ka, "name": "a"}), "gage-key")
    bad("version-missing", "no gage-key (an identity file is not a key file)", canonical({"gage-identity": 1, "key": ka, "name": "a"}), "gage-key")
    bad("version-float", "gage-key: 1.0 (a float: refused by strict JSON)", b'{"gage-key":1.0,"key":"' + ka.encode() + b'","name":"a"}', None)
    bad("unknown-field", "a field 'trusted'", canonical({"gage-key": 1, "key": ka, "name": "a", "trusted": True}), None)
    bad("key-upper-hex", "the key in upper-case hex", canonical({"gage-key": 1, "key": "ed25519:" + ka[8:].upper(), "name": "a"}), "key")
    bad("key-missing", "no key", canonical({"gage-key": 1, "name": "a"}), "key")
    bad("duplicate-key", "gage-key twice", b'{"gage-key":1,"gage-key":1,"key":"' + ka.encode() + b'","name":"a"}', None)
    bad("bom", "a byte-order mark first", b"\xef\xbb\xbf" + writer, None)
    bad("not-object", "a JSON array", b"[]\n", None)
    return {
        "about": f"Key files (spec/bundle.md section 7). A reader refuses a file over {KEYFILE_LIMIT} bytes (trailing newlines count), "
        "parses the whole file as strict JSON (white space around the object is allowed), requires gage-key to be the "
        "integer 1, key to be key text, no other field than name, and name, when present, a string of at most 200 "
        "characters. `field` is the field gage's error names (null when it names none).",
        "cases": cases,
    }


# --- paths and the pinned Unicode version --------------------------------------------------


def properties_digest() -> str:
    """SHA-256 over one line per plain code point: what the path rules take from Unicode."""
    h = hashlib.sha256()
    for start, end in plain_ranges():
        for cp in range(start, end + 1):
            c = chr(cp)
            nfd = unicodedata.normalize("NFD", c)
            fields = [
                f"{cp:04X}",
                " ".join(f"{ord(x):04X}" for x in nfd),
                " ".join(f"{ord(x):04X}" for x in unicodedata.normalize("NFC", nfd)),
                " ".join(f"{ord(x):04X}" for x in c.casefold()),
                str(unicodedata.combining(c)),
            ]
            h.update((";".join(fields) + "\n").encode("ascii"))
    return h.hexdigest()


def fold(path: str) -> str:
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", path).casefold())


def paths() -> dict[str, Any]:
    require_unicode_14()
    accepted = [
        ("new-in-14", "U+1FAE0 MELTING FACE, assigned in Unicode 14.0", "melting-\U0001fae0.txt"),
        ("cjk", "Japanese folder and file names", "\u65e5\u672c\u8a9e/\u30d5\u30a1\u30a4\u30eb.txt"),
        ("component-255-bytes", "a component of 127 two-byte characters and one ASCII: 255 bytes", "\u00e9" * 127 + "x"),
        ("path-1024-bytes", "1024 bytes of UTF-8, 515 characters", "/".join(["\u00e9" * 127 + "x"] * 3 + ["\u00e9" * 125 + "\U0001fae0", "z"])),
        ("nfc-composed", "e with acute as one code point (NFC)", "caf\u00e9.txt"),
        ("combining-after-base", "a combining mark with no precomposed form stays (NFC)", "q\u0301.txt"),
        ("space-inside", "spaces inside a component", "with space/inside name.txt"),
        ("dots-inside", "dots that are not a whole component, nor at a component's end", ".hidden/a..b/...x"),
    ]
    acc = []
    for name, description, p in accepted:
        assert all(unicodedata.category(c) not in NOT_PLAIN_CATEGORIES for c in p)
        assert unicodedata.normalize("NFC", p) == p and len(p.encode()) <= 1024
        acc.append({"name": name, "description": description, "path": p, "utf8_bytes": len(p.encode())})
    folds = [
        ("Stra\u00dfe", "STRASSE"),
        ("\u017f\u0301", "\u015b"),
        ("\u212a", "k"),  # KELVIN SIGN
        ("\u0130", "i\u0307"),  # I WITH DOT ABOVE (full case folding)
        ("\u1e9e", "ss"),  # CAPITAL SHARP S
        ("\u00c5", "\u00e5"),
        ("a", "b"),
    ]
    fold_cases = [
        {"a": a, "b": b, "fold_a": fold(a), "fold_b": fold(b), "collide": fold(a) == fold(b)} for a, b in folds
    ]
    names = [
        ("stray-\xff\xfe.txt".encode("latin-1"), "two bytes that are not UTF-8: one U+FFFD each"),
        (b"caf\xe9", "Latin-1 e-acute"),
        (b"\xe2\x82", "a character cut short: one U+FFFD per byte, not one per cut character"),
        (b"\xed\xa0\x80", "a surrogate encoded in UTF-8: three bytes, three U+FFFD"),
        (b"\xc0\xaf", "an overlong '/': two U+FFFD"),
        ("ok-\u00e9".encode(), "valid UTF-8 appears as itself"),
        (b"a\\b", "a backslash in a name on disk appears as itself in JSON"),
    ]
    disk = []
    for raw, description in names:
        text = raw.decode("utf-8", "surrogateescape")
        disk.append(
            {
                "name_hex": raw.hex(),
                "description": description,
                "json_path": "payload/" + "".join("\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text),
                "shown": "payload/" + "".join(f"\\u{ord(c):04x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text),
            }
        )
    return {
        "about": "Payload paths (spec/bundle.md section 4), judged by Unicode 14.0.0 on every reader. `plain_ranges` lists, "
        "as hex ranges, the code points that are assigned in Unicode 14.0.0 and not of general category Cc, Cf, Cs, Co, "
        "Zl or Zp: the only ones a path may hold, and the only ones gage shows as themselves (frame.md). "
        "`properties_sha256` is SHA-256 over one ASCII line per plain code point c, in order: "
        "'CP;NFD(c);NFC(NFD(c));casefold(c);ccc(c)' + LF, each code point as upper-case hex of at least 4 digits and "
        "sequences space-separated (ccc in decimal): a reader whose Unicode library is newer than 14.0 can check that "
        "it agrees on these characters. `accepted` paths are valid; `fold` gives NFD(casefold(NFD(p))) for collision "
        "checks; `disk_names` are names found under payload/ that are not UTF-8, as `gage verify --json` writes them "
        "(`json_path`, each byte that is not part of a well-formed character as U+FFFD) and as its text output and the "
        "frame show them (`shown`, each such byte as \\udcNN).",
        "unicode_version": UNICODE_VERSION,
        "plain_ranges": [range_text(r) for r in plain_ranges()],
        "properties_sha256": properties_digest(),
        "accepted": acc,
        "fold": fold_cases,
        "disk_names": disk,
    }


# --- the frame: text or binary, payload lines, quoted values ---------------------------------


TEXT_SAMPLE = 8192
PREVIEW_LIMIT = 256 * 1024


def shown_char(c: str) -> str:
    """How the frame shows one character (frame.md), written out from unicodedata 14.0 alone."""
    cp = ord(c)
    if unicodedata.category(c) not in NOT_PLAIN_CATEGORIES:
        return c
    if cp < 0x100:
        return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(cp, f"\\x{cp:02x}")
    return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def frame_vectors() -> dict[str, Any]:
    require_unicode_14()
    tob: list[dict[str, Any]] = []

    def kind(name: str, description: str, data: bytes | dict[str, Any], expected: str) -> None:
        d = {"file_parts": data} if isinstance(data, dict) else {"file_b64": b64(data)}
        tob.append({"name": name, "description": description, **d, "kind": expected})

    euro = "\u20ac".encode()
    kind("empty", "an empty file", b"", "text")
    kind("ascii", "plain text", b"hello\n", "text")
    kind("utf8", "UTF-8 text", "Gr\u00fc\u00dfe \u2713\n".encode(), "text")
    kind("bom", "a UTF-8 byte-order mark is valid UTF-8 (shown as \\ufeff)", b"\xef\xbb\xbfhi\n", "text")
    kind("nul", "a NUL byte", b"text\x00more", "binary")
    kind("latin1-short", "a 5-byte Latin-1 file: invalid UTF-8 at its 4th byte", b"caf\xe9\n", "binary")
    kind("cut-at-end-of-file", "a file that ends in the first 2 bytes of a 3-byte character", b"price " + euro[:2], "binary")
    kind("surrogate-utf8", "a surrogate encoded in UTF-8", b"a\xed\xa0\x80b", "binary")
    kind("overlong", "an overlong encoding", b"a\xc0\xafb", "binary")
    kind("invalid-near-8k", "an invalid byte at offset 8189, in the last 4 bytes of the sample", parts(b"", b"a", 8189, b"\xffaa and more"), "binary")
    kind("cut-at-8k-file-goes-on", "a 3-byte character that starts at offset 8190: cut by the 8 KiB edge, and the file goes on", parts(b"", b"a", 8190, euro + b"\n"), "text")
    kind("cut-at-8k-file-ends", "a file of exactly 8192 bytes ending in 2 bytes of a 3-byte character", parts(b"", b"a", 8190, euro[:2]), "binary")
    kind("cut-at-8k-ill-formed", "at the 8 KiB edge, ED A0: no well-formed character starts so (it would be a surrogate)", parts(b"", b"a", 8190, b"\xed\xa0\x80\n"), "binary")
    kind("invalid-after-8k", "invalid UTF-8 only after the first 8 KiB: text (shown with \\udcNN)", parts(b"", b"a", 9000, b"\n\xff\n"), "text")
    kind("nul-after-8k", "a NUL only after the first 8 KiB: text (shown as \\x00)", parts(b"", b"a", 9000, b"\n\x00\n"), "text")

    lines: list[dict[str, Any]] = []

    def payload(name: str, description: str, data: bytes | dict[str, Any], expected: list[str] | None = None) -> None:
        raw = data if isinstance(data, bytes) else base64.b64decode(data["prefix_b64"]) + data["repeat"].encode() * data["repeat_count"] + base64.b64decode(data["suffix_b64"])
        more = len(raw) > PREVIEW_LIMIT
        shown = raw[:PREVIEW_LIMIT]
        if more:
            # A character cut at the preview limit is not shown (written out for the one vector that needs it).
            while shown and (shown[-1] & 0xC0) == 0x80:
                shown = shown[:-1]
            if shown and shown[-1] >= 0xC0:
                shown = shown[:-1]
        text = shown.decode("utf-8", "surrogateescape")
        split = text.split("\n")
        if split[-1] == "":
            split.pop()
        computed = ["".join("\\\\" if c == "\\" else shown_char(c) for c in line) for line in split]
        if expected is not None:
            assert computed == expected, (computed, expected)
        d = {"file_parts": data} if isinstance(data, dict) else {"file_b64": b64(data)}
        if len(shown) <= 1024:
            expect: dict[str, Any] = {"lines": computed}
        else:
            # Long output as a digest: SHA-256 of the lines joined by LF, their count, and the last line.
            digest = hashlib.sha256("\n".join(computed).encode("utf-8")).hexdigest()
            expect = {"lines_sha256": digest, "line_count": len(computed), "last_line": computed[-1]}
        lines.append({"name": name, "description": description, **d, **expect, "not_shown_bytes": len(raw) - len(shown)})

    payload("backslashes", "a literal backslash is shown doubled, so `\\x1b` typed in a file is told apart from ESC",
            b"real ESC: \x1b, typed: \\x1b, path C:\\dir\n", ["real ESC: \\x1b, typed: \\\\x1b, path C:\\\\dir"])
    payload("typed-escapes", "text that looks like every escape gage writes", b"\\\\ \\t \\r \\n \\x00 \\u202e \\U0001f600 \\udcff\n",
            ["\\\\\\\\ \\\\t \\\\r \\\\n \\\\x00 \\\\u202e \\\\U0001f600 \\\\udcff"])
    payload("controls", "tab, CR, VT, DEL, C1 NEL and ESC", b"a\tb\rc\x0bd\x7fe\xc2\x85f\x1b[31m\n", ["a\\tb\\rc\\x0bd\\x7fe\\x85f\\x1b[31m"])
    payload("format-and-separators", "bidi override, zero-width space, BOM, soft hyphen, line and paragraph separators",
            "\u202eabc\u202c \u200b \ufeff \u00ad \u2028 \u2029\n".encode(), ["\\u202eabc\\u202c \\u200b \\ufeff \\xad \\u2028 \\u2029"])
    payload("private-and-unassigned", "private use, a noncharacter, and code points unassigned in Unicode 14.0 (assigned in 15.0 and 15.1)",
            "\ue000 \ufdd0 \U00011f04 \U0002ebf0\n".encode(), ["\\ue000 \\ufdd0 \\U00011f04 \\U0002ebf0"])
    payload("plain-non-ascii", "letters, emoji (one new in 14.0) and combining marks are shown as themselves",
            "Gr\u00fc\u00dfe \U0001f600 \U0001fae0 q\u0301\n".encode(), ["Gr\u00fc\u00dfe \U0001f600 \U0001fae0 q\u0301"])
    payload("lines", "lines split on LF only; a final LF ends the last line; empty lines stay; CR LF shows its CR",
            b"one\r\n\ntwo\nthree", ["one\\r", "", "two", "three"])
    payload("invalid-after-8k", "bytes that are not UTF-8 (after the first 8 KiB) as \\udcNN, one per byte; U+0085 itself as \\x85",
            parts(b"", b"a", 9000, b"\n\xff\xc3\x85 \xc2\x85 \xe2\x82!\n"), None)
    payload("cut-at-preview-limit", "a character cut by the 256 KiB limit is not shown, and counts as not shown",
            parts(b"", b"a" * 63 + b"\n", 4095, b"a" * 63 + euro + b"tail\n"), None)
    last = lines[-2]["last_line"]
    assert last == "\\udcff\u00c5 \\x85 \\udce2\\udc82!", last
    assert lines[-1]["last_line"] == "a" * 63 and lines[-1]["line_count"] == 4096
    assert lines[-1]["not_shown_bytes"] == 8

    quoted_values = [
        ("plain", "alice"),
        ("quote", 'hi" (the sender\'s words); verdict: VERIFIED'),
        ("backslash-n", "a\\nb"),
        ("newline", "a\nb"),
        ("bidi", "invoice\u202eexe.pdf"),
        ("backslash-quote", 'a\\"b'),
    ]
    quoted = [
        {"name": n, "value": v, "shown": '"' + "".join("\\\\" if c == "\\" else '\\"' if c == '"' else shown_char(c) for c in v) + '"'}
        for n, v in quoted_values
    ]
    return {
        "about": "What `gage read` prints (spec/frame.md). `text_or_binary`: a file is text when its first 8192 bytes have "
        "no NUL and are valid UTF-8, except that, when the file goes on past them, they may end with 1 to 3 bytes that "
        "begin a well-formed character; anything else is binary. `payload_lines`: the lines printed after '| ' for a text "
        "file (the first 262144 bytes; a character cut there is left with the rest), and how many bytes of the file are "
        "not shown; when the shown text is over 1024 bytes, instead of `lines`: `lines_sha256`, the SHA-256 (lower-case hex) "
        "of the UTF-8 of the lines as printed after '| ' (without that prefix), joined by one LF each with none after the "
        "last, with `line_count` and `last_line`. `quoted`: values shown in double quotes. A `file_parts` recipe is "
        "prefix + repeat * repeat_count + suffix.",
        "text_sample_bytes": TEXT_SAMPLE,
        "preview_limit_bytes": PREVIEW_LIMIT,
        "text_or_binary": tob,
        "payload_lines": lines,
        "quoted": quoted,
    }


# --- the pinned Unicode version --------------------------------------------------------

UNICODE_VERSION = "14.0.0"
NOT_PLAIN_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def require_unicode_14() -> None:
    """Every table and expected value here is computed with Python 3.11's unicodedata."""
    if unicodedata.unidata_version != UNICODE_VERSION:
        raise SystemExit(
            f"run this with Python 3.11: its unicodedata is Unicode {UNICODE_VERSION}, this one is {unicodedata.unidata_version}"
        )


def plain_ranges() -> list[tuple[int, int]]:
    """Code points assigned in Unicode 14.0 and not of a category in NOT_PLAIN_CATEGORIES, as ranges."""
    require_unicode_14()
    ranges: list[tuple[int, int]] = []
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) in NOT_PLAIN_CATEGORIES:
            continue
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def range_text(r: tuple[int, int]) -> str:
    return f"{r[0]:04X}-{r[1]:04X}"


SANITIZE = HERE.parent.parent / "gage" / "sanitize.py"
BLOCK = re.compile(r'(# BEGIN GENERATED PLAIN RANGES\n_PLAIN_RANGES = """\n).*?(""")', re.S)


def sanitize_table() -> None:
    """Write the plain ranges into gage/format/sanitize.py, between its markers."""
    items = [range_text(r) for r in plain_ranges()]
    lines = [" ".join(items[i : i + 8]) for i in range(0, len(items), 8)]
    text = SANITIZE.read_text(encoding="utf-8")
    new, n = BLOCK.subn(lambda m: m.group(1) + "\n".join(lines) + "\n" + m.group(2), text)
    assert n == 1, "the markers in gage/format/sanitize.py are missing"
    SANITIZE.write_text(new, encoding="utf-8")


def main() -> None:
    if sys.argv[1:] == ["--sanitize-table"]:
        sanitize_table()
        return
    for name, text in render().items():
        (HERE / name).write_text(text, encoding="utf-8")


def render() -> dict[str, str]:
    """Every vector file this script writes, by name, as text (the tests compare these with the committed files)."""
    require_unicode_14()
    return {
        "keys-words.json": dump(keys_words()),
        "bundles.json": dump(bundles()),
        "malformed-manifests.json": dump(malformed()),
        "strict-json.json": dump(strict_json()),
        "key-files.json": dump(key_files()),
        "paths.json": dump(paths()),
        "frame.json": dump(frame_vectors()),
    }


if __name__ == "__main__":
    main()
