"""A bulk decision's journal never lies: a fault after the journal lines are durable (a full disk
while the head is rewritten, a Ctrl-C while the index syncs) leaves the batch decided, not moved
back to pending under a journal that says otherwise.

`World` and the `world` fixture come from test_gate.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

import pytest
from test_gate import World, staging_left, world_fixture  # noqa: F401  (the `world` fixture)

from gage.bundle import critical
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
    report = verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent)
    assert report.ok, report.problems
    gate.reconcile(world.me)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, place)
    assert verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent).ok


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
    assert verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent).ok
    again = gate.decide_many(world.me, ids, "accept")  # the next command finishes them
    assert all(d.error is None for d in again)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, "accepted")


# --- every step of a batch, each fault in turn -------------------------------------------------

FAULTS: dict[str, Callable[[], BaseException]] = {
    "ENOSPC": lambda: OSError(errno.ENOSPC, "No space left on device"),
    "EIO": lambda: OSError(errno.EIO, "Input/output error"),
    "EROFS": lambda: OSError(errno.EROFS, "Read-only file system"),  # a read-only folder, as seen by root too
    "SIGINT": KeyboardInterrupt,
}
BATCH = 3


class _Pool:
    """Pending bundles for one test, made as they run out (a decided one is used up)."""

    def __init__(self, world: World) -> None:
        self.world, self.made = world, 0

    def take(self, n: int) -> list[str]:
        mine = [b for b in os.listdir(self.world.me.state_dir("pending")) if b not in gate.decisions(self.world.me)][:n]
        while len(mine) < n:
            self.made += 1
            mine.append(self.world.pending_from(self.world.bob, f"pool {self.made}"))
        return sorted(mine)


def _run(world: World, ids: list[str], action: str, at: int | None, fault: str) -> tuple[list[str], list[gate.Decided] | None, list[gate.Decided]]:
    """decide_many with `fault` raised at the `at`-th step; (steps reached, the result or None, what was reported)."""
    steps: list[str] = []

    def hook(name: str) -> None:
        steps.append(name)
        if len(steps) == at:
            raise FAULTS[fault]()

    heard: list[gate.Decided] = []
    critical.hook = hook
    try:
        out: list[gate.Decided] | None = gate.decide_many(
            world.me, ids, action, why="no" if action == "reject" else None, progress=lambda _n, _t, d: heard.append(d)  # type: ignore[arg-type]
        )
    except KeyboardInterrupt:
        out = None
    finally:
        critical.hook = None
    return steps, out, heard


@pytest.mark.parametrize("batches", ["one", "each"])
@pytest.mark.parametrize("action", ["accept", "reject"])
def test_a_fault_at_every_step_of_a_batch_leaves_each_bundle_decided_and_journaled_or_pending(
    world: World, monkeypatch: pytest.MonkeyPatch, action: str, batches: str
) -> None:
    # The whole decision as one batch, or one batch per bundle (a fault in the second batch).
    monkeypatch.setattr(gate, "BATCH_SECONDS", 3600.0 if batches == "one" else 0.0)
    pool = _Pool(world)
    steps, out, _heard = _run(world, pool.take(BATCH), action, None, "EIO")  # no fault: the steps a batch takes
    assert out is not None and all(d.error is None for d in out)
    for step in ("rename", "fsync-dir", "journal-write", "journal-fsync", "journal-head", "journal-index"):
        assert step in steps, (step, steps)
    assert ("journal-head-before" in steps) == (batches == "one")  # a batch of lines is announced first
    place = "accepted" if action == "accept" else "rejected"
    seen: set[tuple[str, str]] = set()
    for at in range(1, len(steps) + 1):
        for fault in FAULTS:
            ids = pool.take(BATCH)
            reached, out, heard = _run(world, ids, action, at, fault)
            case = f"{fault} at step {at} ({reached[at - 1] if at <= len(reached) else '-'})"
            places = _decisions_match_folders(world, ids)  # at once, before any reconcile
            done = {b for b, p in places.items() if p == place}
            seen.add((fault, "all" if len(done) == BATCH else "none" if not done else "some"))
            # Told the truth: every bundle reported decided is, every other one is in pending.
            told = {d.id for d in heard if d.error is None}
            assert told == done, case
            if out is None:
                assert fault == "SIGINT", case
            else:
                for d in out:
                    assert (d.error is None) == (d.id in done), (case, d.id[:12], d.error)
                    if d.error is not None:
                        assert isinstance(d.error, gate.NotDecidedError | GageIOError), (case, d.error)
            report = verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent)
            assert report.ok, (case, report.problems)
            gate.reconcile(world.me)  # the next command: nothing moves, nothing is lost
            assert _decisions_match_folders(world, ids) == places, case
            assert verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent).ok, case
    # The walk reached both sides: faults that left the batch undone, and faults after its lines.
    assert ("ENOSPC", "none") in seen and ("ENOSPC", "all") in seen and ("SIGINT", "all") in seen, seen
    if batches == "each":
        assert ("ENOSPC", "some") in seen and ("SIGINT", "some") in seen, seen
    again = gate.decide_many(world.me, pool.take(BATCH), action, why="no" if action == "reject" else None)  # type: ignore[arg-type]
    assert all(d.error is None for d in again)  # the next decision goes through


# --- what `gage accept ID...` says -------------------------------------------------------------


def _at(step: str, fault: Callable[[], BaseException]) -> Callable[[str], None]:
    def hook(name: str) -> None:
        if name == step:
            raise fault()

    return hook


def test_gage_accept_many_says_which_bundles_were_decided_and_exits_7_only_for_those_not_done(world: World, gage) -> None:
    ids = sorted(world.pending_from(world.bob, f"cli {i}") for i in range(3))
    critical.hook = _at("journal-head", FAULTS["ENOSPC"])  # after the lines: decided, exit 0
    try:
        r = gage(world.me, "accept", *ids[:2])
    finally:
        critical.hook = None
    assert r.code == 0, r.err
    assert all(f"accepted {b}" in r.out for b in ids[:2])
    assert "gage: note:" in r.err and "the journal's lines are written" in r.err  # the head left behind, said apart
    critical.hook = _at("journal-write", FAULTS["ENOSPC"])  # before them: not decided, exit 7, each named
    try:
        r = gage(world.me, "accept", ids[2], *ids[:2])
    finally:
        critical.hook = None
    assert r.code == 7, (r.out, r.err)
    assert f"bundle {ids[2][:12]} was not accepted" in r.err and "it is in pending: decide it again" in r.err
    assert "already accepted" in r.err  # the two decided before say so, not "not accepted"
    assert "1 of 3 bundles not accepted" in r.err
    assert world.where(ids[2]) == ["pending"]
    r = gage(world.me, "accept", ids[2])  # the next command finishes it
    assert r.code == 0 and world.where(ids[2]) == ["accepted"]


def test_ctrl_c_during_a_bulk_accept_names_what_was_not_accepted(world: World, gage) -> None:
    ids = sorted(world.pending_from(world.bob, f"cli {i}") for i in range(3))
    critical.hook = _at("journal-fsync", FAULTS["SIGINT"])  # while the lines are being made durable
    try:
        r = gage(world.me, "accept", *ids)
    finally:
        critical.hook = None
    assert r.code == 130, r.err
    assert all(f"gage: not accepted: {b}" in r.err for b in ids)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, "pending")


@pytest.mark.parametrize(("step", "said"), [("journal-head", "is accepted (its journal line was written)"), ("journal-fsync", "was not accepted")])
def test_ctrl_c_during_a_single_accept_says_which_way_it_went(world: World, gage, step: str, said: str) -> None:
    bid = world.pending_from(world.bob, "one")
    critical.hook = _at(step, FAULTS["SIGINT"])
    try:
        r = gage(world.me, "accept", bid)
    finally:
        critical.hook = None
    assert r.code == 130 and f"gage: interrupted: {bid} {said}" in r.err, r.err
    assert _decisions_match_folders(world, [bid])[bid] == ("accepted" if "is accepted" in said else "pending")


def test_the_interfaces_bulk_decision_reports_what_a_failed_batch_did_not_decide(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from gage.tui import bulk

    monkeypatch.setattr(gate, "BATCH_SECONDS", 0.0)  # one batch per bundle: the second one fails
    ids = sorted(world.pending_from(world.bob, f"tui {i}") for i in range(3))
    writes = []

    def hook(name: str) -> None:
        if name == "journal-write":
            writes.append(name)
            if len(writes) == 2:
                raise FAULTS["ENOSPC"]()

    steps: list[int] = []
    critical.hook = hook
    try:
        moved, failures = bulk.accept_each(world.me, [(b, False) for b in ids], steps.append)
    finally:
        critical.hook = None
    places = _decisions_match_folders(world, ids)
    assert [b for b, _u in moved] == [b for b in ids if places[b] == "accepted"] == ids[:1]
    assert len(failures) == 2 and all("was not accepted" in f for f in failures)
    assert steps == [1, 2, 3]


# --- journal verify sees a decision the folders do not show ------------------------------------


def test_journal_verify_catches_a_decision_the_folders_do_not_show(world: World, gage) -> None:
    a, b, c = (world.pending_from(world.bob, f"v {i}") for i in range(3))
    gate.accept(world.me, a)
    gate.reject(world.me, b)
    inbox = world.me.state_dir("pending").parent
    assert verify_journal(world.me.journal, inbox=inbox).ok
    # What the bug left: journaled accepted, sitting in pending (and a rejected one in accepted).
    os.rename(world.me.state_dir("accepted") / a, world.me.state_dir("pending") / a)
    os.rename(world.me.state_dir("rejected") / b, world.me.state_dir("accepted") / b)
    os.rename(world.me.state_dir("pending") / c, world.me.state_dir("rejected") / c)  # no decision at all
    report = verify_journal(world.me.journal, inbox=inbox)
    assert not report.ok
    assert any(a in p and "the journal says accepted, but the bundle is in pending" in p for p in report.problems)
    assert any(b in p and "the journal says rejected, but the bundle is in accepted" in p for p in report.problems)
    assert any(c in p and "records no decision, but the bundle is in rejected" in p for p in report.problems)
    assert verify_journal(world.me.journal).ok  # the chain alone is whole: only the folders tell
    # The command: opening the home reconciles what it can (b back to rejected, c recorded as
    # rejected), but a decision is final, so `a` in pending under "accepted" is still reported.
    r = gage(world.me, "journal", "verify")
    assert r.code == 1, r.out
    assert f"bundle {a}: the journal says accepted, but the bundle is in pending" in r.err
    assert b not in r.err and c not in r.err


# --- the single decisions keep the same rule ----------------------------------------------------


@pytest.mark.parametrize("action", ["accept", "reject"])
@pytest.mark.parametrize(("step", "fault"), [("journal-write", "ENOSPC"), ("journal-fsync", "EIO"), ("journal-fsync", "SIGINT"),
                                             ("journal-head", "ENOSPC"), ("journal-head", "SIGINT"), ("journal-index", "SIGINT")])
def test_a_single_decision_is_journaled_and_kept_or_back_in_pending_and_says_so(world: World, action: str, step: str, fault: str) -> None:
    bid = world.pending_from(world.bob, "one")
    decide = (lambda: gate.accept(world.me, bid)) if action == "accept" else (lambda: gate.reject(world.me, bid, why="no"))
    critical.hook = _at(step, FAULTS[fault])
    try:
        decide()
        raised: BaseException | None = None
    except BaseException as exc:  # noqa: BLE001  (what the fault turned into is the point)
        raised = exc
    finally:
        critical.hook = None
    place = _decisions_match_folders(world, [bid])[bid]
    if step in ("journal-write", "journal-fsync"):  # before the line was durable: not decided, and said so
        assert place == "pending"
        if fault == "SIGINT":
            assert isinstance(raised, KeyboardInterrupt)
        else:
            assert isinstance(raised, gate.NotDecidedError) and "it is in pending" in str(raised), raised
    else:  # the line is durable: decided, whatever came after
        assert place == ("accepted" if action == "accept" else "rejected")
        assert raised is None or isinstance(raised, KeyboardInterrupt)
    assert verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent).ok
    gate.reconcile(world.me)
    assert _decisions_match_folders(world, [bid])[bid] == place


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder; EROFS is injected at every step above")
def test_a_home_folder_made_read_only_at_the_journal_step_leaves_the_batch_pending(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "BATCH_SECONDS", 3600.0)
    ids = sorted(world.pending_from(world.bob, f"ro {i}") for i in range(3))
    root = world.me.root

    def hook(name: str) -> None:
        if name == "journal-head-before":
            root.chmod(0o500)  # the head's new file cannot be made: nothing of the batch is written

    critical.hook = hook
    try:
        out = gate.decide_many(world.me, ids, "accept")
    finally:
        critical.hook = None
        root.chmod(0o700)
    assert all(isinstance(d.error, gate.NotDecidedError) for d in out)
    assert _decisions_match_folders(world, ids) == dict.fromkeys(ids, "pending")
    assert verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent).ok
