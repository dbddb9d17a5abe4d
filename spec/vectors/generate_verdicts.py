"""Generate spec/vectors/verdicts.json: bundles, a receiver's setup, and the verdict it must compute.

Deterministic: every key comes from a fixed seed, every manifest from a fixed created
time and nonce, so running this again gives the same bytes (Ed25519 signatures are
deterministic). The expected verdicts are written out here by hand from the rules in
spec/verdict.md; nothing below calls gage's verdict code, so the vectors check it rather
than copy it.

    python spec/vectors/generate_verdicts.py          # rewrite verdicts.json
    python spec/vectors/generate_verdicts.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.signing

from gage.format import strictjson
from gage.format.keys import key_text, short_fingerprint, sign_manifest
from gage.format.manifest import FileEntry, Hop, Manifest, Party, bundle_id
from gage.format.words import derive

OUT = Path(__file__).with_name("verdicts.json")
CREATED = "2026-01-15T10:00:00Z"
PEOPLE = ("me", "alice", "bob", "cara", "uma")
NOTES = b"hello from the vectors\n"
GRANTS = '[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Summarise it."\n'
GRANTS_WITH_BOB = GRANTS + '\n[[grant]]\ncontact = "bob"\nkind = "share"\nmay = "File it."\n'
# Bundle ids this receiver has facts about (bundles that are not themselves in the vectors).
SENT_BY_ME = hashlib.sha256(b"gage-vector/sent-by-me").hexdigest()
RECEIVED_BEFORE = hashlib.sha256(b"gage-vector/received-before").hexdigest()
NEVER_SEEN = hashlib.sha256(b"gage-vector/never-seen").hexdigest()


def seed(name: str) -> bytes:
    return hashlib.sha256(b"gage-vector/seed/" + name.encode()).digest()


def signer(name: str) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(seed(name))


def key(name: str) -> bytes:
    return bytes(signer(name).verify_key)


def nonce(case: str) -> str:
    return hashlib.sha256(b"gage-vector/nonce/" + case.encode()).hexdigest()[:32]


def entry(path: str, data: bytes) -> FileEntry:
    return FileEntry(path=path, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def manifest(case: str, sender: str, *, claimed: str | None = None, kind: str = "share", parent: str | None = None,
             to: tuple[str, ...] = ("me",), chain: list[Hop] | None = None,
             files: dict[str, bytes] | None = None) -> Manifest:  # fmt: skip
    files = files if files is not None else {"notes.txt": NOTES}
    return Manifest.build(
        kind=kind,
        sender=Party(key=key(sender), name=claimed if claimed is not None else sender),
        files=[entry(p, d) for p, d in files.items()],
        nonce=nonce(case),
        created=CREATED,
        thread=parent,
        parent=parent,
        to=[Party(key=key(n), name=n) for n in to],
        subject=f"vector {case}",
        chain=chain,
    )


def bundle(raw: bytes, signature: bytes, files: dict[str, bytes]) -> dict[str, Any]:
    return {
        "id": bundle_id(raw),
        "manifest": base64.b64encode(raw).decode("ascii"),
        "signature": signature.hex(),
        "files": {p: base64.b64encode(d).decode("ascii") for p, d in sorted(files.items())},
    }


def signed(m: Manifest, by: str | None = None, files: dict[str, bytes] | None = None) -> dict[str, Any]:
    sig = sign_manifest(signer(by or _sender_name(m)), m.raw)
    return bundle(m.raw, sig, files if files is not None else {"notes.txt": NOTES})


def _sender_name(m: Manifest) -> str:
    return next(n for n in PEOPLE if key(n) == m.sender.key)


def contact(name: str) -> dict[str, str]:
    return {"name": name, "key": key_text(key(name))}


def sender(name: str, *, status: str, local: str | None, claimed: str | None = None, sig: bool = True) -> dict[str, Any]:
    # is_me: the receiver's own key, and only where its signature verifies (spec/verdict.md, Sender).
    return {"key": key_text(key(name)), "fingerprint": short_fingerprint(key(name)), "name": local, "status": status, "claimed_name": claimed or name,
            "signature_ok": sig, "is_me": name == "me" and sig, "scheme": "classical-only"}  # fmt: skip


def seen(times: int, *, parent: str | None = None, parent_status: str | None = None) -> dict[str, Any]:
    return {
        "times_received": times,
        "first": times <= 1,
        "sent_by_me": False,
        "parent": parent,
        "parent_status": parent_status,
        "reply_to_sent": parent_status == "sent-by-me",
    }


def case(name: str, description: str, b: dict[str, Any], *, confirmed: list[str], candidates: list[str] | None = None,
         received: int = 1, sent: list[str] | None = None, received_other: list[str] | None = None,
         authority: str | None = GRANTS, expected: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    journal = [{"event": "sent", "bundle": i} for i in (sent or [])]
    journal += [{"event": "received", "bundle": i} for i in (received_other or [])]
    journal += [{"event": "received", "bundle": b["id"]}] * received
    return {
        "name": name,
        "description": description,
        "receiver": {
            "confirmed": [contact(n) for n in confirmed],
            "candidates": [{"key": key_text(key(n)), "claimed_name": n, "source": f"key file {n}.gagekey"} for n in candidates or []],
            "journal": journal,
            "authority": authority,
        },
        "bundle": b,
        "expected": {"problems": [], "addressed_to_me": True, "authority": [], "chain": [], **expected},
    }


def cases() -> list[dict[str, Any]]:
    out = []
    m = manifest("verified-first", "alice")
    out.append(case("verified-first", "A confirmed contact's intact bundle, received once.", signed(m), confirmed=["alice", "bob"],
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1), "authority": ["Summarise it."]}))  # fmt: skip
    m = manifest("local-name-differs", "alice", claimed="Alice Liddell")
    b = signed(m)
    out.append(case("local-name-differs", "The name is the receiver's own name for the key, never the claimed one.", b,
                    confirmed=["alice"],
                    expected={"verdict": "verified",
                              "sender": sender("alice", status="confirmed", local="alice", claimed="Alice Liddell"),
                              "seen": seen(1), "authority": ["Summarise it."]}))  # fmt: skip
    m = manifest("unverified-candidate", "cara")
    out.append(case("unverified-candidate", "A good signature by a candidate key: unverified, no name.", signed(m),
                    confirmed=["alice"], candidates=["cara"],
                    expected={"verdict": "unverified", "sender": sender("cara", status="candidate", local=None),
                              "seen": seen(1)}))  # fmt: skip
    m = manifest("unverified-unknown-claims-alice", "uma", claimed="alice")
    out.append(case("unverified-unknown-claims-alice", "An unknown key that claims a contact's name gets no name and no grant.",
                    signed(m), confirmed=["alice"],
                    expected={"verdict": "unverified",
                              "sender": sender("uma", status="unknown", local=None, claimed="alice"), "seen": seen(1)}))  # fmt: skip
    m = manifest("invalid-tampered-confirmed", "alice")
    out.append(case("invalid-tampered-confirmed", "Payload changed after signing: invalid; the signer is still known.",
                    signed(m, files={"notes.txt": b"hello from the vectorz\n"}), confirmed=["alice"],
                    expected={"verdict": "invalid", "problems": [{"stage": "tampered", "path": "payload/notes.txt"}],
                              "sender": sender("alice", status="confirmed", local="alice"), "seen": seen(1)}))  # fmt: skip
    m = manifest("invalid-missing-file", "alice")
    out.append(case("invalid-missing-file", "A listed file is missing.", signed(m, files={}), confirmed=["alice"],
                    expected={"verdict": "invalid", "problems": [{"stage": "tampered", "path": "payload/notes.txt"}],
                              "sender": sender("alice", status="confirmed", local="alice"), "seen": seen(1)}))  # fmt: skip
    m = manifest("invalid-extra-file", "alice")
    out.append(case("invalid-extra-file", "A file not in the manifest.",
                    signed(m, files={"notes.txt": NOTES, "extra.txt": b"smuggled\n"}), confirmed=["alice"],
                    expected={"verdict": "invalid", "problems": [{"stage": "tampered", "path": "payload/extra.txt"}],
                              "sender": sender("alice", status="confirmed", local="alice"), "seen": seen(1)}))  # fmt: skip
    m = manifest("invalid-forged-confirmed-key", "alice")
    out.append(case("invalid-forged-confirmed-key", "Names alice's key, signed by uma: never shown as alice.",
                    signed(m, by="uma"), confirmed=["alice"],
                    expected={"verdict": "invalid", "problems": [{"stage": "signature", "path": "manifest.sig"}],
                              "sender": sender("alice", status="confirmed", local=None, sig=False), "seen": seen(1)}))  # fmt: skip
    m = manifest("invalid-short-signature-candidate", "cara")
    b = signed(m)
    b["signature"] = b["signature"][:-2]
    out.append(case("invalid-short-signature-candidate", "A 63-byte signature is a bad signature, not a crash.", b,
                    confirmed=[], candidates=["cara"],
                    expected={"verdict": "invalid", "problems": [{"stage": "signature", "path": "manifest.sig"}],
                              "sender": sender("cara", status="candidate", local=None, sig=False), "seen": seen(1)}))  # fmt: skip
    m = manifest("invalid-badsig-unknown", "uma")
    b = signed(m)
    b["signature"] = ("%02x" % (int(b["signature"][:2], 16) ^ 0x01)) + b["signature"][2:]
    out.append(case("invalid-badsig-unknown", "One bit of the signature flipped.", b, confirmed=["alice"],
                    expected={"verdict": "invalid", "problems": [{"stage": "signature", "path": "manifest.sig"}],
                              "sender": sender("uma", status="unknown", local=None, sig=False), "seen": seen(1)}))  # fmt: skip
    m = manifest("repeated", "alice")
    out.append(case("repeated", "The same id received three times.", signed(m), confirmed=["alice"], received=3,
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(3), "authority": ["Summarise it."]}))  # fmt: skip
    m = manifest("reply-to-sent", "alice", kind="answer", parent=SENT_BY_ME)
    out.append(case("reply-to-sent", "An answer whose parent the receiver sent.", signed(m), confirmed=["alice"],
                    sent=[SENT_BY_ME],
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1, parent=SENT_BY_ME, parent_status="sent-by-me")}))  # fmt: skip
    m = manifest("reply-to-received", "alice", kind="answer", parent=RECEIVED_BEFORE)
    out.append(case("reply-to-received", "A reply to a bundle the receiver received but did not send.", signed(m),
                    confirmed=["alice"], received_other=[RECEIVED_BEFORE],
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1, parent=RECEIVED_BEFORE, parent_status="received")}))  # fmt: skip
    m = manifest("reply-to-unknown", "uma", kind="ack", parent=NEVER_SEEN)
    out.append(case("reply-to-unknown", "A reply to a parent never seen, from an unknown key.", signed(m),
                    confirmed=["alice"], sent=[SENT_BY_ME], received=0,
                    expected={"verdict": "unverified", "sender": sender("uma", status="unknown", local=None),
                              "seen": seen(0, parent=NEVER_SEEN, parent_status="unknown")}))  # fmt: skip
    m = manifest("not-addressed-to-me", "alice", to=("bob",))
    out.append(case("not-addressed-to-me", "Recipients named, the receiver not among them.", signed(m), confirmed=["alice"],
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1), "addressed_to_me": False, "authority": ["Summarise it."]}))  # fmt: skip
    m = manifest("no-recipients", "alice", to=())
    out.append(case("no-recipients", "No recipients named: addressed_to_me is null.", signed(m), confirmed=["alice"],
                    authority=None,
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1), "addressed_to_me": None}))  # fmt: skip
    m = manifest("kind-not-granted", "alice", kind="question")
    out.append(case("kind-not-granted", "A grant for share does not cover a question.", signed(m), confirmed=["alice"],
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1)}))  # fmt: skip
    m = manifest("authority-file-broken", "alice")
    out.append(case("authority-file-broken", "An authority file with an error grants nothing at all.", signed(m),
                    confirmed=["alice"], authority=GRANTS + '\n[[grant]]\ncontact = "zed"\nkind = "share"\nmay = "x"\n',
                    expected={"verdict": "verified", "sender": sender("alice", status="confirmed", local="alice"),
                              "seen": seen(1), "authority_errors": 1}))  # fmt: skip
    hop = Hop(key=key("alice"), name="alice", bundle=bundle_id(manifest("verified-first", "alice").raw), kind="share",
              created=CREATED)  # fmt: skip
    m = manifest("forwarded-by-bob", "bob", chain=[hop])
    out.append(case("forwarded-by-bob", "bob forwards alice's bundle: bob is the sender, alice only bob's claim.",
                    signed(m), confirmed=["alice", "bob"], authority=GRANTS_WITH_BOB,
                    expected={"verdict": "verified", "sender": sender("bob", status="confirmed", local="bob"),
                              "seen": seen(1), "authority": ["File it."],
                              "chain": [{"key": key_text(key("alice")), "fingerprint": short_fingerprint(key("alice")), "claimed_name": "alice", "contact_name": "alice",
                                         "bundle": hop.bundle, "claimed_by": "bob"}]}))  # fmt: skip
    m = manifest("forwarded-by-unknown", "uma", chain=[hop])
    out.append(case("forwarded-by-unknown", "An unknown key's chain names alice: still only a claim.", signed(m),
                    confirmed=["alice"],
                    expected={"verdict": "unverified", "sender": sender("uma", status="unknown", local=None), "seen": seen(1),
                              "chain": [{"key": key_text(key("alice")), "fingerprint": short_fingerprint(key("alice")), "claimed_name": "alice", "contact_name": "alice",
                                         "bundle": hop.bundle,
                                         "claimed_by": f"the sender (unknown key {short_fingerprint(key('uma'))})"}]}))  # fmt: skip
    m = manifest("mine-come-back", "me", to=("alice",))
    out.append(case("mine-come-back", "A bundle the receiver signed, come back: status mine, is_me, and still unverified.",
                    signed(m), confirmed=["alice"],
                    expected={"verdict": "unverified", "sender": sender("me", status="mine", local=None),
                              "seen": seen(1), "addressed_to_me": False}))  # fmt: skip
    m = manifest("mine-forged", "me")
    out.append(case("mine-forged", "Names the receiver's own key, signed by uma: the key is mine, the signer unproven.",
                    signed(m, by="uma"), confirmed=["alice"],
                    expected={"verdict": "invalid", "problems": [{"stage": "signature", "path": "manifest.sig"}],
                              "sender": sender("me", status="mine", local=None, sig=False), "seen": seen(1)}))  # fmt: skip
    good = json.loads(manifest("malformed-kind", "alice").raw)
    good["kind"] = "shout"
    raw = strictjson.dumps(good)
    out.append(case("malformed-kind", "An unknown kind: the manifest is not read at all.",
                    bundle(raw, sign_manifest(signer("alice"), raw), {"notes.txt": NOTES}), confirmed=["alice"], received=1,
                    expected={"verdict": "invalid", "problems": [{"stage": "malformed", "path": "manifest.json"}],
                              "sender": {"key": None, "fingerprint": None, "name": None, "status": "unknown", "claimed_name": None,
                                         "signature_ok": False, "is_me": False, "scheme": None},
                              "seen": None, "addressed_to_me": None}))  # fmt: skip
    return out


def build() -> dict[str, Any]:
    return {
        "description": (
            "Verdict vectors (spec/verdict.md). For each case: set up a receiver home with the identity of `me`, "
            "confirm `receiver.confirmed` through the ceremony, add `receiver.candidates`, append `receiver.journal` "
            "entries in order, write `receiver.authority` (null: no file) to authority.toml, place the bundle in "
            "inbox/pending/<id> (manifest.json = base64 manifest, manifest.sig = hex signature, payload/<path> = "
            "base64 files), compute the verdict, and compare with `expected`. `problems` compares as a set of "
            "(stage, path); `authority` lists the `may` sentences that apply; `authority_errors` is a count."
        ),
        "created_by": "spec/vectors/generate_verdicts.py",
        "people": [
            {"name": n, "seed": seed(n).hex(), "key": key_text(key(n)), "words": [list(p) for p in derive(key(n))]}
            for n in PEOPLE
        ],
        "receiver": "me",
        "cases": cases(),
    }


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text("utf-8") != text:
            print(f"{OUT} is out of date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, "utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
