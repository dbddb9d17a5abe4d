"""Generate spec/vectors/key-statements.json: signed key statements, what a receiver does with each, and after.

Deterministic: keys come from fixed seeds, times are fixed, and Ed25519 signatures are
deterministic, so running this again gives the same bytes. The statements and their
signatures are made here with PyNaCl and hashlib directly, from the rules in
spec/keys.md, never with gage's own key statement code, so the vectors check that code
rather than copy it. The bundles in `cases` and `carriers` use gage's manifest writer
(the manifest format has its own vectors). The expected outcomes are written by hand.

    python spec/vectors/generate_keys.py          # rewrite key-statements.json
    python spec/vectors/generate_keys.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.signing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from gage.format.manifest import FileEntry, Manifest, Party  # noqa: E402

OUT = HERE / "key-statements.json"
RETIRING = b"gage/key-statement/v1/retiring\x00"
REPLACEMENT = b"gage/key-statement/v1/replacement\x00"
STATEMENT_ID = b"gage/key-statement-id/v1\x00"
MANIFEST = b"gage/manifest/v1\x00"
T1, T2, T3 = "2026-02-01T09:00:00Z", "2026-03-01T09:00:00Z", "2026-04-01T09:00:00Z"
CREATED = "2026-01-15T10:00:00Z"
PEOPLE = ("me", "alice", "alice-new", "bob", "mallory")
NOTES = b"signed for the key statement vectors\n"


def seed(name: str) -> bytes:
    return hashlib.sha256(b"gage-vector/key-statement-seed/" + name.encode()).digest()


def signer(name: str) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(seed(name))


def key(name: str) -> str:
    return "ed25519:" + bytes(signer(name).verify_key).hex()


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def sign(name: str, context: bytes, raw: bytes) -> str:
    return signer(name).sign(context + raw).signature.hex()


def statement(who: str, reason: str, at: str, replacement: str | None) -> bytes:
    return canonical(
        {
            "gage-key-statement": 1,
            "key": key(who),
            "name": who,
            "reason": reason,
            "retired_at": at,
            "replacement": key(replacement) if replacement else None,
        }
    )


def signed_file(raw: bytes, signature: str, replacement_signature: str | None) -> bytes:
    return (
        canonical(
            {
                "gage-signed-key-statement": 1,
                "statement": raw.decode("utf-8"),
                "signature": signature,
                "replacement_signature": replacement_signature,
            }
        )
        + b"\n"
    )


def statements() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def add(label: str, about: str, raw: bytes, sig: str, rsig: str | None, by_key: bool, by_replacement: bool) -> None:
        out[label] = {
            "about": about,
            "file": b64(signed_file(raw, sig, rsig)),
            "statement": b64(raw),
            "id": hashlib.sha256(STATEMENT_ID + raw).hexdigest(),
            "signed_by_key": by_key,
            "signed_by_replacement": by_replacement,
        }

    def good(label: str, about: str, who: str, reason: str, at: str, replacement: str | None = None) -> None:
        raw = statement(who, reason, at, replacement)
        rsig = sign(replacement, REPLACEMENT, raw) if replacement else None
        add(label, about, raw, sign(who, RETIRING, raw), rsig, True, replacement is not None)

    good("alice-superseded-new", "alice's key superseded by alice-new; both sign", "alice", "superseded", T1, "alice-new")
    good("alice-superseded", "alice's key superseded, no replacement named", "alice", "superseded", T1)
    good("alice-superseded-later", "as alice-superseded, claiming a later time", "alice", "superseded", T3)
    good("alice-compromised", "alice's key compromised, no replacement", "alice", "compromised", T2)
    good("alice-compromised-earlier", "alice's key compromised, claiming an earlier time", "alice", "compromised", T1)
    good("me-superseded", "the receiver's own key, superseded", "me", "superseded", T1)
    good("mallory-superseded", "a key the receiver does not confirm", "mallory", "superseded", T1)

    raw = statement("bob", "compromised", T1, None)
    add("bob-signed-by-alice", "says bob's key is compromised, but alice's key signed it: not bound to its key",
        raw, sign("alice", RETIRING, raw), None, False, False)  # fmt: skip
    raw = statement("alice", "superseded", T1, "alice-new")
    add("alice-new-key-only", "retires alice's key, but only alice-new signed (in both places)",
        raw, sign("alice-new", RETIRING, raw), sign("alice-new", REPLACEMENT, raw), False, True)  # fmt: skip
    add("alice-replacement-unsigned", "names alice-new, which did not sign (half-signed)",
        raw, sign("alice", RETIRING, raw), None, True, False)  # fmt: skip
    add("alice-replacement-wrong-signer", "names alice-new, but mallory made the replacement signature",
        raw, sign("alice", RETIRING, raw), sign("mallory", REPLACEMENT, raw), True, False)  # fmt: skip
    add("roles-swapped", "each key signed with the other role's context",
        raw, sign("alice", REPLACEMENT, raw), sign("alice-new", RETIRING, raw), False, False)  # fmt: skip
    raw = statement("alice", "superseded", T1, None)
    add("manifest-context", "alice signed with the manifest context: not a statement signature",
        raw, sign("alice", MANIFEST, raw), None, False, False)  # fmt: skip
    return out


def malformed() -> list[dict[str, Any]]:
    """Files a reader refuses at the malformed stage, and the field it names (null: the JSON layer)."""
    good = statement("alice", "superseded", T1, None)
    sig = sign("alice", RETIRING, good)
    cases: list[tuple[str, bytes, str | None]] = []

    def envelope(obj: dict[str, Any]) -> bytes:
        return canonical(obj) + b"\n"

    base = {"gage-signed-key-statement": 1, "statement": good.decode(), "signature": sig, "replacement_signature": None}

    def with_statement(stmt: dict[str, Any] | bytes) -> bytes:
        raw = stmt if isinstance(stmt, bytes) else canonical(stmt)
        return envelope({**base, "statement": raw.decode("utf-8")})

    fields = json.loads(good)
    cases += [
        ("not JSON", b"gage-key-statement\n", None),
        ("a byte-order mark", b"\xef\xbb\xbf" + envelope(base), None),
        ("a duplicate key", envelope(base)[:-2] + b',"signature":"' + sig.encode() + b'"}\n', None),
        ("envelope version 2", envelope({**base, "gage-signed-key-statement": 2}), "gage-signed-key-statement"),
        ("envelope version as a string", envelope({**base, "gage-signed-key-statement": "1"}), "gage-signed-key-statement"),
        ("an unknown envelope field", envelope({**base, "note": "hi"}), "(top)"),
        ("replacement_signature missing", envelope({k: v for k, v in base.items() if k != "replacement_signature"}), "(top)"),
        ("statement as an object, not its bytes", envelope({**base, "statement": fields}), "statement"),
        ("signature too short", envelope({**base, "signature": sig[:126]}), "signature"),
        ("signature in upper case", envelope({**base, "signature": sig.upper()}), "signature"),
        ("replacement_signature with no replacement", envelope({**base, "replacement_signature": sig}), "replacement_signature"),
        ("statement version 2", with_statement({**fields, "gage-key-statement": 2}), "statement.gage-key-statement"),
        ("statement version true", with_statement({**fields, "gage-key-statement": True}), "statement.gage-key-statement"),
        ("an unknown statement field", with_statement({**fields, "expires": T3}), "statement"),
        ("statement field missing", with_statement({k: v for k, v in fields.items() if k != "replacement"}), "statement"),
        ("statement not JSON", with_statement(b"{retired}"), "statement"),
        ("a float in the statement", with_statement(good[:-1] + b',"n":1.0}'), "statement"),
        ("key in upper-case hex", with_statement({**fields, "key": fields["key"].upper().replace("ED25519", "ed25519")}), "statement.key"),
        ("reason not in the list", with_statement({**fields, "reason": "lost"}), "statement.reason"),
        ("retired_at not a real date", with_statement({**fields, "retired_at": "2026-02-30T09:00:00Z"}), "statement.retired_at"),
        ("retired_at without Z", with_statement({**fields, "retired_at": "2026-02-01T09:00:00"}), "statement.retired_at"),
        ("retired_at in Arabic-Indic digits", with_statement({**fields, "retired_at": "\u0662\u0660\u0662\u0666-02-01T09:00:00Z"}), "statement.retired_at"),
        ("retired_at at second 60", with_statement({**fields, "retired_at": "2026-02-01T09:00:60Z"}), "statement.retired_at"),
        ("a claimed name of 201 characters", with_statement({**fields, "name": "a" * 201}), "statement.name"),
        ("a key as its own replacement", with_statement({**fields, "replacement": fields["key"]}), "statement.replacement"),
        ("a statement over 16384 bytes", with_statement({**fields, "name": "a" * 16400}), "statement"),
    ]
    return [{"label": label, "file": b64(data), "field": field} for label, data, field in cases]


def bundle(case: str, sender: str, files: dict[str, bytes], *, kind: str = "share", parent: str | None = None) -> dict[str, Any]:
    m = Manifest.build(
        kind=kind,
        sender=Party(key=bytes.fromhex(key(sender)[8:]), name=sender),
        files=[FileEntry(path=p, size=len(d), sha256=hashlib.sha256(d).hexdigest()) for p, d in files.items()],
        nonce=hashlib.sha256(b"gage-vector/key-statement-nonce/" + case.encode()).hexdigest()[:32],
        created=CREATED,
        thread=parent,
        parent=parent,
        subject=f"vector {case}",
    )
    return {
        "signer": sender,
        "manifest": b64(m.raw),
        "signature": sign(sender, MANIFEST, m.raw),
        "files": {p: b64(d) for p, d in files.items()},
        "id": m.id,
    }


def carriers(st: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Which bundles carry a statement (spec/keys.md section 3)."""
    data = base64.b64decode(st["alice-superseded-new"]["file"])
    parent = hashlib.sha256(b"gage-vector/a-parent").hexdigest()
    rows = [
        ("the rule: a share, no parent, one file gage-key-statement.json", "alice-new", {"gage-key-statement.json": data}, "share", None, True),
        ("signed by someone else: the carrier adds no trust", "bob", {"gage-key-statement.json": data}, "share", None, True),
        ("another kind", "alice-new", {"gage-key-statement.json": data}, "question", None, False),
        ("a reply", "alice-new", {"gage-key-statement.json": data}, "share", parent, False),
        ("a second file", "alice-new", {"gage-key-statement.json": data, "notes.txt": NOTES}, "share", None, False),
        ("another name", "alice-new", {"key-statement.json": data}, "share", None, False),
        ("in a folder", "alice-new", {"keys/gage-key-statement.json": data}, "share", None, False),
    ]
    return [
        {"about": about, "bundle": bundle(f"carrier-{i}", who, files, kind=kind, parent=par), "statement_bundle": expect}
        for i, (about, who, files, kind, par, expect) in enumerate(rows)
    ]


