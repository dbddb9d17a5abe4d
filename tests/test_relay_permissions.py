"""spec/relay.md section 8 on a real nats-server running the generated configuration: each person
delivers to any mailbox and fetches only their own, writes the directory under their own handle
only, and a refusal is an error that names it, at once (exit 15). Big envelopes go through the
recipient's bucket with publishes only; the owner reads it with gage's own object reader."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gagetest import pair
from relayiso import Shared, running
from relaytest import bundle

from gage.carriers.relay import deliver, directory, mailbox
from gage.carriers.relay.errors import RelayError
from gage.format.errors import Exit
from gage.home import listing, sealing, whereabouts
from gage.home.layout import Home


@pytest.fixture
def shared(make_home, tmp_path: Path) -> Iterator[Shared]:
    with running(make_home, tmp_path) as s:
        yield s


def _route(shared: Shared, frm: str, to: str) -> None:
    a, b = shared.homes[frm], shared.homes[to]
    pair(a, to, b)
    whereabouts.remember(a, whereabouts.from_binding(sealing.load(b.root, b.identity.key).binding, relay=shared.url, source="key file"))


def test_each_person_delivers_anywhere_fetches_only_their_own_and_writes_only_their_handle(shared: Shared, tmp_path: Path) -> None:
    alice, bob = shared.homes["alice"], shared.homes["bob"]
    _route(shared, "alice", "bob")
    bid = bundle(alice, tmp_path)
    deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=shared.creds["alice"])
    with pytest.raises(RelayError):
        mailbox.run(mailbox.fetch(alice, shared.url, shared.addr["bob"], creds=shared.creds["alice"]))  # alice may not read bob's
    assert [o.id for o in mailbox.run(mailbox.fetch(bob, shared.url, shared.addr["bob"], creds=shared.creds["bob"])).opened] == [bid]
    assert listing.find(bob, bid).state == "pending"
    directory.publish(bob, "bob", shared.url, relay_for_record=None, creds=shared.creds["bob"])
    with pytest.raises(RelayError, match="may not|does not let this user write the directory record for the handle 'bob'"):
        directory.publish(alice, "bob", shared.url, relay_for_record=None, creds=shared.creds["alice"])  # nor write bob's handle
    assert directory.lookup(alice, "bob", shared.url, creds=shared.creds["alice"]).signing_key == bob.identity.key


def _big(home: Home, tmp_path: Path) -> str:
    """A bundle whose envelope is over the inline limit, so it travels by the object store."""
    return bundle(home, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 200_000))


def test_a_big_envelope_goes_through_the_recipients_bucket_across_accounts(shared: Shared, tmp_path: Path) -> None:
    alice, bob = shared.homes["alice"], shared.homes["bob"]
    _route(shared, "alice", "bob")
    bid = _big(alice, tmp_path)
    done = deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=shared.creds["alice"])
    assert done.via == "object"
    got = mailbox.run(mailbox.fetch(bob, shared.url, shared.addr["bob"], creds=shared.creds["bob"]))
    assert [o.id for o in got.opened] == [bid]
    assert listing.find(bob, bid).state == "pending"


def test_a_refusal_is_a_clear_error_naming_it_at_once(shared: Shared, gage, tmp_path: Path) -> None:
    alice = shared.homes["alice"]
    from gage.carriers.relay import config

    config.record(alice, shared.url, shared.creds["alice"])
    started = time.monotonic()
    r = gage(alice, "directory", "publish", "--handle", "bob")
    assert r.code == Exit.RELAY
    assert "does not let this user write the directory record for the handle 'bob'" in r.err and "spec/relay.md section 8" in r.err
    assert time.monotonic() - started < 10  # at once, not after a request's timeout
    r = gage(alice, "directory", "publish", "--handle", "alice")
    assert r.code == 0, r.err
