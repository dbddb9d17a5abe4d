"""Red team, issue 9 class 4: replaying a decided bundle.

A decision in the journal (accepted, or rejected) is final for that bundle id: no rule
decides it again (not the unattended rule, not a person), no import brings the id back to
pending, and `reconcile` only records where the bundle is now, never undoes the decision.
The attacks: drop a rejected reply again once `inbox/rejected/<id>` was tidied away; drop an
accepted one again to spend its thread's budget twice; move a decided bundle between the
inbox folders by hand and let reconcile "repair" it into undecided.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_gate import World, accepted_entries, world_fixture  # noqa: F401  (the `world` fixture)
from test_watch import Clock

from gage.carriers.watch import Watcher
from gage.home.journal.verify import verify as verify_journal
from gage.inbox import gate, store


@pytest.fixture
def drop(tmp_path: Path) -> Path:
    d = tmp_path / "drop"
    d.mkdir()
    return d


def reply(world: World, text: str = "an answer") -> tuple[str, str]:
    """My question (sent), and bob's verified answer to it, on the wire but not yet delivered."""
    q = world.make(world.me, "my question", kind="question")
    return q, world.make(world.bob, text, kind="answer", parent=q)


def unattended(world: World) -> list[dict]:
    return [e for e in world.me.journal.entries() if e.get("event") == "accepted" and e.get("how") == "unattended"]


def watch_once(world: World, drop: Path, bid: str, budget: int = 5) -> list:
    shutil.copytree(world.wire / bid, drop / bid, dirs_exist_ok=True)
    w = Watcher(world.me, [drop], settle=0.0, budget=budget, clock=Clock())
    return w.scan()


# --- the attacks in the issue ---------------------------------------------------------------


def test_rejected_reply_dropped_again_after_tidying_is_not_accepted(world: World, drop: Path, gage) -> None:
    """Attacker (anyone who saw the reply on the transport) drops a reply the person rejected,
    once `inbox/rejected/<id>` has been tidied away, hoping the unattended rule accepts it.
    (was fooled: fixed, a decided id is never imported into pending again)"""
    _q, a = reply(world)
    world.deliver(a)
    gate.reject(world.me, a, why="not what I asked")
    shutil.rmtree(world.me.state_dir("rejected") / a)  # tidied away
    gate.reconcile(world.me)  # records that it is missing: the decision stays
    events = watch_once(world, drop, a)
    assert not any(e.kind == "accepted" for e in events), [(e.kind, e.message) for e in events]
    assert world.where(a) == [] and accepted_entries(world.me, a) == []
    assert any(e.kind == "skipped" and "rejected" in e.message for e in events), [(e.kind, e.message) for e in events]
    assert gate.decisions(world.me)[a] == "rejected"
    # A person cannot bring it back through `gage import` either.
    r = gage(world.me, "import", str(world.wire / a))
    assert r.code == 0 and "rejected" in r.err and world.where(a) == []
    r = gage(world.me, "accept", a[:12])
    assert r.code == 8 and world.where(a) == []


def test_accepted_reply_cannot_be_accepted_unattended_twice(world: World, drop: Path) -> None:
    """Attacker drops an accepted reply again after `inbox/accepted/<id>` was tidied away, to
    spend the thread's budget twice (and trigger whatever acts on an accept twice).
    (was fooled: fixed)"""
    q, a = reply(world)
    events = watch_once(world, drop, a)
    assert any(e.kind == "accepted" and e.id == a for e in events)
    shutil.rmtree(world.me.state_dir("accepted") / a)
    shutil.rmtree(drop / a)
    gate.reconcile(world.me)
    events = watch_once(world, drop, a)
    assert not any(e.kind == "accepted" for e in events), [(e.kind, e.message) for e in events]
    assert len(accepted_entries(world.me, a)) == 1 and len(unattended(world)) == 1
    assert gate.unattended_used(world.me, q) == 1


