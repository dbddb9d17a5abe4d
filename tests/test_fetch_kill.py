"""`gage mailbox fetch` killed (SIGKILL) in the middle of a batch loses and doubles nothing.

A batch lands and is journaled, then each envelope is acknowledged. A kill after the batch
landed and before any acknowledgement, after one acknowledgement, or at a random instant
leaves each envelope either landed, whole and journaled once as received, or waiting on the
relay (taken again after the acknowledgement wait, then "already there": a `received` line
marked `again`, never a second arrival). The next fetches
bring in the rest: every bundle sent ends in pending exactly once, with one `received` line.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from gagetest import pair
from relaytest import open_mailbox, relay  # noqa: F401  (fixture)

from gage import bundle as bundle_mod
from gage.carriers import testhook
from gage.carriers.relay import mailbox, seal
from gage.format.manifest import is_id
from gage.home import sealing
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import gate, send

N = 40
ACK_WAIT = 2  # seconds: what a killed fetch took comes back this soon


def _fetch(bob: Home, kill_at: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GAGE_HOME": str(bob.root)}
    env.pop(testhook.ENV, None)
    if kill_at is not None:
        env[testhook.ENV] = kill_at
    return subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "mailbox", "fetch"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _consistent(bob: Home, sent: set[str], what: str) -> set[str]:
    """As the next command finds it: nothing partial in pending, the journal verifies and says
    received exactly once for each bundle that is there, and for nothing that is not."""
    gate.reconcile(bob)
    pending = bob.state_dir("pending")
    here = {n for n in os.listdir(pending) if is_id(n)}
    assert here <= sent, f"{what}: in pending but never sent: {sorted(here - sent)}"
    for bid in here:
        assert bundle_mod.check(pending / bid, expect_name=True).ok, f"{what}: {bid[:12]} is not whole"
    report = verify_journal(bob.journal, inbox=bob.root / "inbox")
    assert report.ok, (what, report.problems)
    entries = [e for e in bob.journal.entries() if e.get("event") == "received"]
    received = collections.Counter(e["bundle"] for e in entries if not e.get("again"))
    assert set(received) == here, f"{what}: received lines for {sorted(set(received) ^ here)}"
    assert all(n == 1 for n in received.values()), f"{what}: received twice: {[b for b, n in received.items() if n > 1]}"
    again = {e["bundle"] for e in entries if e.get("again")}  # "already there": one that came back
    assert again <= here, f"{what}: already there, but it is not: {sorted(again - here)}"
    return here


def test_a_fetch_killed_mid_batch_loses_and_doubles_nothing(make_home, relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    address = open_mailbox(bob, relay.url, ack_wait=ACK_WAIT)
    pair(bob, "alice", alice)
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    sent: set[str] = set()
    for i in range(N):
        src = tmp_path / f"s{i}.txt"
        src.write_bytes(f"note {i}\n".encode() * (1 + i))
        m, dest = send.create(alice, [src], kind="share")
        env = tmp_path / f"{m.id}.age"
        with open(env, "wb") as out:
            seal.seal_bundle(dest, key.recipient, out)
        mailbox.run(mailbox.publish(relay.url, address, env))
        sent.add(m.id)

    # At each step a batch passes: the process dies there, and what it did is whole.
    for step in testhook.FETCH_STEPS:
        proc = _fetch(bob, kill_at=step)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL, (step, proc.returncode, err.decode())
        here = _consistent(bob, sent, step)
        assert here, f"{step}: the batch had landed before the kill, and is still there"
        time.sleep(ACK_WAIT + 0.5)  # what it took and did not acknowledge is offered again

    # At random instants, as a person's Ctrl-\ or the machine's OOM killer would.
    rng = random.Random(int(os.environ.get("GAGE_TEST_SEED", "0")) or None)
    for rnd in range(4):
        proc = _fetch(bob)
        time.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        _consistent(bob, sent, f"random round {rnd}")

    # Then fetches that are left alone finish the job.
    deadline = time.monotonic() + 60
    here: set[str] = set()
    while time.monotonic() < deadline:
        time.sleep(ACK_WAIT + 0.5)
        proc = _fetch(bob)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        here = _consistent(bob, sent, "after")
        if here == sent:
            break
    assert here == sent, f"{len(sent - here)} of {N} never arrived"
    proc = _fetch(bob)  # and the relay holds nothing more
    proc.communicate(timeout=60)
    assert _consistent(bob, sent, "last") == sent