def cases() -> list[dict[str, Any]]:
    def case(label: str, about: str, steps: list[dict[str, Any]], status: dict[str, str], verdicts: list[dict[str, Any]],
             confirmed: tuple[str, ...] = ("alice",), candidates: tuple[str, ...] = (),
             linked: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:  # fmt: skip
        return {
            "label": label,
            "about": about,
            "receiver": {"confirmed": list(confirmed), "candidates": list(candidates)},
            "steps": steps,
            "status_after": status,
            "linked_after": linked or {},
            "verdicts_after": [
                {**bundle(f"{label}-{i}", v["signer"], {"notes.txt": NOTES}), "verdict": v["verdict"], "name": v["name"], "status": v["status"]}
                for i, v in enumerate(verdicts)
            ],
        }

    def apply(name: str, expect: str) -> dict[str, Any]:
        return {"apply": name, "expect": expect}

    old_ok = {"signer": "alice", "verdict": "verified", "name": "alice", "status": "retired"}
    old_bad = {"signer": "alice", "verdict": "unverified", "name": None, "status": "retired"}
    old_confirmed = {"signer": "alice", "verdict": "verified", "name": "alice", "status": "confirmed"}
    return [
        case("superseded-with-replacement", "applied: alice's key retired, alice-new a candidate linked to alice",
             [apply("alice-superseded-new", "applied")],
             {"alice": "retired", "alice-new": "candidate"},
             [old_ok, {"signer": "alice-new", "verdict": "unverified", "name": None, "status": "candidate"}],
             linked={"alice-new": {"replaces": "alice", "contact": "alice"}}),
        case("compromised", "applied: nothing alice's key signed is verified again",
             [apply("alice-compromised", "applied")], {"alice": "retired"}, [old_bad]),
        case("escalation", "superseded, then compromised: applied although it claims an earlier time",
             [apply("alice-superseded-later", "applied"), apply("alice-compromised-earlier", "applied")],
             {"alice": "retired"}, [old_bad]),
        case("would-unretire", "compromised, then superseded (later): refused, it would raise trust",
             [apply("alice-compromised", "applied"), apply("alice-superseded-later", "would-unretire")],
             {"alice": "retired"}, [old_bad]),
        case("replayed", "the same statement twice",
             [apply("alice-superseded-new", "applied"), apply("alice-superseded-new", "replayed")],
             {"alice": "retired", "alice-new": "candidate"}, [old_ok],
             linked={"alice-new": {"replaces": "alice", "contact": "alice"}}),
        case("older", "compromised at T2, then compromised claiming T1",
             [apply("alice-compromised", "applied"), apply("alice-compromised-earlier", "older")],
             {"alice": "retired"}, [old_bad]),
        case("already-retired", "superseded at T1, then superseded claiming T3: nothing to change",
             [apply("alice-superseded", "applied"), apply("alice-superseded-later", "already-retired")],
             {"alice": "retired"}, [old_ok]),
        case("unknown-key", "a key this home does not know retires nothing",
             [apply("alice-superseded-new", "unknown-key")], {"alice": "unknown", "alice-new": "unknown"},
             [{"signer": "alice", "verdict": "unverified", "name": None, "status": "unknown"}], confirmed=()),
        case("candidate-key", "a candidate's statement is only a claim",
             [apply("alice-compromised", "candidate-key")], {"alice": "candidate"},
             [{"signer": "alice", "verdict": "unverified", "name": None, "status": "candidate"}], confirmed=(), candidates=("alice",)),
        case("not-bound", "alice's key cannot retire bob's",
             [apply("bob-signed-by-alice", "not-bound")], {"alice": "confirmed", "bob": "confirmed"},
             [old_confirmed, {"signer": "bob", "verdict": "verified", "name": "bob", "status": "confirmed"}], confirmed=("alice", "bob")),
        case("new-key-only", "the new key alone cannot retire the old one",
             [apply("alice-new-key-only", "new-key-only")], {"alice": "confirmed", "alice-new": "unknown"}, [old_confirmed]),
        case("replacement-unsigned", "a replacement must sign too",
             [apply("alice-replacement-unsigned", "replacement-unsigned"), apply("alice-replacement-wrong-signer", "replacement-unsigned")],
             {"alice": "confirmed", "alice-new": "unknown"}, [old_confirmed]),
        case("contexts", "signatures under another context count for nothing",
             [apply("manifest-context", "not-bound"), apply("roles-swapped", "not-bound")], {"alice": "confirmed"}, [old_confirmed]),
        case("own-key", "a statement about the receiver's own key is not applied as a contact's",
             [apply("me-superseded", "own-key")], {"me": "unknown"}, []),
        case("mallory", "mallory is nobody here", [apply("mallory-superseded", "unknown-key")], {"mallory": "unknown"}, []),
        case("previous-key-escalation",
             "superseded with alice-new; the ceremony confirms alice-new as alice; then the old key is compromised",
             [apply("alice-superseded-new", "applied"), {"pair": "alice-new", "as": "alice", "expect": "confirmed"},
              apply("alice-compromised", "applied"), {"pair": "alice", "as": "alice-again", "expect": "refused"}],
             {"alice": "retired", "alice-new": "confirmed"},
             [old_bad, {"signer": "alice-new", "verdict": "verified", "name": "alice", "status": "confirmed"}]),
    ]


def vectors() -> dict[str, Any]:
    st = statements()
    return {
        "about": "Key statements (spec/keys.md). `statements` are signed files (base64), each with its statement bytes, "
        "id and which signatures verify. `cases`: build a receiver whose identity is `me`, confirm `confirmed` with the "
        "ceremony and add `candidates`; then run `steps` in order (apply a statement file: expect the outcome code; or "
        "pair a key under a name with the right words: expect confirmed or refused), then check `status_after` (each "
        "person's key status), `linked_after` (candidates linked to a contact) and the verdict of each bundle in "
        "`verdicts_after` (its exact bytes, held in inbox/pending).",
        "contexts": {
            "retiring": RETIRING.decode("ascii").replace("\x00", "\\0"),
            "replacement": REPLACEMENT.decode("ascii").replace("\x00", "\\0"),
            "id": STATEMENT_ID.decode("ascii").replace("\x00", "\\0"),
            "manifest": MANIFEST.decode("ascii").replace("\x00", "\\0"),
        },
        "receiver": "me",
        "people": [{"name": n, "seed": seed(n).hex(), "key": key(n)} for n in PEOPLE],
        "statements": st,
        "malformed": malformed(),
        "carriers": carriers(st),
        "cases": cases(),
    }


def main() -> int:
    text = json.dumps(vectors(), indent=2, ensure_ascii=False) + "\n"
    if "--check" in sys.argv[1:]:
        if OUT.read_text("utf-8") != text:
            print("key-statements.json is out of date: run python spec/vectors/generate_keys.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
