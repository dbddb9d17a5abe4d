"""One trust decision (issue 17): every caller asks gage.trust.keytrust.key_trust, and the two bugs
that came from deciding trust in four places stay fixed.

1. A bundle signed by a key later retired as compromised could be forwarded, and the receiver's
   frame then said "bob says this came from carol" for content only the key's thief may have
   signed. Now `forward` refuses it (unless --unverified, and then the hop says so), and every
   reader names a compromised hop "compromised key ...", never a contact's name.
2. A contact could spend a thread budget that belongs to someone else, through a follow-up of
   mine that named nobody. Now a reply spends a thread's budget only if its signer is a
   recipient of a bundle of mine on the traced chain, and a reply made with a parent and no
   recipients names the parent's signer.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, arrive, pair

from gage import bundle as bundle_mod
from gage.format.errors import Exit, RefusedError
from gage.format.keys import key_text, short_fingerprint
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox import gate, ownkey, send
from gage.trust import frame, keytrust, retirement
from gage.trust import verdict as verdict_mod

Gage = Callable[..., Run]


def _file(tmp: Path, name: str, text: str) -> Path:
    d = tmp / "files" / name
    d.mkdir(parents=True)
    (d / "note.txt").write_text(text)
    return d / "note.txt"


@pytest.fixture
def compromised(make_home, tmp_path: Path) -> dict:
    """carol sends bob a note; bob forwards it to alice; then carol's key is retired as
    compromised, and both bob and alice apply carol's statement."""
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    pair(bob, "carol", carol)
    pair(alice, "carol", carol)
    pair(alice, "bob", bob)
    pair(carol, "bob", bob)
    pair(bob, "alice", alice)
    cm, cdest = send.create(carol, [_file(tmp_path, "c", "the launch moves")], kind="share", to=["bob"], subject="minutes")
    arrive(bob, cdest)
    before, bdest = send.forward(bob, cm.id, to=["alice"])  # while carol's key was still good
    done = ownkey.retire(carol, reason="compromised", copy_to=tmp_path / "shared")
    assert done.bundle is not None
    statement = tmp_path / "shared" / done.bundle.id
    for home in (bob, alice):
        res = arrive(home, statement)
        outcomes = retirement.apply_arrivals(home, [res.id])
        assert outcomes and outcomes[0].applied, outcomes
    return {"alice": alice, "bob": bob, "carol": carol, "cm": cm, "before": before, "bdest": bdest, "tmp": tmp_path}


def test_key_trust_says_what_a_key_is_here(compromised) -> None:
    alice, bob, carol = compromised["alice"], compromised["bob"], compromised["carol"]
    contacts = Contacts.load(alice.contacts_path)
    t = keytrust.key_trust(alice, contacts, carol.identity.key)
    assert (t.standing, t.name, t.trusted) == ("compromised", None, False)
    assert t.label().startswith("compromised key ")
    t = keytrust.key_trust(alice, contacts, bob.identity.key)
    assert (t.standing, t.name, t.trusted, t.label()) == ("confirmed", "bob", True, "bob")
    mine = keytrust.key_trust(alice, contacts, alice.identity.key)
    assert (mine.standing, mine.name, mine.trusted) == ("mine", None, False)
    assert keytrust.key_trust(alice, contacts, b"\x01" * 32).standing == "unknown"


def test_forward_refuses_a_bundle_signed_by_a_compromised_key(compromised) -> None:
    bob, cm = compromised["bob"], compromised["cm"]
    with pytest.raises(RefusedError, match="compromised key"):
        send.forward(bob, cm.id, to=["alice"])
    assert [e for e in bob.journal.entries() if e["event"] == "sent" and e.get("forwarded") == [cm.id]] == [
        next(e for e in bob.journal.entries() if e["event"] == "sent" and e.get("forwarded") == [cm.id])
    ]  # only the forward made before the retirement


def test_forward_refuses_a_candidate_signer_and_unverified_says_so(make_home, tmp_path: Path, gage: Gage) -> None:
    bob, stranger = make_home("bob"), make_home("stranger")
    sm, sdest = send.create(stranger, [_file(tmp_path, "s", "hi")], kind="share", subject="hello")
    arrive(bob, sdest)  # the stranger's key is now a candidate of bob's: a claim
    r = gage(bob, "forward", sm.id[:12])
    assert r.code == int(Exit.REFUSED) and "candidate key" in r.err and "--unverified" in r.err
    r = gage(bob, "forward", sm.id[:12], "--unverified", "--json")
    assert r.code == 0, r.err
    made = json.loads(r.out)
    fm = listing.find(bob, made["id"]).manifest()
    assert fm is not None and fm.chain[-1].name == "unverified: stranger"


