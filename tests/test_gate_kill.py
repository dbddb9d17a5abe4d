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
