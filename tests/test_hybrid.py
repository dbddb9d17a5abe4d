"""Hybrid identities (issue 22): Ed25519 + ML-DSA-65, both signatures required, downgrades refused.

Each test names one rule of spec/bundle.md sections 6-7 and spec/keys.md section 12 and would
fail if gage accepted the lesser form: one half of a hybrid signature, a half taken from another
bundle or another context, or the Ed25519 half of a confirmed hybrid key offered alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import nacl.signing
import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa
from gagetest import Run, arrive, pair

from gage import bundle as bundle_mod
from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.format import signing
from gage.format.keys import (
    HYBRID_PREFIX,
    SIGNATURE_CONTEXT,
    Identity,
    key_text,
    parse_key,
    short_fingerprint,
)
from gage.format.keys import statement as ks
from gage.format.keys.file import KeyFile
from gage.format.manifest import FileEntry, Manifest, Party, now_text
from gage.format.signing import SecretKey
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.identity import load_identity
from gage.home.layout import Home
from gage.inbox import send
from gage.trust import ceremony, frame, retirement
from gage.trust import verdict as verdict_mod

Gage = Callable[..., Run]


def _write(where: Path, manifest: Manifest, sig: bytes, files: dict[str, bytes]) -> Path:
    out = where / manifest.id
    (out / PAYLOAD).mkdir(parents=True)
    for p, data in files.items():
        (out / PAYLOAD / p).write_bytes(data)
    (out / MANIFEST).write_bytes(manifest.raw)
    (out / SIGNATURE).write_bytes(sig)
    return out


def _manifest(sender_key: bytes, files: dict[str, bytes], nonce: int = 1) -> Manifest:
    return Manifest.build(
        kind="share",
        sender=Party(key=sender_key, name="alice"),
        files=[FileEntry(path=p, size=len(d), sha256=hashlib.sha256(d).hexdigest()) for p, d in files.items()],
        nonce=f"{nonce:032x}",
        subject="hybrid test",
    )


def _bundle(signer: SecretKey, where: Path, *, nonce: int = 1, sig: Callable[[bytes], bytes] | None = None) -> Path:
    files = {"note.txt": b"numbers\n"}
    m = _manifest(signer.public, files, nonce)
    return _write(where, m, sig(m.raw) if sig else signing.sign(signer, SIGNATURE_CONTEXT, m.raw), files)


def _pq(secret: SecretKey) -> mldsa.MLDSA65PrivateKey:
    assert secret.mldsa65_seed is not None
    return mldsa.MLDSA65PrivateKey.from_seed_bytes(secret.mldsa65_seed)


@pytest.fixture
def hybrid() -> SecretKey:
    return SecretKey(nacl.signing.SigningKey(b"\x31" * 32), b"\x32" * 32)


# --- the format ----------------------------------------------------------------------


def test_new_homes_are_hybrid_and_the_identity_file_keeps_both_seeds(make_home) -> None:
    alice = make_home("alice")
    assert alice.identity.hybrid and signing.is_hybrid(alice.identity.key)
    assert alice.identity.key_text.startswith(HYBRID_PREFIX) and len(alice.identity.key_text) == len(HYBRID_PREFIX) + 3968
    again = load_identity(alice.identity_path)
    assert again.key == alice.identity.key and again.secret.seed_bytes == alice.identity.secret.seed_bytes
    assert json.loads(alice.identity_path.read_text())["secret"] == alice.identity.secret.seed_bytes.hex()
    assert len(alice.identity.secret.seed_bytes) == 64


def test_an_identity_file_whose_key_is_not_its_secrets_is_refused_when_it_signs_or_is_shown(make_home) -> None:
    from gage.format.errors import MalformedError

    alice = make_home("alice")
    obj = json.loads(alice.identity_path.read_text())
    obj["key"] = key_text(SecretKey.generate().public)
    alice.identity_path.write_text(json.dumps(obj))
    read = load_identity(alice.identity_path)  # held to its seed when it signs or is shown
    for use in (lambda: read.key, lambda: read.key_text, lambda: read.sign(b"{}")):
        with pytest.raises(MalformedError, match="not the key of its secret"):
            use()
    # Only the ML-DSA-65 half named otherwise: shown, its Ed25519 half is the seed's; signing refuses it.
    obj["key"] = key_text(alice.identity.key[:32] + SecretKey.generate().public[32:])
    alice.identity_path.write_text(json.dumps(obj))
    read = load_identity(alice.identity_path)
    with pytest.raises(MalformedError, match="not the key of its secret"):
        read.sign(b"{}")


def test_hybrid_key_text_round_trips_and_its_fingerprint_is_not_its_ed25519_halfs(hybrid: SecretKey) -> None:
    key = hybrid.public
    assert len(key) == 1984 and parse_key(key_text(key)) == key
    half = signing.ed25519_half(key)
    assert short_fingerprint(key) != short_fingerprint(half)
    kf = KeyFile.parse(KeyFile(key=key, name="alice").to_bytes())
    assert kf.key == key
    from gage.format.errors import MalformedError

    for bad in (HYBRID_PREFIX + key.hex()[:-2], HYBRID_PREFIX + key.hex().upper(), "ed25519:" + key.hex()):
        with pytest.raises(MalformedError):
            parse_key(bad)


def test_a_hybrid_bundle_carries_both_signatures_and_verifies(make_home, tmp_path: Path) -> None:
    alice = make_home("alice")
    src = tmp_path / "r.txt"
    src.write_text("q3\n")
    m, dest = send.create(alice, [src], kind="share")
    sig = (dest / SIGNATURE).read_bytes()
    assert len(sig) == signing.HYBRID_SIG_LEN == 64 + 3309
    # Each half verifies by itself, over the same domain-separated bytes, with ML-DSA's context set to gage's.
    nacl.signing.VerifyKey(alice.identity.key[:32]).verify(SIGNATURE_CONTEXT + m.raw, sig[:64])
    mldsa.MLDSA65PublicKey.from_public_bytes(alice.identity.key[32:]).verify(sig[64:], SIGNATURE_CONTEXT + m.raw, b"gage/manifest/v1")
    assert bundle_mod.check(dest).ok


def _stage_of(path: Path) -> tuple[str, str]:
    c = bundle_mod.check(path)
    assert not c.ok
    first = c.first_error()
    assert first is not None
    return first.stage, str(first)


@pytest.mark.parametrize(
    "label",
    ["ed25519-only", "mldsa-only", "mldsa-from-another-bundle", "mldsa-other-context", "mldsa-no-context",
     "ed25519-from-another-bundle", "halves-swapped", "ed25519-other-context"],
)  # fmt: skip
def test_one_half_missing_or_taken_from_elsewhere_is_a_bad_signature(hybrid: SecretKey, tmp_path: Path, label: str) -> None:
    pq = _pq(hybrid)
    other = _manifest(hybrid.public, {"note.txt": b"other\n"}, nonce=2).raw
    ctx = SIGNATURE_CONTEXT

    def make(raw: bytes) -> bytes:
        ed = hybrid.ed25519.sign(ctx + raw).signature
        return {
            "ed25519-only": lambda: ed,
            "mldsa-only": lambda: pq.sign(ctx + raw, b"gage/manifest/v1"),
            "mldsa-from-another-bundle": lambda: ed + pq.sign(ctx + other, b"gage/manifest/v1"),
            "mldsa-other-context": lambda: ed + pq.sign(ks.RETIRING_CONTEXT + raw, b"gage/key-statement/v1/retiring"),
            "mldsa-no-context": lambda: ed + pq.sign(ctx + raw),
            "ed25519-from-another-bundle": lambda: hybrid.ed25519.sign(ctx + other).signature + pq.sign(ctx + raw, b"gage/manifest/v1"),
            "halves-swapped": lambda: pq.sign(ctx + raw, b"gage/manifest/v1") + ed,
            "ed25519-other-context": lambda: hybrid.ed25519.sign(ks.RETIRING_CONTEXT + raw).signature + pq.sign(ctx + raw, b"gage/manifest/v1"),
        }[label]()

    path = _bundle(hybrid, tmp_path, sig=make)
    stage, text = _stage_of(path)
    assert stage == "signature", text
    # And never a lesser verdict: the verdict is invalid, not unverified or classical.
    assert len((path / SIGNATURE).read_bytes()) != 0


def test_classical_bundles_keep_verifying_shown_as_classical_only(make_home, tmp_path: Path, gage: Gage) -> None:
    bob = make_home("bob")
    old = Identity(name="carol", signing_key=nacl.signing.SigningKey(b"\x44" * 32))
    path = _bundle(old.secret, tmp_path / "wire")
    assert bundle_mod.check(path).ok
    arrive(bob, path)
    v = verdict_mod.compute(bob, path)
    assert v.verdict == "unverified" and not v.problems
    assert v.to_json()["sender"]["scheme"] == "classical-only"
    sig_line = [f for f in frame.fields(v) if f.label == "signature"]
    assert sig_line and sig_line[0].value.startswith("classical-only") and sig_line[0].severity == "normal"


def test_a_hybrid_verdict_says_hybrid_in_the_verdict_and_the_frame(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    src = tmp_path / "r.txt"
    src.write_text("q3\n")
    m, dest = send.create(alice, [src], kind="share")
    v = verdict_mod.compute(bob, dest)
    assert v.verdict == "verified" and v.to_json()["sender"]["scheme"] == "hybrid"
    lines = {f.label: f for f in frame.fields(v)}
    assert lines["signature"].value.startswith("hybrid: Ed25519 and ML-DSA-65")
    # The sender line names the hybrid key by its fingerprint, not its 3984 characters.
    assert short_fingerprint(alice.identity.key) in lines["sender"].value
    assert alice.identity.key_text not in lines["sender"].value


# --- downgrade -------------------------------------------------------------------------


def _alice_and_bob(make_home) -> tuple[Home, Home]:
    alice, bob = make_home("alice"), make_home("bob")
    assert alice.identity.hybrid
    pair(bob, "alice", alice)
    return alice, bob


def test_a_bundle_signed_by_only_the_ed25519_half_of_a_confirmed_hybrid_key_is_a_bad_signature(make_home, tmp_path: Path, gage: Gage) -> None:
    alice, bob = _alice_and_bob(make_home)
    # Someone who broke Ed25519 (here: holds alice's Ed25519 seed) signs as the bare half of her key.
    half = SecretKey(alice.identity.signing_key)
    assert half.public == signing.ed25519_half(alice.identity.key)
    path = _bundle(half, tmp_path / "wire")
    assert bundle_mod.check(path).ok  # on its own, a valid classical bundle
    res = arrive(bob, path)
    v = verdict_mod.compute(bob, store_path(bob, res.id))
    assert v.verdict == "invalid"
    assert [p.stage for p in v.problems] == ["signature"]
    assert "only the Ed25519 half of alice's confirmed hybrid key" in v.problems[0].message
    assert v.sender.name is None and not v.sender.signature_ok
    # The half is not remembered as a new candidate either.
    assert signing.ed25519_half(alice.identity.key) not in Contacts.load(bob.contacts_path).candidates
    r = gage(bob, "verdict", res.id, "--json")
    assert json.loads(r.out)["verdict"] == "invalid"
    # It never reaches accepted.
    assert gage(bob, "accept", res.id).code != 0


def store_path(home: Home, bid: str) -> Path:

    return listing.resolve(home, bid).path


def test_a_statement_for_the_ed25519_half_of_a_confirmed_hybrid_key_is_refused(make_home) -> None:
    alice, bob = _alice_and_bob(make_home)
    half = SecretKey(alice.identity.signing_key)
    st = ks.build(half.public, name="alice", reason="compromised", retired_at=now_text())
    data = ks.Signed(st, ks.sign_retiring(half, st), None).to_bytes()
    before = bob.contacts_path.read_bytes()
    outcome = retirement.apply_bytes(bob, data, source="test")
    assert outcome.why == "downgraded", outcome.message
    assert "only the Ed25519 half" in outcome.message
    assert bob.contacts_path.read_bytes() == before


def test_a_hybrid_statement_with_one_signature_half_is_not_signed_by_its_key(make_home) -> None:
    alice, bob = _alice_and_bob(make_home)
    st = ks.build(alice.identity.key, name="alice", reason="compromised", retired_at=now_text())
    full = ks.sign_retiring(alice.identity.secret, st)
    for sig in (full[:64], full[64:] + b"", full[:64] + _pq(alice.identity.secret).sign(ks.REPLACEMENT_CONTEXT + st.raw, b"gage/key-statement/v1/replacement")):
        if len(sig) not in (64, signing.HYBRID_SIG_LEN):
            continue  # not even parseable as a signature field
        outcome = retirement.apply_bytes(bob, ks.Signed(st, sig, None).to_bytes(), source="test")
        assert outcome.why == "not-bound", outcome.message
    assert retirement.apply_bytes(bob, ks.Signed(st, full, None).to_bytes(), source="test").why == "applied"


def test_a_key_file_offering_only_the_ed25519_half_is_a_mismatch(make_home, tmp_path: Path, gage: Gage) -> None:
    alice, bob = _alice_and_bob(make_home)
    f = tmp_path / "alice-half.key"
    f.write_bytes(KeyFile(key=signing.ed25519_half(alice.identity.key), name="alice").to_bytes())
    r = gage(bob, "pair", str(f), "--name", "alice2")
    assert r.code == 9 and "key mismatch" in r.err and "Ed25519 half" in r.err
    # And the ceremony itself refuses it, even with the half's own words typed.
    from gage.format.words import derive

    words = " ".join(" ".join(p) for p in derive(signing.ed25519_half(alice.identity.key)))
    outcome = ceremony.confirm(bob, "alice2", signing.ed25519_half(alice.identity.key), words)
    assert not outcome.confirmed and "key mismatch" in outcome.message
    assert Contacts.load(bob.contacts_path).by_name("alice2") is None


def test_own_hybrid_keys_half_is_a_downgrade_too(make_home, tmp_path: Path) -> None:
    alice = make_home("alice")
    half = SecretKey(alice.identity.signing_key)
    path = _bundle(half, tmp_path / "wire")
    v = verdict_mod.compute(alice, path)
    assert v.verdict == "invalid" and "this home's own hybrid key" in v.problems[0].message


# --- gage key upgrade, carried through a contact's home ------------------------------------


def test_key_upgrade_carried_through_a_contacts_home(tmp_path: Path, gage: Gage) -> None:
    from gage.format.words import derive

    old_home = Home.init(tmp_path / "alice", "alice", hybrid=False)
    bob = Home.init(tmp_path / "bob", "bob")
    assert not old_home.identity.hybrid
    old_key = old_home.identity.key
    pair(bob, "alice", old_home)
    src = tmp_path / "r.txt"
    src.write_text("before\n")
    _m, before = send.create(old_home, [src], kind="share", copy_to=tmp_path / "shared")
    assert arrive(bob, tmp_path / "shared" / before.name).id
    v_old = verdict_mod.compute(bob, store_path(bob, before.name))
    assert v_old.verdict == "verified" and v_old.to_json()["sender"]["scheme"] == "classical-only"

    r = gage(old_home, "key", "upgrade", "-o", str(tmp_path / "shared"), "--json")
    assert r.code == 0, r.err
    body = json.loads(r.out)
    alice = Home(tmp_path / "alice")
    new_key = alice.identity.key
    assert alice.identity.hybrid and body["key"] == key_text(new_key) and body["complete"]
    assert gage(alice, "key", "upgrade").code == 9  # already hybrid

    # Bob imports the statement bundle: the old key is retired as superseded, the new one a linked candidate.
    r = gage(bob, "import", str(tmp_path / "shared" / body["bundle"]))
    assert r.code == 0 and "key statement applied" in r.err, r.err
    contacts = Contacts.load(bob.contacts_path)
    cand = contacts.candidates[new_key]
    assert cand.replaces == old_key and cand.replaces_contact == "alice"
    assert contacts.status_of(new_key) == "candidate"
    # What the old key signed stays verified (the contact's previous key); the new key is unverified until the ceremony.
    assert verdict_mod.compute(bob, store_path(bob, before.name)).verdict == "verified"
    src.write_text("after\n")
    _m2, after = send.create(alice, [src], kind="share", copy_to=tmp_path / "shared")
    arrive(bob, tmp_path / "shared" / after.name)
    v_new = verdict_mod.compute(bob, store_path(bob, after.name))
    assert v_new.verdict == "unverified" and v_new.to_json()["sender"]["scheme"] == "hybrid"
    # The ceremony, with the new key's words, confirms it under the same name.
    outcome = ceremony.confirm(bob, "alice", new_key, " ".join(" ".join(p) for p in derive(new_key)))
    assert outcome.confirmed, outcome.message
    contacts = Contacts.load(bob.contacts_path)
    assert contacts.by_name("alice").key == new_key and [p.key for p in contacts.by_name("alice").previous] == [old_key]
    assert verdict_mod.compute(bob, store_path(bob, after.name)).verdict == "verified"
    assert listing.resolve(bob, before.name) is not None


def test_words_come_from_both_halves_of_a_hybrid_key(hybrid: SecretKey) -> None:
    from gage.format.words import derive

    key = hybrid.public
    other_pq = SecretKey(hybrid.ed25519, b"\x33" * 32).public
    assert other_pq[:32] == key[:32] and other_pq != key
    # Same Ed25519 half, different ML-DSA-65 half: different words; and never the half's own words.
    assert derive(key) != derive(other_pq)
    assert derive(key) != derive(signing.ed25519_half(key))


def test_an_a2a_artifact_carries_the_hybrid_signature_and_a_stripped_one_is_a_bad_signature(make_home, tmp_path: Path, gage: Gage) -> None:
    import base64

    from gage.carriers.a2a import export as a2a_export

    alice, bob = _alice_and_bob(make_home)
    src = tmp_path / "r.txt"
    src.write_text("over A2A\n")
    m, dest = send.create(alice, [src], kind="share")
    art = a2a_export.export_artifact(dest)
    sig_part = next(p for p in art["parts"] if p["filename"] == "manifest.sig")
    assert len(base64.b64decode(sig_part["raw"])) == signing.HYBRID_SIG_LEN
    good = tmp_path / "good.a2a.json"
    good.write_text(json.dumps(art))
    sig_part["raw"] = base64.b64encode(base64.b64decode(sig_part["raw"])[:64]).decode()
    stripped = tmp_path / "stripped.a2a.json"
    stripped.write_text(json.dumps(art))
    r = gage(bob, "a2a", "import", str(stripped))
    v = verdict_mod.compute(bob, listing.resolve(bob, m.id))
    assert v.verdict == "invalid" and v.problems[0].stage == "signature", (r.code, r.err)
    # The genuine copy then replaces the invalid one (bundle.md section 10) and verifies.
    assert gage(bob, "a2a", "import", str(good)).code == 0
    assert verdict_mod.compute(bob, listing.resolve(bob, m.id)).verdict == "verified"


def test_a_second_list_verifies_no_hybrid_signature_again(make_home, tmp_path: Path, gage: Gage, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from gage.home.cache import checks

    monkeypatch.setattr(checks, "RACY_NS", 50_000_000)
    alice, bob = _alice_and_bob(make_home)
    src = tmp_path / "r.txt"
    src.write_text("listed twice\n")
    _m, dest = send.create(alice, [src], kind="share")
    arrive(bob, dest)
    time.sleep(0.12)
    first = gage(bob, "list", "--json")
    assert first.code == 0 and json.loads(first.out)[0]["verdict"] == "verified"
    calls: list[bytes] = []
    real = signing.why_not

    def counting(key: bytes, *a: bytes) -> str | None:
        calls.append(key)
        return real(key, *a)

    monkeypatch.setattr(signing, "why_not", counting)
    again = gage(bob, "list", "--json")
    assert json.loads(again.out)[0]["verdict"] == "verified"
    assert calls == []  # the check cache: nothing verified a second time


def test_an_identity_whose_mldsa_half_is_not_its_seeds_is_refused_before_it_signs(make_home) -> None:
    """Reading an identity compares the Ed25519 half only (issue 28: no ML-DSA library for a
    command that signs nothing); the ML-DSA-65 half is compared before the first signature."""
    from gage.format.errors import MalformedError

    alice = make_home("alice")
    obj = json.loads(alice.identity_path.read_text())
    other = SecretKey.generate().public
    obj["key"] = key_text(signing.ed25519_half(alice.identity.key) + other[signing.ED25519_KEY_LEN :])
    alice.identity_path.write_text(json.dumps(obj))
    again = load_identity(alice.identity_path)
    with pytest.raises(MalformedError, match="not the key of its secret"):
        again.sign(b"{}")
    assert load_identity(alice.identity_path).key != alice.identity.key
