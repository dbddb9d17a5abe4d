"""The unattended rule: verified replies to bundles I sent, from confirmed contacts, N per thread."""

from __future__ import annotations

import shutil

from test_gate import World, accepted_entries, flip_payload_byte, world_fixture  # noqa: F401  (the `world` fixture)

from gage import bundle as bundle_mod
from gage.home import listing
from gage.inbox import gate, store
from gage.trust import frame
from gage.trust import verdict as verdict_mod


def _unattended(world: World) -> list[dict]:
    return [e for e in world.me.journal.entries() if e.get("event") == "accepted" and e.get("how") == "unattended"]


def test_budget_n_of_n_plus_one_and_restart_keeps_the_count(world: World) -> None:
    q = world.make(world.me, "my question", kind="question")
    replies = [world.pending_from(world.bob, f"answer {i}", kind="answer", parent=q) for i in range(4)]
    results = [gate.accept_unattended(world.me, r, budget=3) for r in replies]
    assert [r.ok for r in results] == [True, True, True, False]
    assert [r.used for r in results] == [1, 2, 3, 3]
    assert results[3].budget_spent and "budget" in results[3].reason and "spent" in results[3].reason
    assert [world.where(r) for r in replies] == [["accepted"]] * 3 + [["pending"]]
    entries = _unattended(world)
    assert len(entries) == 3 and all(e["thread"] == q and e["verdict"] == "verified" for e in entries)

    # A restart is a new call in a new process: the count is the journal's, not memory's.
    later = world.pending_from(world.bob, "answer after restart", kind="answer", parent=q)
    again = gate.accept_unattended(world.me, later, budget=3)
    assert not again.ok and again.budget_spent and world.where(later) == ["pending"]
    # A larger budget on restart allows exactly the difference.
    assert gate.accept_unattended(world.me, later, budget=4).ok

    # Shown as unattended wherever the bundle is shown.
    v = verdict_mod.compute(world.me, listing.find(world.me, replies[0]))
    assert v.accepted_how == "unattended"
    assert "UNATTENDED" in next(f.value for f in frame.fields(v) if f.label == "state")


def test_budget_is_per_thread_keyed_on_what_i_sent(world: World) -> None:
    q1 = world.make(world.me, "first question", kind="question")
    q2 = world.make(world.me, "second question", kind="question")
    a1 = world.pending_from(world.bob, "a1", kind="answer", parent=q1)
    a2 = world.pending_from(world.bob, "a2", kind="answer", parent=q2)
    assert gate.accept_unattended(world.me, a1, budget=1).ok
    assert gate.accept_unattended(world.me, a2, budget=1).ok
    # A reply deeper in thread q1 (to my follow-up) still counts against q1.
    follow = world.make(world.me, "follow-up", kind="question", parent=a1)
    deeper = world.pending_from(world.bob, "deeper", kind="answer", parent=follow)
    r = gate.accept_unattended(world.me, deeper, budget=1)
    assert not r.ok and r.budget_spent and r.thread == q1


def test_thread_named_in_the_incoming_manifest_is_ignored(world: World) -> None:
    """A sender cannot open a fresh budget by claiming a new thread: the key is my `sent` entry's root."""
    q = world.make(world.me, "question", kind="question")
    first = world.pending_from(world.bob, "honest answer", kind="answer", parent=q)
    assert gate.accept_unattended(world.me, first, budget=1).ok
    if listing.find(world.bob, q) is None:
        store.import_bundle(world.bob, world.wire / q)
    files = [("note.txt", world._file("answer claiming another thread"))]
    work, m = bundle_mod.build(
        world.bob.identity, files, staging=world.bob.staging, kind="answer", parent=q, thread="ab" * 32
    )
    shutil.move(str(work), str(world.wire / m.id))
    assert m.thread == "ab" * 32
    sneaky = world.deliver(m.id)
    r = gate.accept_unattended(world.me, sneaky, budget=1)
    assert not r.ok and r.budget_spent and r.thread == q
    assert world.where(sneaky) == ["pending"]


def test_what_stays_pending(world: World) -> None:
    q = world.make(world.me, "question", kind="question")
    cases = {
        # verified, but starts a new thread
        "no parent": world.pending_from(world.bob, "unrelated share"),
        # verified reply, but to a bundle eve sent me, not one I sent
        "not mine": world.pending_from(world.bob, "re: eve", kind="answer", parent=world.deliver(world.make(world.eve, "eve's"))),
        # a reply to my bundle from a key I never confirmed
        "unverified": world.pending_from(world.eve, "eve answers", kind="answer", parent=q),
    }
    tampered = world.pending_from(world.bob, "will be tampered", kind="answer", parent=q)
    flip_payload_byte(world.me.state_dir("pending") / tampered)
    cases["invalid"] = tampered
    reasons = {}
    for what, bid in cases.items():
        r = gate.accept_unattended(world.me, bid, budget=5)
        assert not r.ok and not r.budget_spent, what
        assert world.where(bid) == ["pending"], what
        reasons[what] = r.reason
    assert "not a reply" in reasons["no parent"]
    assert "not a bundle I sent" in reasons["not mine"]
    assert "not a confirmed contact" in reasons["unverified"]
    assert "invalid" in reasons["invalid"]
    assert _unattended(world) == []
    assert all(accepted_entries(world.me, b) == [] for b in cases.values())
    assert gate.staging_dir(world.me).exists() and list(gate.staging_dir(world.me).iterdir()) == []


def test_already_decided_is_reported_not_raised(world: World) -> None:
    q = world.make(world.me, "question", kind="question")
    a = world.pending_from(world.bob, "answer", kind="answer", parent=q)
    gate.accept(world.me, a)
    r = gate.accept_unattended(world.me, a, budget=5)
    assert not r.ok and r.reason == "already accepted"
    assert _unattended(world) == []
