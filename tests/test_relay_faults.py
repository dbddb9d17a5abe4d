"""Faults on 127.0.0.1, bounded: a three-node JetStream cluster losing a node during 100
deliveries, and `kill -9` of `gage mailbox fetch` at random points (50 rounds here; more in
bench/soak.py). Nothing is lost, doubled or half-written."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import relayiso
from gagetest import pair
from relaytest import bundle

from gage import bundle as bundle_mod
from gage.carriers.relay import config, deliver, mailbox, relayconf, server
from gage.carriers.relay.creds import Credentials
from gage.carriers.relay.errors import RelayError
from gage.home import listing, sealing, whereabouts
from gage.home.layout import Home
from gage.inbox import gate, reconcile

KILL_ROUNDS = int(os.environ.get("GAGE_RELAY_KILL_ROUNDS", "50"))


def _arrivals(home: Home) -> Counter[str]:
    """First arrivals per bundle id in the journal (an "again" is not an arrival)."""
    return Counter(e["bundle"] for e in home.journal.entries() if e["event"] == "received" and not e.get("again"))


def _journaled(home: Home) -> set[str]:
    """Every bundle the journal says arrived, first time or again. A kill between the import's
    rename into pending and its journal line (a window of the one import every carrier shares)
    leaves a whole bundle in pending whose redelivery is journaled as "again"."""
    return {e["bundle"] for e in home.journal.entries() if e["event"] == "received"}


def _pending_ok(home: Home) -> set[str]:
    held = listing.list_bundles(home, ("pending",))
    for s in held:
        assert bundle_mod.check(s.path, expect_name=True).ok, s.id  # nothing half-written
    return {s.id for s in held}


@pytest.fixture
def cluster(make_home, tmp_path: Path) -> Iterator[tuple[list[server.Server], dict[str, Home], dict[str, str], dict[str, Credentials]]]:
    """Three nodes, each running exactly what `gage relay config --cluster` generates for it
    (spec/relay.md section 8): alice and bob in accounts of their own, the mailboxes in MAIL."""
    homes = {n: make_home(n) for n in ("alice", "bob")}
    addr = relayiso.addresses(homes)
    people_file, creds = relayiso.write_people(tmp_path / "people", addr)
    people = relayiso.generated(people_file)
    nodes = server.cluster(tmp_path / "cluster", 3, conf=lambda s: relayconf.render(people, relayiso.node_of(s)))
    try:
        yield nodes, homes, addr, creds
    finally:
        for n in nodes:
            n.stop(kill=True)


def _create_when_ready(url: str, address: str, **kw: object) -> None:
    """A new cluster elects its JetStream leader within seconds: try until it has."""
    deadline = time.monotonic() + 60
    while True:
        try:
            mailbox.run(mailbox.create(url, address, **kw))  # type: ignore[arg-type]
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_a_cluster_node_killed_during_100_deliveries_loses_none(cluster, tmp_path: Path) -> None:
    nodes, homes, addr, creds = cluster
    urls = ",".join(n.url for n in nodes)
    alice, bob = homes["alice"], homes["bob"]
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    address = addr["bob"]
    _create_when_ready(urls, address, replicas=3, ack_wait=5.0, creds=creds["operator"])  # the operator makes it
    config.record(bob, urls, creds["bob"])
    config.record(alice, urls, creds["alice"])
    pair(alice, "bob", bob)
    whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=urls, source="key file"))
    ids = [bundle(alice, tmp_path, name=f"b{i}.txt", data=f"bundle {i}".encode()) for i in range(100)]
    victim = random.randrange(3)
    for i, bid in enumerate(ids):
        if i == 40:
            nodes[victim].stop(kill=True)  # kill -9, mid-run
        deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    got: set[str] = set()
    deadline = time.monotonic() + 120
    while got != set(ids) and time.monotonic() < deadline:
        try:
            fetched = mailbox.run(mailbox.fetch(bob, urls, address, wait=2.0, creds=creds["bob"]))
        except RelayError:  # the cluster electing a new leader for the stream: as a person would, again
            time.sleep(1)
            continue
        got |= {o.id for o in fetched.opened if o.id}
    assert got == set(ids)
    assert _pending_ok(bob) == set(ids)
    assert set(_arrivals(bob).values()) == {1} and set(_arrivals(bob)) == set(ids)  # each exactly once


def test_kill_9_of_mailbox_fetch_at_random_points_loses_and_doubles_nothing(make_home, tmp_path: Path, monkeypatch) -> None:
    srv = server.Server(store=tmp_path / "relay", name="kill-relay").start()
    try:
        alice, bob = make_home("alice"), make_home("bob")
        with bob.lock():
            key = sealing.ensure(bob.root, bob.identity.secret)
        address = sealing.mailbox_address(key.recipient)
        mailbox.run(mailbox.create(srv.url, address, ack_wait=1.0))
        config.record(bob, srv.url, None)
        pair(alice, "bob", bob)
        whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=srv.url, source="key file"))
        rng = random.Random(os.environ.get("GAGE_TEST_SEED", "0"))
        sent: list[str] = []
        killed = 0
        for r in range(KILL_ROUNDS):
            for j in range(2):
                size = rng.choice([10, 5000, 300_000])
                bid = bundle(alice, tmp_path, name=f"r{r}-{j}.bin", data=os.urandom(size))
                deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
                sent.append(bid)
            proc = subprocess.Popen(
                [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "mailbox", "fetch"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            time.sleep(rng.uniform(0.0, 0.9))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                killed += 1
            proc.wait(timeout=30)
        # Whatever the kills left: the relay delivers again what was not acknowledged.
        gate.reconcile(bob)
        deadline = time.monotonic() + 120
        while not set(sent) <= _pending_ok(bob) & _journaled(bob) and time.monotonic() < deadline:
            mailbox.run(mailbox.fetch(bob, srv.url, address, wait=2.0))
        assert killed > 0  # the test did kill fetches mid-way
        assert _pending_ok(bob) == set(sent), "lost (or something extra)"  # each whole, each once: one folder per id
        assert _journaled(bob) == set(sent), "an arrival not journaled"
        assert max(_arrivals(bob).values()) == 1, "doubled"
        monkeypatch.setattr(reconcile, "STALE_SCRATCH_SECONDS", 0)  # every fetch is over: what is left is a killed one's
        gate.reconcile(bob)
        assert not [p for p in bob.staging.iterdir() if p.name.startswith("import-relay-")], "scratch left behind"
        assert not [e for e in bob.journal.entries() if e["event"] == "envelope-dropped"]
    finally:
        srv.stop(kill=True)
