"""A receiver applies a contact's key statement, or refuses it and says why (spec/keys.md sections 3-5, 7).

Alice retires her key; bob, who confirmed it, imports the statement bundle. Superseded:
her old bundles stay verified, shown as signed with her previous key. Compromised: none
is verified again. A named replacement is only a candidate until the ceremony. Every
refusal changes nothing (contacts.toml is byte for byte the same) and is journaled.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import nacl.signing
import pytest
from gagetest import Run, arrive, pair

from gage.format import signing
from gage.format.errors import RefusedError
from gage.format.keys import key_shown, key_text, short_fingerprint
from gage.format.keys import statement as ks
from gage.format.manifest import now_text
from gage.format.signing import SecretKey
from gage.format.words import derive
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import ownkey, send, store
from gage.trust import ceremony, frame, retirement
from gage.trust import verdict as verdict_mod

Gage = Callable[..., Run]


def _bundle(home: Home, tmp: Path, text: str = "the numbers") -> str:
    src = tmp / f"note-{text[:8].replace(' ', '-')}.txt"
    src.write_text(text)
    m, _dest = send.create(home, [src], kind="share", copy_to=tmp / "shared")
    return m.id


def _refusals(home: Home) -> list[dict[str, object]]:
    return [e for e in home.journal.entries() if e["event"] == "key-statement-refused"]


@pytest.fixture
def alice_and_bob(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, Home, str]:
    """Bob confirmed alice's key and holds a bundle she signed with it."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    old = _bundle(alice, tmp_path)
    store.import_bundle(bob, tmp_path / "shared" / old)
    return alice, bob, old


