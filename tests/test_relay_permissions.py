"""The per-user relay configuration of spec/relay.md section 8, on a real nats-server: each
person may deliver to any mailbox and fetch only their own, and write the directory under their
own handle only. (Small envelopes and the directory; big envelopes through the object store
need the bucket permissions too, which this test does not yet grant or check.)"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from gagetest import pair
from relaytest import bundle

from gage.carriers.relay import deliver, directory, mailbox, server
from gage.carriers.relay.errors import RelayError
from gage.home import listing, sealing, whereabouts
from gage.home.layout import Home


def user_permissions(name: str, address: str) -> list[str]:
    """What spec/relay.md section 8 lets one person publish to (and they subscribe to _INBOX.> only)."""
    return [
        "gage.mb.*",
        f"$JS.API.CONSUMER.INFO.GAGE_MB_{address}.inbox",
        f"$JS.API.CONSUMER.MSG.NEXT.GAGE_MB_{address}.inbox",
        f"$JS.ACK.GAGE_MB_{address}.>",
        "$JS.API.STREAM.INFO.KV_GAGE_DIRECTORY",
        f"$KV.GAGE_DIRECTORY.{name}",
        "$JS.API.DIRECT.GET.KV_GAGE_DIRECTORY.>",
        "$JS.API.STREAM.MSG.GET.KV_GAGE_DIRECTORY",
    ]


@pytest.fixture
def people(make_home, tmp_path: Path) -> Iterator[tuple[dict[str, Home], dict[str, str], server.Server]]:
    homes = {n: make_home(n) for n in ("alice", "bob")}
    addr = {}
    for n, h in homes.items():
        with h.lock():
            addr[n] = sealing.mailbox_address(sealing.ensure(h.root, h.identity.secret).recipient)
    def entry(n: str) -> str:
        allow = ", ".join(f'"{s}"' for s in user_permissions(n, addr[n]))
        return f'{{ user: {n}, password: {n}-pw, permissions: {{ publish: {{ allow: [{allow}] }}, subscribe: {{ allow: ["_INBOX.>"] }} }} }}'

    users = ", ".join(entry(n) for n in homes)
    srv = server.Server(store=tmp_path / "nats", name="perm")
    srv.port = server.free_port()
    srv.store.mkdir(parents=True)
    conf = srv.store / "perm.conf"
    conf.write_text(srv.config() + f"accounts {{ GAGE {{ jetstream: enabled, users: [ {{ user: admin, password: admin-pw }}, {users} ] }} }}\n")
    srv.proc = subprocess.Popen([server.binary(), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        srv.wait_ready(20)
        yield homes, addr, srv
    finally:
        srv.stop(kill=True)


def _as(who: str, srv: server.Server) -> str:
    return f"nats://{who}:{who}-pw@127.0.0.1:{srv.port}"


def test_each_person_delivers_anywhere_fetches_only_their_own_and_writes_only_their_handle(people, tmp_path: Path) -> None:
    homes, addr, srv = people
    alice, bob = homes["alice"], homes["bob"]
    for n in homes:  # the relay's operator makes the mailboxes and the directory
        mailbox.run(mailbox.create(_as("admin", srv), addr[n]))
    mailbox.run(directory.put_raw(_as("admin", srv), "operator", b"{}"))
    pair(alice, "bob", bob)
    whereabouts.remember(alice, whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=_as("alice", srv), source="key file"))
    bid = bundle(alice, tmp_path)
    deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    with pytest.raises(RelayError):
        mailbox.run(mailbox.fetch(alice, _as("alice", srv), addr["bob"]))  # alice may not read bob's mailbox
    assert [o.id for o in mailbox.run(mailbox.fetch(bob, _as("bob", srv), addr["bob"])).opened] == [bid]
    assert listing.find(bob, bid).state == "pending"
    directory.publish(bob, "bob", _as("bob", srv), relay_for_record=None)
    with pytest.raises(RelayError):
        directory.publish(alice, "bob", _as("alice", srv), relay_for_record=None)  # nor write bob's handle
    assert directory.lookup(alice, "bob", _as("alice", srv)).signing_key == bob.identity.key