def test_accepted_bundle_moved_back_to_pending_by_hand_is_not_decided_again(world: World) -> None:
    """Attacker (a sync tool, a restore, a careless `mv`) puts an accepted reply back in pending,
    hoping reconcile records it as pending and the unattended rule accepts it a second time.
    (was fooled: fixed, reconcile recorded "pending" and that erased the accept)"""
    q, a = reply(world)
    world.deliver(a)
    assert gate.accept_unattended(world.me, a, budget=5).ok
    os.rename(world.me.state_dir("accepted") / a, world.me.state_dir("pending") / a)
    notes = gate.reconcile(world.me)
    assert any("accepted" in n for n in notes)
    r = gate.accept_unattended(world.me, a, budget=5)
    assert not r.ok and r.reason == "already accepted"
    with pytest.raises(gate.AlreadyError, match="already accepted"):
        gate.accept(world.me, a)
    with pytest.raises(gate.AlreadyError, match="already accepted"):
        gate.reject(world.me, a)
    assert len(accepted_entries(world.me, a)) == 1 and gate.unattended_used(world.me, q) == 1
    assert gate.decisions(world.me)[a] == "accepted"
    assert gate.reconcile(world.me) == []  # idempotent: where it is was recorded once


def test_rejected_bundle_moved_into_accepted_by_hand_goes_back_to_rejected(world: World) -> None:
    """Attacker moves a rejected bundle into `inbox/accepted`, hoping reconcile sends it "back
    to pending" (where it would be undecided) as it does for an accepted copy with no journaled
    accept. (was fooled: fixed, the rejection stands and the bundle goes back to rejected)"""
    _q, a = reply(world)
    world.deliver(a)
    gate.reject(world.me, a)
    os.rename(world.me.state_dir("rejected") / a, world.me.state_dir("accepted") / a)
    notes = gate.reconcile(world.me)
    assert len(notes) == 1 and "rejected" in notes[0]
    assert world.where(a) == ["rejected"] and accepted_entries(world.me, a) == []
    assert gate.accept_unattended(world.me, a, budget=5).reason == "already rejected"
    assert gate.reconcile(world.me) == []


def test_reconcile_records_where_a_decided_bundle_went_without_erasing_it(world: World) -> None:
    """Each move of a decided bundle (gone, back, gone again) is recorded once, and the decision
    survives all of them."""
    _q, a = reply(world)
    world.deliver(a)
    gate.accept(world.me, a)
    held = world.me.state_dir("accepted") / a
    aside = world.files / "aside"
    shutil.move(str(held), str(aside))
    assert len(gate.reconcile(world.me)) == 1 and gate.journal_states(world.me)[a] == "missing"
    assert gate.reconcile(world.me) == []
    shutil.move(str(aside), str(held))  # restored from a backup
    notes = gate.reconcile(world.me)
    assert world.where(a) == ["accepted"], notes  # not sent "back to pending" for want of an accept
    assert gate.journal_states(world.me)[a] == "accepted" and gate.decisions(world.me)[a] == "accepted"
    assert gate.reconcile(world.me) == []
    assert len(accepted_entries(world.me, a)) == 1
    assert verify_journal(world.me.journal).ok


def test_replay_of_a_decided_bundle_through_import_is_journaled_as_a_repeat(world: World) -> None:
    """`gage import` (and the A2A import, which shares it) of a decided id writes a repeat
    record, never a new arrival, and lands nothing in pending."""
    _q, a = reply(world)
    world.deliver(a)
    gate.reject(world.me, a)
    shutil.rmtree(world.me.state_dir("rejected") / a)
    res = store.import_bundle(world.me, world.wire / a)
    assert not res.new and res.state == "rejected"
    last = [e for e in world.me.journal.entries() if e.get("bundle") == a][-1]
    assert last["event"] == "imported" and last.get("again") is True and last["state"] == "rejected"
    assert world.where(a) == []


def test_replay_over_a2a_of_a_decided_bundle_lands_nothing(world: World) -> None:
    """Sibling: the same replay carried as an A2A artifact (the A2A import shares the store's)."""
    from gage.carriers.a2a import artifact

    _q, a = reply(world)
    world.deliver(a)
    assert gate.accept_unattended(world.me, a, budget=5).ok
    obj = artifact.export_artifact(world.wire / a)
    shutil.rmtree(world.me.state_dir("accepted") / a)
    gate.reconcile(world.me)
    [landed] = artifact.receive(world.me, obj)
    assert not landed.new and landed.state == "accepted"
    assert world.where(a) == [] and len(accepted_entries(world.me, a)) == 1
