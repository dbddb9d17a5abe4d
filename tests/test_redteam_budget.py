"""Red team, issue 9 class 5: spending someone else's unattended budget.

The budget key of an unattended accept must come only from what this home sent and to whom,
never from a received manifest. The attack that opened the class: carol (a confirmed contact)
names, as the `thread` of her question, a thread I opened with bob; my reply to her inherits
that `thread` (a writer copies its parent's), my `sent` entry recorded it, and carol's
follow-ups then spent the budget of the thread I opened with bob, so bob's real answers waited
for a person. The siblings: the same through `parent` instead of `thread`, through a bundle
whose signature does not hold, and through several hops.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from gagetest import pair
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)

from gage import bundle as bundle_mod
from gage.format.manifest import Manifest
from gage.home.layout import Home
from gage.inbox import gate, send, store


def carol_of(world: World, make_home: Callable[[str], Home]) -> Home:
    carol = make_home("carol")
    pair(world.me, "carol", carol)
    pair(carol, "me", world.me)
    return carol


def built(world: World, sender: Home, text: str, *, kind: str, parent: str | None, thread: str | None) -> str:
    """A bundle `sender` signs with exactly the `parent` and `thread` given (any id at all),
    put on the wire and delivered to me."""
    files = [("note.txt", world._file(text))]
    work, m = bundle_mod.build(sender.identity, files, staging=sender.staging, kind=kind, parent=parent, thread=thread)
    shutil.move(str(work), str(world.wire / m.id))
    return world.deliver(m.id)


def my_reply(world: World, to: Home, parent: str, *, names: list[str] | None = None) -> Manifest:
    """I answer `parent` (a bundle I hold); `to` receives my answer."""
    m, _ = send.create(world.me, [world._file("my answer")], kind="answer", parent=parent, to=names, copy_to=world.wire)
    store.import_bundle(to, world.wire / m.id)
    return m


def follow_up(world: World, sender: Home, parent: str, text: str = "more") -> str:
    m, _ = send.create(sender, [world._file(text)], kind="question", parent=parent, copy_to=world.wire)
    return world.deliver(m.id)


def test_claimed_thread_in_a_question_cannot_spend_a_thread_i_opened_with_someone_else(world: World, make_home) -> None:
    """Attacker is carol, confirmed: her question names my thread with bob as its `thread`; I
    answer her; her follow-ups to my answer must spend a budget of their own, never the one of
    my thread with bob. (was fooled: fixed, the key was the `thread` my `sent` entry copied
    from her manifest)"""
    carol = carol_of(world, make_home)
    t, _ = send.create(world.me, [world._file("for bob only")], kind="question", to=["bob"], copy_to=world.wire)
    qc = built(world, carol, "a question", kind="question", parent="ef" * 32, thread=t.id)
    mine = my_reply(world, carol, qc, names=["carol"])
    assert mine.thread == t.id  # my reply did inherit her claim: that is the writer's rule
    spent = gate.accept_unattended(world.me, follow_up(world, carol, mine.id, "one"), budget=1)
    assert spent.ok and spent.thread != t.id and spent.thread == mine.id
    # My thread with bob still has its whole budget.
    bobs = world.pending_from(world.bob, "bob's answer", kind="answer", parent=t.id)
    r = gate.accept_unattended(world.me, bobs, budget=1)
    assert r.ok and r.thread == t.id and r.used == 1
    # And carol's second follow-up finds her own thread's budget spent, not bob's.
    again = gate.accept_unattended(world.me, follow_up(world, carol, mine.id, "two"), budget=1)
    assert not again.ok and again.budget_spent and again.thread == mine.id


def test_a_parent_in_my_thread_with_someone_else_does_not_link_her_in(world: World, make_home) -> None:
    """Sibling: carol's question names my bundle to bob as its `parent` (and its thread), so it
    looks like part of that conversation; she was not one of its recipients, so my answer to her
    starts a budget of its own."""
    carol = carol_of(world, make_home)
    t, _ = send.create(world.me, [world._file("for bob only")], kind="question", to=["bob"], copy_to=world.wire)
    store.import_bundle(carol, world.wire / t.id)
    qc = follow_up(world, carol, t.id, "butting in")
    assert not gate.accept_unattended(world.me, qc, budget=5).ok  # not to her: already refused
    mine = my_reply(world, carol, qc)
    r = gate.accept_unattended(world.me, follow_up(world, carol, mine.id), budget=1)
    assert r.ok and r.thread == mine.id
    assert gate.unattended_used(world.me, t.id) == 0


def test_a_bundle_whose_signature_failed_links_nothing(world: World, make_home, tmp_path) -> None:
    """Sibling: the link runs through a bundle that names bob as its sender but is not signed by
    him (a forged copy); my reply to it must not put its follow-ups in my thread with bob."""
    t, _ = send.create(world.me, [world._file("for bob")], kind="question", to=["bob"], copy_to=world.wire)
    # A copy of a real answer from bob, with its note changed on the way: it arrives invalid.
    store.import_bundle(world.bob, world.wire / t.id)
    real, _ = send.create(world.bob, [world._file("the real answer")], kind="answer", parent=t.id)
    forged = tmp_path / "forged" / real.id
    shutil.copytree(world.bob.state_dir("outbox") / real.id, forged)
    (forged / "payload" / "note.txt").write_text("changed on the way")
    assert store.import_bundle(world.me, forged).check.ok is False
    mine = my_reply(world, world.bob, real.id)
    r = gate.accept_unattended(world.me, follow_up(world, world.bob, mine.id), budget=1)
    assert r.ok and r.thread == mine.id and gate.unattended_used(world.me, t.id) == 0


def test_honest_threads_still_share_one_budget_over_several_hops(world: World) -> None:
    """What must keep working: bob answers my question, I follow up on his answer, he answers
    again, and so on: every unattended accept counts against the thread I started."""
    q, _ = send.create(world.me, [world._file("q")], kind="question", to=["bob"], copy_to=world.wire)
    parent = q.id
    results = []
    for i in range(3):
        a = world.pending_from(world.bob, f"answer {i}", kind="answer", parent=parent)
        results.append(gate.accept_unattended(world.me, a, budget=2))
        parent = my_reply(world, world.bob, a, names=["bob"]).id
    assert [r.ok for r in results] == [True, True, False]
    assert all(r.thread == q.id for r in results) and results[2].budget_spent


def test_an_open_question_may_be_answered_into_by_any_confirmed_contact(world: World, make_home) -> None:
    """Documented, not a hole: a bundle I sent to nobody in particular may be answered, unattended,
    by any confirmed contact, so a hop through her question into that thread is allowed too."""
    carol = carol_of(world, make_home)
    t, _ = send.create(world.me, [world._file("anyone?")], kind="question", copy_to=world.wire)
    store.import_bundle(carol, world.wire / t.id)
    qc = follow_up(world, carol, t.id, "a question back")
    mine = my_reply(world, carol, qc)
    r = gate.accept_unattended(world.me, follow_up(world, carol, mine.id), budget=5)
    assert r.ok and r.thread == t.id
