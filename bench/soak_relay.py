"""Soak for the relay: `kill -9` of `gage mailbox fetch` at random instants, many rounds.

The same check as tests/test_relay_faults.py (50 rounds there), for as long as you like: each
round delivers a few envelopes (small, medium and multi-MiB bundles) to bob's mailbox on a
local nats-server (127.0.0.1, a free port), starts a real `gage mailbox fetch` and SIGKILLs it
at a random instant (unless it finished first). At the end, and every `--check-every` rounds:
every delivered bundle is in pending exactly once (one first arrival each in the journal),
every pending bundle checks out whole, and reconcile leaves no scratch copy behind.

It prints its seed first and the totals last; exit 0 when it held, 1 with what was wrong.

    python bench/soak_relay.py                       # 500 rounds
    python bench/soak_relay.py --rounds 2000 --seed 7 --max-mib 8
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gage import bundle as bundle_mod  # noqa: E402
from gage.carriers.relay import config, deliver, mailbox, server  # noqa: E402
from gage.format.words import derive  # noqa: E402
from gage.home import listing, sealing, whereabouts  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.inbox import gate, reconcile, send  # noqa: E402
from gage.trust import ceremony  # noqa: E402


def arrivals(home: Home) -> Counter[str]:
    return Counter(e["bundle"] for e in home.journal.entries() if e["event"] == "received" and not e.get("again"))


def journaled(home: Home) -> set[str]:
    """First arrivals and "again" lines: a kill between the import's rename and its journal line
    leaves a whole bundle in pending whose redelivery is journaled as "again"."""
    return {e["bundle"] for e in home.journal.entries() if e["event"] == "received"}


def pending(home: Home) -> set[str]:
    return {s.id for s in listing.list_bundles(home, ("pending",))}


def settle(bob: Home, url: str, address: str, sent: list[str]) -> str | None:
    gate.reconcile(bob)
    deadline = time.monotonic() + 300
    while not set(sent) <= pending(bob) & journaled(bob) and time.monotonic() < deadline:
        mailbox.run(mailbox.fetch(bob, url, address, wait=2.0))
    got = arrivals(bob)
    if pending(bob) != set(sent):
        return f"lost: {sorted(set(sent) - pending(bob))[:5]}"
    if journaled(bob) != set(sent):
        return f"not journaled: {sorted(set(sent) - journaled(bob))[:5]}"
    if max(got.values(), default=1) != 1:
        return f"doubled: {[k for k, v in got.items() if v > 1][:5]}"
    for s in listing.list_bundles(bob, ("pending",)):
        if not bundle_mod.check(s.path, expect_name=True).ok:
            return f"half-written or damaged: {s.id}"
    reconcile.STALE_SCRATCH_SECONDS = 0  # every fetch is over: any scratch left is a killed one's
    gate.reconcile(bob)
    left = [p.name for p in bob.staging.iterdir() if p.name.startswith("import-relay-")]
    return f"scratch left: {left}" if left else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    ap.add_argument("--max-mib", type=int, default=4)
    ap.add_argument("--check-every", type=int, default=100)
    ap.add_argument("--dir")
    a = ap.parse_args()
    print(f"soak_relay: seed {a.seed}, {a.rounds} rounds")
    rng = random.Random(a.seed)
    base = Path(tempfile.mkdtemp(prefix="gage-soak-relay-", dir=a.dir))
    srv = server.Server(store=base / "nats", name="soak").start()
    try:
        alice, bob = Home.init(base / "alice", "alice"), Home.init(base / "bob", "bob")
        (bob.root / "settings.toml").write_text("[limits]\npending_per_key = 1000000\npending_unconfirmed = 1000000\n"
                                                "pending_bytes_per_key = 1125899906842624\npending_unconfirmed_bytes = 1125899906842624\n")
        with bob.lock():
            key = sealing.ensure(bob.root, bob.identity.secret)
        address = sealing.mailbox_address(key.recipient)
        mailbox.run(mailbox.create(srv.url, address, ack_wait=1.0, max_bytes=8 << 30, max_msgs=1 << 30))
        config.record(bob, srv.url, None)
        assert ceremony.confirm(alice, "bob", bob.identity.key, " ".join(" ".join(p) for p in derive(bob.identity.key))).confirmed
        whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=srv.url, source="soak"))
        src = base / "src"
        src.mkdir()
        sent: list[str] = []
        killed = 0
        for r in range(a.rounds):
            for j in range(rng.randint(1, 3)):
                f = src / f"r{r}-{j}.bin"
                f.write_bytes(os.urandom(rng.choice([10, 5000, 300_000, rng.randint(1, a.max_mib) << 20])))
                m, _ = send.create(alice, [f], kind="share")
                deliver.deliver(alice, alice.state_dir("outbox") / m.id, m.id, "bob", relay=None, unconfirmed=False, creds=None)
                sent.append(m.id)
            proc = subprocess.Popen([sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "mailbox", "fetch"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, 1.2))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                killed += 1
            proc.wait(timeout=60)
            if (r + 1) % a.check_every == 0 or r + 1 == a.rounds:
                wrong = settle(bob, srv.url, address, sent)
                if wrong:
                    print(f"round {r + 1}: {wrong} (seed {a.seed})")
                    return 1
                print(f"round {r + 1}: {len(sent)} delivered, {killed} fetches killed, all in pending once")
        print(f"soak_relay: held for {a.rounds} rounds, {len(sent)} bundles, {killed} fetches killed")
        return 0
    finally:
        srv.stop(kill=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