def test_every_reader_names_a_compromised_hop_the_same_way(compromised, gage: Gage) -> None:
    alice, bob, carol, before = compromised["alice"], compromised["bob"], compromised["carol"], compromised["before"]
    arrive(alice, compromised["bdest"])
    fp_sentence = "bob says this came from compromised key "
    v = verdict_mod.compute(alice, listing.find(alice, before.id))
    (hop,) = v.chain
    assert hop.contact_name is None and hop.standing == "compromised"
    assert hop.sentence().startswith(fp_sentence)
    # verdict --json
    j = json.loads(gage(alice, "verdict", before.id[:12], "--json").out)
    (jh,) = j["chain"]
    assert jh["contact_name"] is None and jh["key_standing"] == "compromised" and jh["claim"].startswith(fp_sentence)
    assert jh["key"] == key_text(carol.identity.key)
    # read: the frame, as an agent gets it
    read = gage(alice, "read", before.id[:12]).out
    chain_lines = [ln for ln in read.splitlines() if ln.startswith("chain:")]
    assert len(chain_lines) == 1 and fp_sentence in chain_lines[0]
    assert "came from carol" not in read
    # the frame's fields, which the interface's bundle view and preview draw
    fields = [f.value for f in frame.fields(v) if f.label == "chain"]
    assert len(fields) == 1 and fp_sentence in fields[0]
    # list: the row's sender is bob, verified; the row comes from the same read model
    rows = {r["id"]: r for r in json.loads(gage(alice, "list", "--json").out)}
    assert rows[before.id]["sender"]["name"] == "bob" and rows[before.id]["verdict"] == "verified"
    # A2A: the same bundle exported by bob and imported into another home of alice's kind
    art = compromised["tmp"] / "artifact.json"
    assert gage(bob, "a2a", "export", before.id[:12], "-o", str(art)).code == 0
    twin = Home.init(compromised["tmp"] / "twin", "twin")
    pair(twin, "carol", carol)
    pair(twin, "bob", bob)
    res = arrive(twin, compromised["tmp"] / "shared" / next(p.name for p in (compromised["tmp"] / "shared").iterdir()))
    retirement.apply_arrivals(twin, [res.id])
    assert gage(twin, "a2a", "import", str(art)).code == 0
    tv = verdict_mod.compute(twin, listing.find(twin, before.id))
    assert [c.sentence() for c in tv.chain] == [hop.sentence()]


def test_a_superseded_hop_keeps_its_contact_as_a_previous_key(make_home, tmp_path: Path) -> None:
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    pair(bob, "carol", carol)
    pair(alice, "carol", carol)
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    cm, cdest = send.create(carol, [_file(tmp_path, "c", "old news")], kind="share")
    arrive(bob, cdest)
    fm, fdest = send.forward(bob, cm.id, to=["alice"])
    done = ownkey.retire(carol, reason="superseded", new=True, copy_to=tmp_path / "shared")
    res = arrive(alice, tmp_path / "shared" / done.bundle.id)
    retirement.apply_arrivals(alice, [res.id])
    arrive(alice, fdest)
    (hop,) = verdict_mod.compute(alice, listing.find(alice, fm.id)).chain
    assert hop.standing == "superseded" and hop.contact_name == "carol"
    assert hop.sentence().startswith("bob says this came from carol (previous key)")


def test_a_hop_signed_by_my_own_superseded_key_is_named_as_mine(make_home, tmp_path: Path) -> None:
    """spec/verdict.md, "Chain": a hop by one of this home's own retired keys is `my own previous key
    <fingerprint>` (superseded) or `compromised key <fingerprint>`, never a bare `key` as if a stranger's."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    pair(alice, "bob", bob)
    old_key = alice.identity.key
    am, adest = send.create(alice, [_file(tmp_path, "a", "from my old key")], kind="share")
    arrive(bob, adest)
    fm, fdest = send.forward(bob, am.id, to=["alice"])
    ownkey.retire(alice, reason="superseded", new=True)
    alice = Home.open(alice.root)
    arrive(alice, fdest)
    (hop,) = verdict_mod.compute(alice, listing.find(alice, fm.id)).chain
    assert hop.standing == "superseded" and hop.contact_name is None
    assert f"says this came from my own previous key {short_fingerprint(old_key)}," in hop.sentence()
    assert hop.to_json()["key_standing"] == "superseded"


# --- bug 2: a thread's budget belongs to the people it was sent to -----------------------------


@pytest.fixture
def thread(make_home, tmp_path: Path) -> dict:
    me, bob, carol = make_home("me"), make_home("bob"), make_home("carol")
    for a, b, name in ((me, bob, "bob"), (me, carol, "carol"), (bob, me, "me"), (carol, me, "me")):
        pair(a, name, b)
    wire = tmp_path / "wire"
    q, _ = send.create(me, [_file(tmp_path, "q", "question for bob")], kind="question", to=["bob"], copy_to=wire)
    return {"me": me, "bob": bob, "carol": carol, "q": q, "wire": wire, "tmp": tmp_path}


def _follow_up_naming_nobody(me: Home, parent: str, tmp: Path, wire: Path) -> str:
    """A follow-up of mine in the thread that names no recipient: what `--parent` without `--to`
    made before replies named the parent's signer by default (and what a scripted build still can)."""
    pm = listing.find(me, parent).manifest()
    assert pm is not None
    files = bundle_mod.collect_sources([_file(tmp, "f", "a follow-up")])
    work, m = bundle_mod.build(me.identity, files, staging=me.staging, kind="question", parent=parent, thread=pm.thread_root)
    try:
        send._publish(me, work, m, wire)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return m.id


