"""Retiring this home's own key: --new, --replace-with and countersign, no successor, publish (spec/keys.md section 6).

After `--new` every bundle is signed with the new key and the old one stays this home's:
its bundles show as mine and bundles addressed to it as addressed to me. A key retired
with no successor here signs nothing more. The switch is one atomic write: a failure
leaves the identity as it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, pair

from gage.bundle import check
from gage.format.errors import GageIOError, RefusedError
from gage.format.keys import Identity, key_shown, key_text, short_fingerprint
from gage.format.keys import statement as ks
from gage.format.manifest import Party
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.identity import load_identity
from gage.home.journal.verify import verify as verify_journal
from gage.inbox import ownkey, send, store
from gage.inbox.opening import open_home
from gage.trust import frame, retirement
from gage.trust import verdict as verdict_mod

Gage = Callable[..., Run]


def _note(tmp: Path, text: str = "hello") -> Path:
    p = tmp / f"{text}.txt"
    p.write_text(text)
    return p


def test_retire_new_switches_the_key_and_keeps_the_old_one_readable(make_home, tmp_path: Path, gage: Gage) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    old_key = alice.identity.key
    pair(bob, "alice", alice)  # bob confirmed alice's old key: his bundles to "alice" name it
    before, _ = send.create(alice, [_note(tmp_path, "before")], kind="share")

    r = gage(alice, "key", "retire", "--reason", "superseded", "--new", "-o", str(tmp_path / "shared"))
    assert r.code == 0, r.err
    carrier_id = r.out.strip().splitlines()[-1]
    assert (tmp_path / "shared" / carrier_id).is_dir()
    fresh = open_home(alice.root)
    ident = fresh.identity
    assert ident.key != old_key and ident.current_retirement is None
    rec = ident.retirement_of(old_key)
    assert rec is not None and rec.secret is not None and rec.replacement == ident.key and rec.origin == "this home"
    assert os.stat(fresh.identity_path).st_mode & 0o777 == 0o600

    # Bundles from now on are signed with the new key.
    after, dest = send.create(fresh, [_note(tmp_path, "after")], kind="share")
    assert after.sender.key == ident.key and check(dest, expect_name=True).ok
    carrier = check(fresh.state_dir("outbox") / carrier_id, expect_name=True)
    assert carrier.ok and carrier.manifest is not None and carrier.manifest.sender.key == ident.key
    assert retirement.is_statement_bundle(carrier.manifest)

    # The old key's bundle is still mine, and says the key is retired.
    v = verdict_mod.compute(fresh, listing.resolve(fresh, before.id))
    assert v.sender.is_me and v.sender.retired is not None and v.sender.retired["contact"] is None
    assert "a key this home retired" in next(f.value for f in frame.fields(v) if f.label == "sender")
    listed = {row["id"]: row for row in json.loads(gage(fresh, "list", "--json").out)}
    assert listed[before.id]["verdict"] == "mine" and listed[before.id]["sender"]["is_me"] is True  # Sender.to_json(): one shape (issue 11)

    # A bundle addressed to the old key is addressed to me.
    m2, _ = send.create(bob, [_note(tmp_path, "to-old")], kind="share", to=["alice"], copy_to=tmp_path / "shared")
    assert m2.to == (Party(key=old_key, name="alice"),)
    store.import_bundle(fresh, tmp_path / "shared" / m2.id)
    assert verdict_mod.compute(fresh, listing.resolve(fresh, m2.id)).addressed_to_me is True

    text = gage(fresh, "id").out
    assert f"key:   {key_shown(ident.key)}" in text and f"retired: {key_shown(old_key)} superseded" in text
    js = json.loads(gage(fresh, "id", "--json").out)
    assert js["key"] == ident.key_text
    assert js["retired"] == [
        {
            "key": key_text(old_key),
            "fingerprint": short_fingerprint(old_key),
            "reason": "superseded",
            "retired_at": rec.retired_at,
            "replacement": ident.key_text,
            "replacement_fingerprint": short_fingerprint(ident.key),
            "origin": "this home",
            "current": False,
        }
    ]
    entry = [e for e in fresh.journal.entries() if e["event"] == "key-retired"][-1]
    assert entry["key"] == key_text(old_key) and entry["new_key_here"] is True
    assert verify_journal(fresh.journal).ok


def test_retire_with_no_successor_signs_nothing_more(make_home, tmp_path: Path, gage: Gage) -> None:
    alice = make_home("alice")
    r = gage(alice, "key", "retire", "--reason", "compromised")
    assert r.code == 0
    carrier = check(alice.state_dir("outbox") / r.out.strip(), expect_name=True)
    assert carrier.ok and carrier.manifest is not None and carrier.manifest.sender.key == alice.identity.key
    fresh = open_home(alice.root)
    assert fresh.identity.current_retirement is not None
    with pytest.raises(RefusedError, match="signs nothing more"):
        send.create(fresh, [_note(tmp_path)], kind="share")
    b = gage(fresh, "bundle", str(_note(tmp_path, "x")), "--kind", "share")
    assert b.code == 9 and "retired" in b.err
    assert "RETIRED as compromised" in gage(fresh, "id").out
    assert json.loads(gage(fresh, "id", "--json").out)["retired"][0]["current"] is True
    again = gage(fresh, "key", "retire", "--reason", "compromised", "--new")
    assert again.code == 9 and "already retired" in again.err


def test_replace_with_a_key_in_another_home_then_countersign(make_home, tmp_path: Path, gage: Gage) -> None:
    old, laptop, bob = make_home("alice"), make_home("alice-laptop"), make_home("bob")
    pair(bob, "alice", old)
    keyfile = tmp_path / "new.key"
    assert gage(laptop, "key", "export", "-o", str(keyfile)).code == 0
    half = tmp_path / "retire.json"

    assert gage(old, "key", "retire", "--reason", "superseded", "--replace-with", str(keyfile)).code == 2  # needs --statement
    r = gage(old, "key", "retire", "--reason", "superseded", "--replace-with", str(keyfile), "--statement", str(half))
    assert r.code == 0 and "countersign" in r.err
    assert r.out == ""  # no bundle yet
    signed = ks.parse(half.read_bytes())
    assert signed.signed_by_key() and not signed.signed_by_replacement()
    assert signed.statement.replacement == laptop.identity.key
    assert gage(old, "bundle", str(_note(tmp_path)), "--kind", "share").code == 9  # the old home signs nothing more
    held = gage(old, "key", "publish", old.identity.key.hex()[:12])
    assert held.code == 9 and "countersign" in held.err  # half-signed: nothing to send yet
    # Half-signed, it changes nothing anywhere.
    assert retirement.apply_bytes(bob, half.read_bytes()).why == "replacement-unsigned"
    # Only the home it names countersigns it.
    stranger = make_home("stranger")
    no = gage(stranger, "key", "countersign", str(half))
    assert no.code == 9 and "does not name this home's key" in no.err

    c = gage(laptop, "key", "countersign", str(half), "-o", str(tmp_path / "shared"))
    assert c.code == 0, c.err
    carrier_id = c.out.strip()
    laptop_now = open_home(laptop.root).identity
    rec = laptop_now.retirement_of(old.identity.key)
    assert rec is not None and rec.origin == "another home" and rec.secret is None
    assert laptop_now.current_retirement is None
    assert "another home's key" in gage(laptop, "id").out

    imp = gage(bob, "import", str(tmp_path / "shared" / carrier_id))
    assert "key statement applied" in imp.err
    contacts = Contacts.load(bob.contacts_path)
    assert contacts.status_of(old.identity.key) == "retired"
    assert contacts.candidates[laptop.identity.key].replaces_contact == "alice"
    assert [e["event"] for e in laptop.journal.entries()][-2:] == ["key-countersigned", "sent"]


def test_countersign_refuses_a_statement_the_old_key_did_not_sign(make_home, tmp_path: Path, gage: Gage) -> None:
    old, laptop = make_home("alice"), make_home("alice-laptop")
    st = ks.build(old.identity.key, name="alice", reason="superseded", retired_at="2026-02-01T09:00:00Z", replacement=laptop.identity.key)
    forged = ks.Signed(st, bytes(64), None)
    f = tmp_path / "forged.json"
    f.write_bytes(forged.to_bytes())
    r = gage(laptop, "key", "countersign", str(f))
    assert r.code == 9 and "not signed by the key it retires" in r.err
    assert load_identity(laptop.identity_path).retired == ()


def test_publish_sends_a_held_statement_again(make_home, tmp_path: Path, gage: Gage) -> None:
    alice, carol = make_home("alice"), make_home("carol")
    old_key = alice.identity.key
    pair(carol, "alice", alice)
    assert gage(alice, "key", "retire", "--reason", "superseded", "--new").code == 0
    r = gage(alice, "key", "publish", old_key.hex()[:10], "-o", str(tmp_path / "again"))
    assert r.code == 0, r.err
    assert retirement.apply_bundle(carol, tmp_path / "again" / r.out.strip()).applied
    assert gage(alice, "key", "publish", "0000000000").code == 6


def test_a_failed_identity_write_leaves_everything_as_it_was(make_home, monkeypatch: pytest.MonkeyPatch) -> None:
    alice = make_home("alice")
    before = alice.identity_path.read_bytes()
    events = len(alice.journal.entries())

    def fail(identity: Identity, path: Path) -> None:
        raise GageIOError("disk full", path=str(path))

    monkeypatch.setattr(ownkey, "rewrite_identity", fail)
    with pytest.raises(GageIOError):
        ownkey.retire(alice, reason="superseded", new=True)
    assert alice.identity_path.read_bytes() == before
    assert len(alice.journal.entries()) == events
    assert os.listdir(alice.state_dir("outbox")) == []


def test_own_statement_applied_here_is_refused(make_home, tmp_path: Path, gage: Gage) -> None:
    alice = make_home("alice")
    done = ownkey.retire(alice, reason="superseded", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    out = retirement.apply_bundle(alice, tmp_path / "shared" / done.bundle.id)
    assert out is not None and out.why == "own-key"


def test_new_and_replace_with_are_exclusive(make_home, gage: Gage) -> None:
    alice = make_home("alice")
    with pytest.raises(SystemExit) as caught:
        gage(alice, "key", "retire", "--reason", "superseded", "--new", "--replace-with", "x.key")
    assert caught.value.code == 2
    assert load_identity(alice.identity_path).retired == ()


def test_a_key_retired_as_superseded_here_can_be_retired_again_as_compromised(make_home, tmp_path: Path, gage: Gage) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    old_key = alice.identity.key
    old_bundle, _ = send.create(alice, [_note(tmp_path, "old")], kind="share", copy_to=tmp_path / "shared")
    store.import_bundle(bob, tmp_path / "shared" / old_bundle.id)
    first = gage(alice, "key", "retire", "--reason", "superseded", "--new", "-o", str(tmp_path / "shared"))
    gage(bob, "import", str(tmp_path / "shared" / first.out.strip()))
    assert verdict_mod.compute(bob, listing.resolve(bob, old_bundle.id)).verdict == "verified"

    assert gage(alice, "key", "retire", "--reason", "superseded", "--key", old_key.hex()[:12]).code == 2
    r = gage(alice, "key", "retire", "--reason", "compromised", "--key", old_key.hex()[:12], "-o", str(tmp_path / "shared"))
    assert r.code == 0, r.err
    me = open_home(alice.root).identity
    assert me.retirement_of(old_key).reason == "compromised" and me.current_retirement is None
    imp = gage(bob, "import", str(tmp_path / "shared" / r.out.strip()))
    assert "key statement applied" in imp.err and "COMPROMISED" in imp.err
    v = verdict_mod.compute(bob, listing.resolve(bob, old_bundle.id))
    assert (v.verdict, v.sender.name) == ("unverified", None)
    # The replacement the first statement named is kept in the history.
    assert Contacts.load(bob.contacts_path).by_name("alice").retired.replacement == me.key
    again = gage(alice, "key", "retire", "--reason", "compromised", "--key", old_key.hex()[:12])
    assert again.code == 9 and "already retired as compromised" in again.err
