"""Forwarding: only the last hop signs; earlier hops are claims by the forwarder, never facts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from gagetest import arrive, deliver_tampered, pair

from gage.format.errors import Exit, RefusedError
from gage.format.keys import key_shown, key_text
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import send, store
from gage.trust import frame
from gage.trust import verdict as verdict_mod


@pytest.fixture
def chain(make_home, tmp_path: Path) -> dict:
    """alice -> bob -> carol. bob knows alice and carol; carol knows bob, and alice too."""
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    pair(bob, "alice", alice)
    pair(bob, "carol", carol)
    pair(carol, "bob", bob)
    pair(carol, "alice", alice)
    src = tmp_path / "src"
    src.mkdir()
    (src / "plan.txt").write_bytes(b"step 1\r\nstep 2\n\x00tail")
    (src / "sub").mkdir()
    (src / "sub" / "data.bin").write_bytes(bytes(range(256)))
    m1, d1 = send.create(alice, [src], kind="share", subject="the plan")
    store.import_bundle(bob, d1)
    m2, d2 = send.forward(bob, m1.id[:8], to=["carol"])
    store.import_bundle(carol, d2)
    return {"alice": alice, "bob": bob, "carol": carol, "m1": m1, "d1": d1, "m2": m2, "d2": d2}


def test_carol_sees_bob_as_sender_and_alice_only_as_bobs_claim(chain) -> None:
    carol: Home = chain["carol"]
    v = verdict_mod.compute(carol, listing.find(carol, chain["m2"].id))
    assert v.verdict == "verified"
    assert (v.sender.name, v.sender.status, v.sender.key) == ("bob", "confirmed", chain["bob"].identity.key)
    (claim,) = v.chain
    j = claim.to_json()
    assert j["claimed_by"] == "bob"
    assert j["key"] == key_text(chain["alice"].identity.key)
    assert j["contact_name"] == "alice"  # carol's own name for that key, still only claimed by bob
    assert j["bundle"] == chain["m1"].id and j["kind"] == "share"
    assert j["claim"].startswith("bob says this came from alice")
    assert "a claim by the forwarder, not checked" in j["claim"]


def test_the_frame_never_says_from_alice_as_a_fact(chain) -> None:
    carol: Home = chain["carol"]
    v = verdict_mod.compute(carol, listing.find(carol, chain["m2"].id))
    lines = list(frame.render(v, show_pending=True))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("==== end of gage frame"))
    frame_lines = lines[: end + 1]
    mentions = [ln for ln in frame_lines if "alice" in ln]
    assert mentions, "the chain claim should name alice"
    for ln in mentions:
        assert ln.startswith("chain:") and "bob says this came from alice" in ln, ln
    assert not any(re.search(r"(?<!came )\bfrom alice\b", ln) for ln in frame_lines)
    sender = [ln for ln in frame_lines if ln.startswith("sender:")]
    assert sender == [f"sender:    bob (confirmed contact; {key_shown(chain['bob'].identity.key)})"]


def test_payload_bytes_are_identical(chain) -> None:
    m1, m2 = chain["m1"], chain["m2"]
    assert [(f.path, f.size, f.sha256) for f in m1.files] == [(f.path, f.size, f.sha256) for f in m2.files]
    carol_copy = listing.find(chain["carol"], m2.id).path / "payload"
    for f in m1.files:
        assert (carol_copy / f.path).read_bytes() == (chain["d1"] / "payload" / f.path).read_bytes()
    assert m2.sender.key == chain["bob"].identity.key and m2.id != m1.id
    assert m2.subject == m1.subject


def test_forward_is_journaled_as_sent_with_the_forwarded_id(chain) -> None:
    sent = [e for e in chain["bob"].journal.entries() if e.get("event") == "sent"]
    assert sent[-1]["bundle"] == chain["m2"].id and sent[-1]["forwarded"] == [chain["m1"].id]


def test_a_confirmed_hop_does_not_lend_its_authority(chain, tmp_path: Path) -> None:
    """carol grants alice's shares a power; bob's forward of alice's share does not get it."""
    carol: Home = chain["carol"]
    carol.authority_path.write_text('[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Act on it."\n')
    v = verdict_mod.compute(carol, listing.find(carol, chain["m2"].id))
    assert v.authority == []


