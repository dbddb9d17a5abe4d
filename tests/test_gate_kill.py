"""Kills at random instants: real `gage accept` / `gage reject` processes, SIGKILLed mid-move.

After every kill, `reconcile` runs (as the next gage command would), and then: the bundle
is whole in exactly one state, nothing is left under the staging name, the journal
verifies, and the journal's decision (accepted/rejected) matches the directory it is in.

GAGE_TEST_SLOW_GATE (a test hook read only by gage.inbox.gate) stretches the two critical
windows (staged but not decided; landed but not journaled) so kills land inside them.
Half of the rounds kill at a random time after start; the other half wait until the
bundle reaches the staging name and kill within the windows.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from test_gate import World, staging_left, world_fixture  # noqa: F401  (the `world` fixture)

from gage import bundle as bundle_mod
from gage.home.journal.verify import verify as verify_journal
from gage.inbox import gate

ROUNDS = 40
SLOW = 0.08


def _spawn(world: World, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GAGE_HOME": str(world.me.root), gate.SLOW_ENV: str(SLOW)}
    return subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def test_kills_at_random_instants_leave_one_whole_bundle_and_a_consistent_journal(world: World) -> None:
    rng = random.Random(int(os.environ.get("GAGE_TEST_SEED", "0")) or None)
    pool = [world.pending_from(world.bob, f"bundle {i}") for i in range(ROUNDS)]
    seen: dict[str, int] = {"reconciled": 0, "accepted": 0, "rejected": 0, "pending": 0}
    current = pool.pop()
    for rnd in range(ROUNDS):
        action = "reject" if rnd % 3 == 2 else "accept"
        proc = _spawn(world, action, current)
        if rnd % 2 == 0:
            time.sleep(rng.uniform(0.0, 0.4))
        else:
            # Accept stages first; reject's window opens once the bundle is in rejected.
            staged = (gate.staging_dir(world.me) if action == "accept" else world.me.state_dir("rejected")) / current
            deadline = time.monotonic() + 5
            while proc.poll() is None and not staged.exists() and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0.0, 2.5 * SLOW))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

        notes = gate.reconcile(world.me)
        seen["reconciled"] += bool(notes)
        where = world.where(current)
        assert len(where) == 1, f"round {rnd}: bundle in {where}"
        assert staging_left(world.me) == [], f"round {rnd}: staging not empty"
        assert bundle_mod.check(world.me.state_dir(where[0]) / current, expect_name=True).ok
        report = verify_journal(world.me.journal)
        assert report.ok, report.problems
        said = gate.journal_states(world.me).get(current, "pending")
        assert said == where[0], f"round {rnd}: journal says {said}, bundle is in {where[0]}"
        accepted = [e for e in world.me.journal.entries() if e.get("event") == "accepted" and e.get("bundle") == current]
        assert len(accepted) == (1 if where[0] == "accepted" else 0)
        seen[where[0]] += 1
        if where[0] != "pending":
            current = pool.pop()
    print(seen)
    # The kills must really have landed inside the windows, and some moves must have finished.
    assert seen["reconciled"] >= 3, seen
    assert seen["accepted"] + seen["rejected"] >= 3, seen
    assert seen["pending"] >= 3, seen


BATCH = 5
BATCH_ROUNDS = 14


def _all_consistent(world: World, ids: list[str], rnd: int) -> dict[str, str]:
    """After reconcile: every bundle whole in exactly one state, which the journal says."""
    gate.reconcile(world.me)
    assert staging_left(world.me) == [], f"round {rnd}: staging not empty"
    report = verify_journal(world.me.journal)
    assert report.ok, report.problems
    said_all = gate.journal_states(world.me)
    entries = world.me.journal.entries()
    places = {}
    for bid in ids:
        where = world.where(bid)
        assert len(where) == 1, f"round {rnd}: {bid[:12]} in {where}"
        assert bundle_mod.check(world.me.state_dir(where[0]) / bid, expect_name=True).ok
        said = said_all.get(bid, "pending")
        assert said == where[0], f"round {rnd}: {bid[:12]}: journal says {said}, bundle is in {where[0]}"
        accepted = [e for e in entries if e.get("event") == "accepted" and e.get("bundle") == bid]
        assert len(accepted) == (1 if where[0] == "accepted" else 0)
        places[bid] = where[0]
    return places


def test_kills_during_a_bulk_decision_leave_each_bundle_decided_and_journaled_or_pending(world: World) -> None:
    """`gage accept ID...` / `gage reject ID...` (gate.decide_many: renames unsynced, folders
    fsynced once, the batch journaled in one write), killed anywhere: no bundle is left between."""
    rng = random.Random(int(os.environ.get("GAGE_TEST_SEED", "0")) or None)
    pool = [world.pending_from(world.bob, f"bulk {i}") for i in range(BATCH * BATCH_ROUNDS)]
    seen = {"partly": 0, "all": 0, "none": 0}
    for rnd in range(BATCH_ROUNDS):
        batch = [b for b in pool if world.where(b) == ["pending"]][:BATCH]
        action = "reject" if rnd % 3 == 2 else "accept"
        proc = _spawn(world, action, *batch)
        # Wait until the first bundle moves, then kill within the batch: each bundle sleeps SLOW
        # as it is judged, and each commit once between its durable renames and its journal lines.
        # (staging is passed through quickly: accepted too, so a loaded machine's late look still counts)
        moved = [gate.staging_dir(world.me) / batch[0], world.me.state_dir("accepted") / batch[0], world.me.state_dir("rejected") / batch[0]]
        deadline = time.monotonic() + 10
        while proc.poll() is None and not any(m.exists() for m in moved) and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0.0, (BATCH + 2) * SLOW))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        places = _all_consistent(world, batch, rnd)
        decided = sum(p != "pending" for p in places.values())
        seen["all" if decided == len(batch) else "none" if decided == 0 else "partly"] += 1
    print(seen)
    assert seen["none"] + seen["partly"] >= 2, seen  # some kills landed before the batch was journaled


def test_a_bulk_decision_reports_each_bundle_only_once_it_is_durable_and_journaled(world: World) -> None:
    ids = [world.pending_from(world.bob, f"many {i}") for i in range(6)]
    stranger = world.pending_from(world.eve, "from a stranger")  # unverified: refused, stays pending
    flip = world.pending_from(world.bob, "to be damaged")
    data = world.me.state_dir("pending") / flip / "payload" / "note.txt"
    data.write_bytes(b"X" + data.read_bytes()[1:])
    heard: list[tuple[int, int, str]] = []

    def progress(done: int, total: int, d: gate.Decided) -> None:
        heard.append((done, total, d.id))
        if d.error is None:
            assert world.where(d.id) == ["accepted"]
            assert gate.journal_states(world.me).get(d.id) == "accepted"  # journaled before it is reported
        else:
            assert world.where(d.id) == ["pending"]

    out = gate.decide_many(world.me, [*ids[:3], stranger, flip, *ids[3:], ids[0]], "accept", progress=progress)
    assert [d.id for d in out] == [*ids[:3], stranger, flip, *ids[3:]]  # in the order given, once each
    assert [h[0] for h in heard] == list(range(1, 9)) and {h[1] for h in heard} == {8}
    assert isinstance(out[3].error, gate.UnverifiedSenderError) and isinstance(out[4].error, gate.InvalidBundleError)
    assert all(isinstance(d.result, gate.AcceptResult) and d.result.how == "human" for d in out if d.id in ids)
    assert all(world.where(b) == ["accepted"] for b in ids) and staging_left(world.me) == []
    assert verify_journal(world.me.journal).ok
    again = gate.decide_many(world.me, [ids[0], stranger], "reject", why="no")
    assert isinstance(again[0].error, gate.AlreadyError) and isinstance(again[1].result, gate.RejectResult)
    assert world.where(stranger) == ["rejected"] and gate.journal_states(world.me)[stranger] == "rejected"


def test_a_kill_at_each_step_of_a_bulk_decision_leaves_each_bundle_decided_and_journaled_or_pending(world: World) -> None:
    """`gage accept A B C` / `gage reject A B C` SIGKILLed at each named step of its batch in turn
    (GAGE_TEST_KILL_AT, read by gage.bundle.critical): each rename, each folder fsync, the head's
    announcement, the journal write, its fsync, the head, the index."""
    from gage.bundle import critical

    after = ["fsync-dir:1", "fsync-dir:2", "journal-head-before:1", "journal-write:1", "journal-fsync:1", "journal-head:1", "journal-index:1"]
    renames = {"accept": ["rename:1", "rename:2", "rename:4", "rename:6"], "reject": ["rename:1", "rename:2", "rename:3"]}  # accept: 2 a bundle
    pool = [world.pending_from(world.bob, f"step {i}") for i in range(3 * (2 * len(after) + 7))]
    for action in ("accept", "reject"):
        for rnd, step in enumerate(renames[action] + after):
            batch = [b for b in pool if world.where(b) == ["pending"]][:3]
            env = {**os.environ, "GAGE_HOME": str(world.me.root), critical.KILL_ENV: step}
            proc = subprocess.run([sys.executable, "-m", "gage.cli.main", action, *batch], env=env, capture_output=True, timeout=60)
            # A batch split in single bundles (a loaded machine judging slowly) announces no head first.
            assert proc.returncode == -signal.SIGKILL or step.startswith("journal-head-before"), (step, proc.returncode, proc.stderr)
            places = _all_consistent(world, batch, rnd)
            report = verify_journal(world.me.journal, inbox=world.me.state_dir("pending").parent)
            assert report.ok, (step, report.problems)
            decided = [b for b in batch if places[b] != "pending"]
            name = step.partition(":")[0]
            if action == "accept" and name in ("rename", "fsync-dir", "journal-head-before", "journal-write"):
                assert decided == [], (step, places)  # killed before its line: back in pending
            if name in ("journal-head", "journal-index"):
                assert batch[0] in decided, (step, places)  # killed after its line: decided