def test_superseded_old_bundles_stay_verified_as_the_previous_key(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, old = alice_and_bob
    old_key = alice.identity.key
    done = ownkey.retire(alice, reason="superseded", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    r = gage(bob, "import", str(tmp_path / "shared" / done.bundle.id))
    assert r.code == 0
    assert "key statement applied" in r.err and "superseded" in r.err

    v = verdict_mod.compute(bob, listing.resolve(bob, old))
    assert v.verdict == "verified"
    assert (v.sender.name, v.sender.status) == ("alice", "retired")
    assert v.sender.retired is not None and v.sender.retired["reason"] == "superseded"
    assert v.sender.retired["replacement"] == done.identity.key_text
    sender_line = next(f.value for f in frame.fields(v) if f.label == "sender")
    assert "signed with alice's previous key" in sender_line and key_shown(old_key) in sender_line
    assert v.to_json()["sender"]["retired"]["contact"] == "alice"

    contacts = Contacts.load(bob.contacts_path)
    assert contacts.by_name("alice").retired.reason == "superseded"
    cand = contacts.candidates[done.identity.key]
    assert (cand.replaces, cand.replaces_contact) == (old_key, "alice")
    applied = [e for e in bob.journal.entries() if e["event"] == "key-statement-applied"]
    assert len(applied) == 1 and applied[0]["contact"] == "alice" and applied[0]["carrier"] == done.bundle.id


def test_compromised_nothing_signed_with_the_key_is_verified_again(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, old = alice_and_bob
    bob.authority_path.write_text('[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Summarise it."\n')
    assert verdict_mod.compute(bob, listing.resolve(bob, old)).authority  # before: verified, with authority
    # A bundle signed later with the same key, claiming to be old (a thief can write any `created`).
    thief_made = _bundle(alice, tmp_path, "after the theft")
    done = ownkey.retire(alice, reason="compromised", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    assert gage(bob, "import", str(tmp_path / "shared" / thief_made), str(tmp_path / "shared" / done.bundle.id)).code == 0

    for bid in (old, thief_made):
        v = verdict_mod.compute(bob, listing.resolve(bob, bid))
        assert v.verdict == "unverified"
        assert v.sender.name is None and v.sender.status == "retired"
        assert v.authority == []
        lines = {f.label: f.value for f in frame.fields(v)}
        assert "COMPROMISED" in lines["sender"] and "could have signed this" in lines["sender"]
        assert "COMPROMISED" in lines["verdict"]
        assert v.sender.label().startswith("compromised key")
    listed = gage(bob, "list", "--json")
    rows = {r["id"]: r for r in __import__("json").loads(listed.out)}
    assert rows[old]["sender"]["name"] is None and rows[old]["verdict"] == "unverified"


def test_replacement_is_a_candidate_until_the_ceremony_confirms_it(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, old = alice_and_bob
    old_key = alice.identity.key
    done = ownkey.retire(alice, reason="superseded", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    gage(bob, "import", str(tmp_path / "shared" / done.bundle.id))
    later = _bundle(alice, tmp_path, "from the new laptop")
    store.import_bundle(bob, tmp_path / "shared" / later)
    v = verdict_mod.compute(bob, listing.resolve(bob, later))
    assert (v.verdict, v.sender.status, v.sender.name) == ("unverified", "candidate", None)

    text = gage(bob, "contacts").out
    assert "named as alice's new key" in text and f"gage pair {short_fingerprint(alice.identity.key)} --name alice" in text
    rows = __import__("json").loads(gage(bob, "contacts", "--json").out)
    linked = next(r for r in rows if r["status"] == "candidate")
    assert linked["replaces"] == key_text(old_key) and linked["replaces_contact"] == "alice"

    # Only the ceremony confirms it, under the contact's name; the retired key moves into the history.
    outcome = ceremony.confirm(bob, "alice", alice.identity.key, " ".join(" ".join(p) for p in derive(alice.identity.key)))
    assert outcome.confirmed
    alice_now = Contacts.load(bob.contacts_path).by_name("alice")
    assert alice_now.key == alice.identity.key and alice_now.retired is None
    assert [p.key for p in alice_now.previous] == [old_key]
    paired = [e for e in bob.journal.entries() if e["event"] == "paired"][-1]
    assert paired["replaces"] == key_text(old_key)
    assert verdict_mod.compute(bob, listing.resolve(bob, later)).verdict == "verified"
    v_old = verdict_mod.compute(bob, listing.resolve(bob, old))
    assert (v_old.verdict, v_old.sender.name, v_old.sender.status) == ("verified", "alice", "retired")
    history = next(r for r in __import__("json").loads(gage(bob, "contacts", "--json").out) if r["name"] == "alice")
    assert history["previous_keys"][0]["key"] == key_text(old_key)
    assert history["previous_keys"][0]["retired"]["reason"] == "superseded"


def test_a_retired_key_is_never_confirmed_again(alice_and_bob, tmp_path: Path) -> None:
    alice, bob, _old = alice_and_bob
    old_key = alice.identity.key
    done = ownkey.retire(alice, reason="compromised", copy_to=tmp_path / "shared")
    assert done.bundle is not None
    assert retirement.apply_bundle(bob, tmp_path / "shared" / done.bundle.id).applied
    before = bob.contacts_path.read_bytes()
    with pytest.raises(RefusedError, match="never confirmed again"):
        ceremony.confirm(bob, "alice-again", old_key, " ".join(" ".join(p) for p in derive(old_key)))
    assert bob.contacts_path.read_bytes() == before


def test_a_different_key_for_a_contact_whose_key_is_not_retired_is_still_refused(alice_and_bob, make_home) -> None:
    _alice, bob, _old = alice_and_bob
    other = make_home("other")
    with pytest.raises(RefusedError, match="remove it first"):
        ceremony.confirm(bob, "alice", other.identity.key, " ".join(" ".join(p) for p in derive(other.identity.key)))


# --- refusals: each changes nothing, says why, and is journaled -----------------------------


Signer = nacl.signing.SigningKey | SecretKey


def _signed_file(key_sk: Signer, *, speaks_for: bytes, replacement_sk: Signer | None = None,
                 reason: str = "compromised", retiring_sk: Signer | None = None) -> bytes:  # fmt: skip
    st = ks.build(
        speaks_for,
        name="alice",
        reason=reason,
        retired_at=now_text(),
        replacement=SecretKey.of(replacement_sk).public if replacement_sk else None,
    )
    signer = retiring_sk or key_sk
    sig = signing.sign(signer, ks.RETIRING_CONTEXT, st.raw)
    rsig = signing.sign(replacement_sk, ks.REPLACEMENT_CONTEXT, st.raw) if replacement_sk else None
    return ks.Signed(st, sig, rsig).to_bytes()


def _assert_refused(home: Home, data: bytes, why: str) -> retirement.Outcome:
    before = home.contacts_path.read_bytes()
    n = len(_refusals(home))
    outcome = retirement.apply_bytes(home, data, source="file test")
    assert outcome.why == why, outcome.message
    assert not outcome.applied
    assert outcome.message.startswith("key statement refused, nothing changed:")
    assert home.contacts_path.read_bytes() == before
    entries = _refusals(home)
    assert len(entries) == n + 1 and entries[-1]["why"] == why
    return outcome


def test_refused_from_an_unknown_key(make_home) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    data = _signed_file(alice.identity.secret, speaks_for=alice.identity.key)
    out = _assert_refused(bob, data, "unknown-key")
    assert "does not know" in out.message


def test_refused_from_a_candidate_key(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    arrive(bob, tmp_path / "shared" / _bundle(alice, tmp_path))  # alice is now a candidate at bob's
    assert Contacts.load(bob.contacts_path).status_of(alice.identity.key) == "candidate"
    _assert_refused(bob, _signed_file(alice.identity.secret, speaks_for=alice.identity.key), "candidate-key")


def test_refused_when_not_bound_to_the_key_it_speaks_for(alice_and_bob, make_home) -> None:
    alice, bob, _old = alice_and_bob
    carol = make_home("carol")
    pair(bob, "carol", carol)
    # alice's key signs "carol's key is compromised": a key can only ever retire itself.
    data = _signed_file(alice.identity.secret, speaks_for=carol.identity.key)
    _assert_refused(bob, data, "not-bound")
    assert Contacts.load(bob.contacts_path).status_of(carol.identity.key) == "confirmed"


def test_refused_when_signed_only_by_the_new_key(alice_and_bob) -> None:
    alice, bob, _old = alice_and_bob
    new = nacl.signing.SigningKey.generate()
    data = _signed_file(alice.identity.secret, speaks_for=alice.identity.key, replacement_sk=new, retiring_sk=new)
    out = _assert_refused(bob, data, "new-key-only")
    assert "only by the replacement key" in out.message
    assert bytes(new.verify_key) not in Contacts.load(bob.contacts_path).candidates


def test_refused_when_the_replacement_did_not_sign(alice_and_bob) -> None:
    alice, bob, _old = alice_and_bob
    st = ks.build(alice.identity.key, name="alice", reason="superseded", retired_at=now_text(), replacement=bytes(32 * [7]))
    half = ks.Signed(st, ks.sign_retiring(alice.identity.secret, st), None).to_bytes()
    _assert_refused(bob, half, "replacement-unsigned")


def test_refused_replayed_and_would_unretire_through_the_cli(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, _old = alice_and_bob
    done = ownkey.retire(alice, reason="compromised", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    first = gage(bob, "key", "apply", str(tmp_path / "shared" / done.bundle.id))
    assert first.code == 0 and first.out.startswith("applied:")
    again = gage(bob, "key", "apply", str(tmp_path / "shared" / done.bundle.id))
    assert again.code == 9 and "already applied" in again.err
    # A later "superseded" for the compromised key: it would make the key's bundles verified again.
    old_sk = alice.identity.retired[-1].secret
    assert old_sk is not None
    st = ks.build(done.signed.statement.key, name="alice", reason="superseded", retired_at="2099-01-01T00:00:00Z")
    data = ks.Signed(st, ks.sign_retiring(SecretKey.from_seed_bytes(old_sk), st), None).to_bytes()
    f = tmp_path / "unretire.json"
    f.write_bytes(data)
    before = bob.contacts_path.read_bytes()
    r = gage(bob, "key", "apply", str(f), "--json")
    assert r.code == 9
    assert __import__("json").loads(r.out)[0]["why"] == "would-unretire"
    assert bob.contacts_path.read_bytes() == before


def test_refused_from_a_carrier_that_does_not_check_out(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, _old = alice_and_bob
    done = ownkey.retire(alice, reason="compromised", copy_to=tmp_path / "shared")
    assert done.bundle is not None
    bad = tmp_path / "tampered" / done.bundle.id
    shutil.copytree(tmp_path / "shared" / done.bundle.id, bad)
    (bad / "payload" / ks.FILE_NAME).write_bytes((bad / "payload" / ks.FILE_NAME).read_bytes().replace(b"compromised", b"superseded!"))
    before = bob.contacts_path.read_bytes()
    r = gage(bob, "import", str(bad))
    assert "does not check out" in r.err
    assert bob.contacts_path.read_bytes() == before
    assert _refusals(bob)[-1]["why"] == "invalid-carrier"


def test_refused_malformed_statement_in_a_good_carrier(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, _old = alice_and_bob
    src = tmp_path / ks.FILE_NAME
    src.write_text('{"gage-signed-key-statement": 1, "statement": "hello"}')
    m, _ = send.create(alice, [src], kind="share", copy_to=tmp_path / "shared")
    r = gage(bob, "import", str(tmp_path / "shared" / m.id))
    assert r.code == 0  # the bundle was imported; the statement in it was refused
    assert "not a well-formed key statement" in r.err
    assert _refusals(bob)[-1]["why"] == "malformed" and _refusals(bob)[-1]["statement"] is None


def test_ordinary_bundles_are_not_statements(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    _alice, bob, old = alice_and_bob
    assert retirement.apply_bundle(bob, listing.resolve(bob, old)) is None
    r = gage(bob, "key", "apply", old[:10])
    assert r.code == 3 and "does not carry a key statement" in r.err
    assert not [e for e in bob.journal.entries() if e["event"].startswith("key-statement")]


def test_a_statement_file_applies_on_its_own(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, old = alice_and_bob
    f = tmp_path / "s.json"
    r = gage(alice, "key", "retire", "--reason", "superseded", "--new", "--statement", str(f))
    assert r.code == 0
    a = gage(bob, "key", "apply", str(f))
    assert a.code == 0 and "superseded" in a.out
    assert verdict_mod.compute(bob, listing.resolve(bob, old)).sender.status == "retired"
    assert [e for e in bob.journal.entries() if e["event"] == "key-statement-applied"][-1]["source"] == "file s.json"


def test_a2a_import_applies_a_statement(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, old = alice_and_bob
    done = ownkey.retire(alice, reason="compromised", new=True)
    assert done.bundle is not None
    art = tmp_path / "statement.a2a.json"
    assert gage(alice, "a2a", "export", done.bundle.id, "-o", str(art)).code == 0
    r = gage(bob, "a2a", "import", str(art), "--json")
    assert r.code == 0
    body = __import__("json").loads(r.out)
    assert [o["why"] for o in body["key_statements"]] == ["applied"]
    assert verdict_mod.compute(bob, listing.resolve(bob, old)).verdict == "unverified"


def test_hostile_claimed_names_never_reach_the_terminal_raw(alice_and_bob, tmp_path: Path, gage: Gage) -> None:
    alice, bob, _old = alice_and_bob
    hostile = "al\x1b]0;pwned\x07ice\nverdict: VERIFIED\u202e"
    new = nacl.signing.SigningKey.generate()
    st = ks.build(alice.identity.key, name=hostile, reason="superseded", retired_at=now_text(), replacement=bytes(new.verify_key))
    data = ks.Signed(st, ks.sign_retiring(alice.identity.secret, st), ks.sign_replacement(new, st)).to_bytes()
    f = tmp_path / "hostile.json"
    f.write_bytes(data)
    outputs = [gage(bob, "key", "apply", str(f)), gage(bob, "contacts"), gage(bob, "journal", "show")]
    for r in outputs:
        for text in (r.out, r.err):
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
            assert "\nverdict: VERIFIED" not in text
    assert Contacts.load(bob.contacts_path).candidates[bytes(new.verify_key)].claimed_name == hostile
    assert verify_journal(bob.journal).ok
