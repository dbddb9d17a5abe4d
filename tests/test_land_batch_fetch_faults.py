"""A mailbox fetch under a fault at each step of its batch, on a real nats-server.

A fetch lands its envelopes in batches and acknowledges each only once its batch is durable.
A full disk or Ctrl-C at any write, fsync or rename of a batch must leave each envelope either
landed, journaled `received` and acknowledged, or not landed and not acknowledged: the next
fetch lands it, and an envelope the fault stopped between its journal line and its
acknowledgement comes again as "already there", never landed twice.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from relaytest import bundle, relay  # noqa: F401  (fixtures)
from test_land_batch_faults import Faults
from test_relay_mailbox import _address, two  # noqa: F401  (fixture)

from gage.carriers.relay import deliver, landing, mailbox
from gage.format.errors import GageError
from gage.home.journal.verify import verify as verify_journal


def _received(home: Any) -> list[str]:
    return [e["bundle"] for e in home.journal.entries() if e.get("event") == "received" and not e.get("again")]


def _fetch(bob: Any, url: str, got: list[landing.Opened]) -> BaseException | None:
    try:
        mailbox.run(mailbox.fetch(bob, url, _address(bob), wait=0.5, on_opened=got.append))
    except (GageError, KeyboardInterrupt) as exc:
        return exc
    return None


@pytest.mark.parametrize("exc", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()], ids=["ENOSPC", "SIGINT"])
def test_a_fault_at_each_step_of_a_fetch_batch_acknowledges_only_what_landed(
    two, relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException  # noqa: F811
) -> None:
    alice, bob = two
    faults = Faults(monkeypatch)

    def send(n: int, tag: str) -> list[str]:
        faults.arm(None, None)
        ids = [bundle(alice, tmp_path, name=f"{tag}-{i}.txt", data=os.urandom(200 + 300 * i)) for i in range(n)]
        for bid in ids:
            deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
        faults.arm(None, None)
        return ids

    ids = send(3, "count")
    got: list[landing.Opened] = []
    assert _fetch(bob, relay.url, got) is None
    points = faults.calls
    assert sorted(o.id for o in got if o.new) == sorted(ids)
    assert points > 15
    step = 1 if points < 60 else 2
    for at in range(1, points + 1, step):
        ids = send(3, f"at{at}")
        first: list[landing.Opened] = []
        faults.arm(at, exc)
        _fetch(bob, relay.url, first)
        faults.arm(None, None)
        received = _received(bob)
        assert len(received) == len(set(received)), "an envelope landed twice"
        pending = set(os.listdir(bob.state_dir("pending")))
        assert set(received) == pending, "the journal and pending disagree"
        for o in first:
            assert o.id in pending and o.id in received  # reported (so acknowledged) only once landed
        second: list[landing.Opened] = []
        assert _fetch(bob, relay.url, second) is None
        acked = {o.id for o in first}
        for o in second:
            assert o.id not in acked, "an acknowledged envelope came again"
            if not o.new:
                assert o.id in received, "already there, but it never landed"
        assert {i for i in ids if i in _received(bob)} == set(ids), "an envelope was lost"
    assert verify_journal(bob.journal).ok


def test_a_fetch_of_many_ends_with_one_summary_line_and_json_gives_the_ids(two, relay, tmp_path: Path, gage) -> None:  # noqa: F811
    alice, bob = two
    ids = [bundle(alice, tmp_path, name=f"sum-{i}.txt", data=os.urandom(300)) for i in range(3)]
    for bid in ids[:2]:
        deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    r = gage(bob, "mailbox", "fetch")
    assert r.code == 0, r.err
    last = r.err.strip().splitlines()[-1]
    assert last.startswith("fetched 2 envelopes (") and last.endswith("2 landed in pending, 0 already there, 0 dropped"), last
    deliver.deliver(alice, alice.state_dir("outbox") / ids[2], ids[2], "bob", relay=None, unconfirmed=False, creds=None)
    j = gage(bob, "mailbox", "fetch", "--json")
    assert j.code == 0, j.err
    assert [o["id"] for o in __import__("json").loads(j.out)["fetched"]] == [ids[2]]
