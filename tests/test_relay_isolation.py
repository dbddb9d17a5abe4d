"""A relay many strangers share (issue 26), on a real nats-server running exactly the configuration
`gage relay config` generates: alice, bob, mallory and carol each deliver to anyone and fetch only
their own; the mailboxes, buckets and directory refuse what a fellow user tries against another."""

from __future__ import annotations

from pathlib import Path

import pytest
from gagetest import pair
from relayiso import Shared, shared  # noqa: F401  (the fixture)
from relaytest import bundle

from gage.carriers.relay import deliver, directory, mailbox
from gage.carriers.relay.errors import RelayError
from gage.home import listing, sealing, whereabouts
from gage.home.layout import Home


def send(shared: Shared, frm: str, to: str, tmp: Path, data: bytes = b"hello") -> str:
    """`frm` delivers a small bundle into `to`'s mailbox with their own credential."""
    a, b = shared.homes[frm], shared.homes[to]
    if not any(c.name == to for c in a.contacts.confirmed()) if hasattr(a, "contacts") else True:
        pass
    bid = bundle(a, tmp, name=f"to-{to}-{len(data)}.txt", data=data)
    where = whereabouts.from_binding(sealing.load(b.root, b.identity.key).binding, relay=shared.url, source="key file")
    whereabouts.remember(a, where)
    deliver.deliver(a, a.state_dir("outbox") / bid, bid, to, relay=shared.url, unconfirmed=False, creds=shared.creds[frm])
    return bid


def fetch(shared: Shared, who: str, address: str | None = None) -> list[str]:
    home = shared.homes[who]
    got = mailbox.run(mailbox.fetch(home, shared.url, address or shared.addr[who], creds=shared.creds[who]))
    return [o.id for o in got.opened]


def paired(shared: Shared, *names: tuple[str, str]) -> None:
    for a, b in names:
        pair(shared.homes[a], b, shared.homes[b])


def test_each_person_delivers_to_another_and_fetches_only_their_own(shared: Shared, tmp_path: Path) -> None:
    paired(shared, ("alice", "bob"), ("carol", "bob"))
    one = send(shared, "alice", "bob", tmp_path)
    two = send(shared, "carol", "bob", tmp_path)  # carol logs in with a user and a password file
    assert sorted(fetch(shared, "bob")) == sorted([one, two])
    assert listing.find(shared.homes["bob"], one).state == "pending"
    with pytest.raises(RelayError):
        fetch(shared, "mallory", shared.addr["bob"])
