"""A bulk decision's journal never lies: a fault after the journal lines are durable (a full disk
while the head is rewritten, a Ctrl-C while the index syncs) leaves the batch decided, not moved
back to pending under a journal that says otherwise.

`World` and the `world` fixture come from test_gate.
"""

from __future__ import annotations

import errno

import pytest
from test_gate import World, staging_left, world_fixture  # noqa: F401  (the `world` fixture)

from gage.format.errors import GageIOError
from gage.home.journal.log import Journal
from gage.home.journal.verify import verify as verify_journal
from gage.inbox import gate


def _decisions_match_folders(world: World, ids: list[str]) -> dict[str, str]:
    """Every bundle in accepted/rejected with its decision line, or in pending with none."""
    said = gate.decisions(world.me)
    places = {}
    for bid in ids:
        where = world.where(bid)
        assert len(where) == 1, f"{bid[:12]} in {where}"
        decision = said.get(bid)
        if where[0] == "pending":
            assert decision is None, f"{bid[:12]}: the journal says {decision}, the bundle sits in pending"
        else:
            assert decision == where[0], f"{bid[:12]}: in {where[0]}, the journal says {decision}"
        places[bid] = where[0]
    assert staging_left(world.me) == []
    return places


@pytest.mark.parametrize("action", ["accept", "reject"])
@pytest.mark.parametrize("fault", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_fault_while_the_head_is_rewritten_after_the_lines_leaves_the_batch_decided(
    world: World, monkeypatch: pytest.MonkeyPatch, action: str, fault: BaseException
) -> None:
    ids = [world.pending_from(world.bob, f"many {i}") for i in range(5)]
    real = Journal._write_head

    def head(self: Journal, seq: int, digest: str, *, pending: int | None = None) -> None:
        if pending is None:  # the head's rewrite after the lines, not its announcement before them
            raise fault
        real(self, seq, digest, pending=pending)

    monkeypatch.setattr(Journal, "_write_head", head)
    heard: list[gate.Decided] = []
    try:
        out = gate.decide_many(
            world.me, ids, action, why="no" if action == "reject" else None, progress=lambda _n, _t, d: heard.append(d)  # type: ignore[arg-type]
        )
    except KeyboardInterrupt:
        out = None
        assert isinstance(fault, KeyboardInterrupt)
    monkeypatch.undo()
    place = "accepted" if action == "accept" else "rejected"
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, place)
    if out is not None:
        assert all(d.error is None and d.result is not None for d in out)
    # Reported as decided, even when a Ctrl-C came through: the person is told what was done.
    assert [d.id for d in heard] == ids and all(d.error is None and d.result is not None for d in heard)
    report = verify_journal(world.me.journal)
    assert report.ok, report.problems
    gate.reconcile(world.me)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, place)
    assert verify_journal(world.me.journal).ok


def test_a_journal_write_that_fails_leaves_the_batch_pending_and_says_so(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [world.pending_from(world.bob, f"many {i}") for i in range(4)]
    real = Journal._write_head

    def head(self: Journal, seq: int, digest: str, *, pending: int | None = None) -> None:
        if pending is not None:  # before any line is written
            raise GageIOError("cannot write: No space left on device", path=str(self.head_path))
        real(self, seq, digest, pending=pending)

    monkeypatch.setattr(Journal, "_write_head", head)
    out = gate.decide_many(world.me, ids, "accept")
    monkeypatch.undo()
    assert all(isinstance(d.error, GageIOError) and d.result is None for d in out)
    assert all("not accepted" in str(d.error) for d in out)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, "pending")
    assert verify_journal(world.me.journal).ok
    again = gate.decide_many(world.me, ids, "accept")  # the next command finishes them
    assert all(d.error is None for d in again)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, "accepted")