def _reply(sender: Home, parent: str, t: dict, text: str) -> str:
    arrive(sender, t["wire"] / parent) if listing.find(sender, parent) is None else None
    m, dest = send.create(sender, [_file(t["tmp"], text, text)], kind="answer", parent=parent)
    return arrive(t["me"], dest).id


def test_a_contact_cannot_spend_a_thread_budget_that_is_someone_elses(thread) -> None:
    me, q = thread["me"], thread["q"]
    follow = _follow_up_naming_nobody(me, q.id, thread["tmp"], thread["wire"])
    # carol learned the follow-up's id and answers it: not a bundle of the thread sent to her
    from_carol = _reply(thread["carol"], follow, thread, "carol butts in")
    r = gate.accept_unattended(me, from_carol, budget=1)
    assert not r.ok and "thread I sent to others" in r.reason
    assert listing.find(me, from_carol).state == "pending"
    # bob's own reply still has the budget
    from_bob = _reply(thread["bob"], follow, thread, "bob answers")
    r = gate.accept_unattended(me, from_bob, budget=1)
    assert r.ok and r.thread == q.id, r.reason


def test_an_open_thread_may_be_answered_by_any_confirmed_contact(thread) -> None:
    me = thread["me"]
    open_q, _ = send.create(me, [_file(thread["tmp"], "o", "anyone?")], kind="question", copy_to=thread["wire"])
    r = gate.accept_unattended(me, _reply(thread["carol"], open_q.id, thread, "carol answers"), budget=1)
    assert r.ok, r.reason


def test_a_reply_names_the_parents_signer_by_default(thread) -> None:
    me, bob, q = thread["me"], thread["bob"], thread["q"]
    arrive(bob, thread["wire"] / q.id)
    answer, _ = send.create(bob, [_file(thread["tmp"], "a", "yes")], kind="answer", parent=q.id)
    assert [p.key for p in answer.to] == [me.identity.key]
    # my own follow-up to my bundle names the people that bundle was sent to
    follow, _ = send.create(me, [_file(thread["tmp"], "f2", "and?")], kind="question", parent=q.id)
    assert [p.key for p in follow.to] == [bob.identity.key]
    # a reply to a stranger names nobody: the stranger is not a contact
    explicit, _ = send.create(me, [_file(thread["tmp"], "f3", "to carol")], kind="share", parent=q.id, to=["carol"])
    assert [p.name for p in explicit.to] == ["carol"]


# --- one inbox read model ---------------------------------------------------------------------


def test_the_interface_and_gage_list_agree_row_for_row(compromised, gage: Gage, tmp_path: Path) -> None:
    from gage.tui.rows import load_rows

    alice = compromised["alice"]
    arrive(alice, compromised["bdest"])
    stranger = Home.init(tmp_path / "stranger", "alice")  # claims alice's name
    sm, sdest = send.create(stranger, [_file(tmp_path, "x", "hi")], kind="share", subject="[b]urgent[/b]")
    arrive(alice, sdest)
    mine, _ = send.create(alice, [_file(tmp_path, "m", "mine")], kind="share", to=["bob"])
    listed = json.loads(gage(alice, "list", "--json").out)
    assert {r["id"] for r in listed} >= {compromised["before"].id, sm.id, mine.id}
    shown = []
    for state in ("pending", "accepted", "rejected", "outbox"):
        for row in load_rows(alice, state):
            assert row.verdict is not None
            shown.append((row.id, row.state, row.verdict.sender.to_json()))
    assert sorted(shown) == sorted((r["id"], r["state"], r["sender"]) for r in listed)


def test_every_reader_takes_its_rows_from_the_read_model() -> None:
    """`gage list` and the interface's row code call gage.inbox.rows, and compute no verdict of their own."""
    root = Path(__file__).parent.parent / "gage"
    for rel in ("cli/commands/list.py", "tui/rows.py", "tui/inbox_sync.py"):
        text = (root / rel).read_text()
        # gage.inbox.listed is the read model's rows as kept in the row index (issue 28).
        assert "from gage.inbox.rows import" in text or "from gage.inbox.listed import" in text, rel
        assert "compute(" not in text.replace("def compute(", ""), f"{rel} computes verdicts itself"
