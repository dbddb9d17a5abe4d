"""A mailbox fetch keeps the rows of what it landed (gage.inbox.listed.keep_landed), as an import does:
the first listing after it computes none of them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from relaytest import bundle, relay  # noqa: F401  (fixtures)
from test_land_batch_fetch_faults import _fetch
from test_relay_mailbox import two  # noqa: F401  (fixture)
from test_row_index import kept, recomputed, served_from_index

from gage.carriers.relay import deliver, landing
from gage.home.cache import checks
from gage.inbox import landmany


def test_the_first_listing_after_a_fetch_computes_no_row(two, relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setattr(checks, "RACY_NS", 2_000_000_000)
    monkeypatch.setattr(checks, "now_ns", time.time_ns)
    monkeypatch.setattr(landmany, "KEEP_ROWS_MIN", 1)
    alice, bob = two
    ids = [bundle(alice, tmp_path, name=f"n{i}.txt", data=os.urandom(200 + 300 * i)) for i in range(3)]
    for bid in ids:
        deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    got: list[landing.Opened] = []
    assert _fetch(bob, relay.url, got) is None
    assert sorted(o.id for o in got if o.new) == sorted(ids)
    assert kept(bob) == 3
    assert served_from_index(bob, monkeypatch) == recomputed(bob)