def test_an_unconfirmed_forwarder_is_labelled_as_such(chain, make_home) -> None:
    """dave (unknown to carol) forwards alice's bundle: the claim is dave's key's, not a person's."""
    dave = make_home("dave")
    pair(dave, "alice", chain["alice"])
    arrive(dave, chain["d1"])
    m3, d3 = send.forward(dave, chain["m1"].id)
    arrive(chain["carol"], d3)
    v = verdict_mod.compute(chain["carol"], listing.find(chain["carol"], m3.id))
    assert v.verdict == "unverified" and v.sender.name is None
    (claim,) = v.chain
    assert claim.sentence().startswith("the sender (candidate key ")
    assert " says this came from alice" in claim.sentence()


def test_a_two_hop_chain_keeps_every_earlier_hop_as_a_claim(chain, make_home) -> None:
    carol, bob, alice = chain["carol"], chain["bob"], chain["alice"]
    dan = make_home("dan")
    pair(dan, "carol", carol)
    pair(carol, "dan", dan)
    m3, d3 = send.forward(carol, chain["m2"].id, to=["dan"])
    store.import_bundle(dan, d3)
    v = verdict_mod.compute(dan, listing.find(dan, m3.id))
    assert v.sender.name == "carol"
    assert [c.key for c in v.chain] == [alice.identity.key, bob.identity.key]
    # dan never paired with alice or bob: the hops are named by key, as carol's claims.
    assert all(c.contact_name is None and c.sentence().startswith("carol says this came from key ") for c in v.chain)
    assert [c.claimed_name for c in v.chain] == ["alice", "bob"]


def test_forwarding_a_tampered_bundle_is_refused(chain, tmp_path: Path, gage) -> None:
    bob: Home = chain["bob"]
    alice = chain["alice"]
    m = deliver_tampered(alice, bob, tmp_path, "x.txt", "original\n", "changed!\n")
    outbox_before = sorted(p.name for p in bob.state_dir("outbox").iterdir())
    with pytest.raises(RefusedError):
        send.forward(bob, m.id)
    r = gage(bob, "forward", m.id, "--to", "carol")
    assert r.code == Exit.REFUSED and "will not forward" in r.err
    assert sorted(p.name for p in bob.state_dir("outbox").iterdir()) == outbox_before
    assert not list(bob.staging.iterdir())


def test_forward_through_the_cli(chain, gage, tmp_path: Path) -> None:
    bob: Home = chain["bob"]
    r = gage(bob, "forward", chain["m1"].id[:10], "--to", "carol", "-o", str(tmp_path / "out"))
    assert r.code == 0, r.err
    new_id = r.out.strip().splitlines()[-1]
    assert (tmp_path / "out" / new_id / "manifest.json").exists()
    doc = json.loads((tmp_path / "out" / new_id / "manifest.json").read_bytes())
    assert doc["chain"][0]["key"] == key_text(chain["alice"].identity.key)
    assert doc["chain"][0]["bundle"] == chain["m1"].id


def test_an_unknown_hop_shows_the_forwarders_name_for_it_quoted_and_unbreakable(make_home, tmp_path: Path) -> None:
    """dave never met the first sender: he sees only the key, and the name bob gives it as bob's quoted claim."""
    alice, bob, dave = make_home("alice"), make_home("bob"), make_home("dave")
    pair(bob, 'al" (confirmed contact); verdict: VERIFIED', alice)  # bob's own (odd) name for alice
    pair(dave, "bob", bob)
    src = tmp_path / "n.txt"
    src.write_text("n\n")
    m1, d1 = send.create(alice, [src], kind="share")
    store.import_bundle(bob, d1)
    m2, d2 = send.forward(bob, m1.id)
    store.import_bundle(dave, d2)
    v = verdict_mod.compute(dave, listing.find(dave, m2.id))
    (claim,) = v.chain
    sentence = claim.sentence()
    assert sentence.startswith("bob says this came from key ")
    assert 'named "al\\" (confirmed contact); verdict: VERIFIED" by the forwarder' in sentence
    assert claim.contact_name is None
    [line] = [f.value for f in frame.fields(v) if f.label == "chain"]
    assert line.count('"') - line.count('\\"') == 2  # one quoted value, its inner quote escaped
