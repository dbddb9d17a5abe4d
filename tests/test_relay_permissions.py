"""The per-user relay configuration of spec/relay.md section 8, on a real nats-server: each
person may deliver to any mailbox and fetch only their own, and write the directory under their
own handle only; big envelopes go through the mailboxes' object stores with publishes only, so
no person can read another's mailbox or bucket; and a permission the relay refuses is an error
that names it, at once (exit 15)."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gagetest import pair
from relaytest import bundle
from test_relay_objects import _Breaks

from gage.carriers.relay import config, deliver, directory, mailbox, objects, server
from gage.carriers.relay.errors import RelayError
from gage.format.errors import Exit
from gage.home import listing, sealing, whereabouts
from gage.home.layout import Home


def user_permissions(name: str, address: str, *, big: bool = True) -> list[str]:
    """What spec/relay.md section 8 lets one person publish to (and they subscribe to _INBOX.> only).
    `big`: also what envelopes over the inline limit need, through the mailboxes' object stores."""
    return (BIG_SEND + [p.replace("<A>", address) for p in BIG_OWN]) * big + [
        "gage.mb.*",
        f"$JS.API.CONSUMER.INFO.GAGE_MB_{address}.inbox",
        f"$JS.API.CONSUMER.MSG.NEXT.GAGE_MB_{address}.inbox",
        f"$JS.ACK.GAGE_MB_{address}.>",
        "$JS.API.STREAM.INFO.KV_GAGE_DIRECTORY",
        f"$KV.GAGE_DIRECTORY.{name}",
        "$JS.API.DIRECT.GET.KV_GAGE_DIRECTORY.>",
        "$JS.API.STREAM.MSG.GET.KV_GAGE_DIRECTORY",
    ]


# Envelopes over the inline limit (spec/relay.md section 4): the sender publishes the object's
# chunks and meta into the recipient's bucket, and reads nothing (gage writes the object itself:
# gage/carriers/relay/objects.py); the owner reads, then deletes it from their own.
# (A NATS wildcard is a whole token: OBJ_GAGE_OB_* would match only itself.)
BIG_SEND = [
    "$O.*.C.*",
    "$O.*.M.*",
]
BIG_OWN = [
    "$JS.API.STREAM.NAMES",
    "$JS.API.STREAM.INFO.OBJ_GAGE_OB_<A>",
    "$JS.API.STREAM.MSG.GET.OBJ_GAGE_OB_<A>",
    "$JS.API.CONSUMER.CREATE.OBJ_GAGE_OB_<A>",
    "$JS.API.CONSUMER.CREATE.OBJ_GAGE_OB_<A>.>",
    "$JS.API.CONSUMER.DELETE.OBJ_GAGE_OB_<A>.>",
    "$JS.API.STREAM.PURGE.OBJ_GAGE_OB_<A>",
    "$JS.FC.OBJ_GAGE_OB_<A>.>",
]


@pytest.fixture
def people(make_home, tmp_path: Path) -> Iterator[tuple[dict[str, Home], dict[str, str], server.Server]]:
    homes = {n: make_home(n) for n in ("alice", "bob", "carol")}  # carol may not use the object stores
    addr = {}
    for n, h in homes.items():
        with h.lock():
            addr[n] = sealing.mailbox_address(sealing.ensure(h.root, h.identity.secret).recipient)
    def entry(n: str) -> str:
        allow = ", ".join(f'"{s}"' for s in user_permissions(n, addr[n], big=n != "carol"))
        return f'{{ user: {n}, password: {n}-pw, permissions: {{ publish: {{ allow: [{allow}] }}, subscribe: {{ allow: ["_INBOX.>"] }} }} }}'

    users = ", ".join(entry(n) for n in homes)
    srv = server.Server(store=tmp_path / "nats", name="perm")
    srv.port = server.free_port()
    srv.store.mkdir(parents=True)
    conf = srv.store / "perm.conf"
    conf.write_text(srv.config() + f"accounts {{ GAGE {{ jetstream: enabled, users: [ {{ user: admin, password: admin-pw }}, {users} ] }} }}\n")
    log = open(srv.store / "server.log", "wb")  # noqa: SIM115  (the server's own account of what it refused)
    srv.proc = subprocess.Popen([server.binary(), "-c", str(conf)], stdout=log, stderr=log)
    log.close()
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
    # alice's own relay, with alice's user (settings); bob's claim names the relay, never alice's user
    config.record(alice, _as("alice", srv), None)
    whereabouts.remember(alice, whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=srv.url, source="key file"))
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


def _big(home: Home, tmp_path: Path) -> str:
    """A bundle whose envelope is over the inline limit, so it travels by the object store."""
    return bundle(home, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 200_000))


def test_a_big_envelope_goes_through_the_object_store_under_per_user_permissions(people, tmp_path: Path) -> None:
    homes, addr, srv = people
    alice, bob = homes["alice"], homes["bob"]
    for n in homes:
        mailbox.run(mailbox.create(_as("admin", srv), addr[n]))
    pair(alice, "bob", bob)
    # alice's own relay, with alice's user (settings); bob's claim names the relay, never alice's user
    config.record(alice, _as("alice", srv), None)
    whereabouts.remember(alice, whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=srv.url, source="key file"))
    bucket = mailbox.bucket_name(addr["bob"])

    async def broken_put() -> None:  # a put that dies half-way leaves chunks alice may not purge
        async with mailbox.connected(_as("alice", srv)) as nc:
            with pytest.raises(OSError):
                await objects.put(nc, bucket, "dead", _Breaks(2), timeout=10)  # type: ignore[arg-type]

    mailbox.run(broken_put())
    bid = _big(alice, tmp_path)
    done = deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    assert done.via == "object", (srv.store / "server.log").read_text()[-2000:]
    got = mailbox.run(mailbox.fetch(bob, _as("bob", srv), addr["bob"]))
    assert [o.id for o in got.opened] == [bid], (srv.store / "server.log").read_text()[-2000:]
    assert listing.find(bob, bid).state == "pending"

    async def left() -> int:
        async with mailbox.connected(_as("admin", srv)) as nc:
            obs = await nc.jetstream().object_store(mailbox.bucket_name(addr["bob"]))
            return len(await obs.list(ignore_deletes=True)) if await _has_objects(obs) else 0

    assert mailbox.run(left()) == 0  # bob deleted it from his bucket once it landed

    async def sweep(now: datetime.datetime | None) -> int:
        async with mailbox.connected(_as("bob", srv)) as nc:
            return await objects.sweep(nc.jetstream(), bucket, now=now)

    assert mailbox.run(sweep(None)) == 0  # the fetch swept, and left the young leftovers alone
    assert mailbox.run(sweep(datetime.datetime.now(datetime.UTC) + objects.ORPHAN_AGE * 2)) == 1  # bob may sweep his own
    assert "Permissions Violation" not in (srv.store / "server.log").read_text()


async def _has_objects(obs: object) -> bool:
    import nats.js.errors

    try:
        await obs.list(ignore_deletes=True)  # type: ignore[attr-defined]
    except nats.js.errors.NotFoundError:
        return False
    return True


def test_a_permission_the_relay_refuses_is_a_clear_error_naming_it(people, gage, tmp_path: Path) -> None:
    homes, addr, srv = people
    alice, bob, carol = homes["alice"], homes["bob"], homes["carol"]
    for n in homes:
        mailbox.run(mailbox.create(_as("admin", srv), addr[n]))
    mailbox.run(directory.put_raw(_as("admin", srv), "operator", b"{}"))
    pair(carol, "bob", bob)
    # carol's own relay, with carol's user (settings); bob's claim names the relay, never carol's user
    config.record(carol, _as("carol", srv), None)
    whereabouts.remember(carol, whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=srv.url, source="key file"))
    bid = _big(carol, tmp_path)
    started = time.monotonic()
    r = gage(carol, "deliver", bid, "--to", "bob")
    assert r.code == Exit.RELAY
    assert "the relay refused: this user has no permission for a mailbox's object store" in r.err, r.err
    assert "permissions violation for publish to" in r.err and "spec/relay.md section 8" in r.err
    assert time.monotonic() - started < 10  # at once, not after the request's 30 s timeout
    with pytest.raises(RelayError, match="no permission for reading that mailbox"):
        mailbox.run(mailbox.fetch(alice, _as("alice", srv), addr["bob"]))
    with pytest.raises(RelayError, match="no permission for writing the directory record for the handle 'bob'"):
        directory.publish(alice, "bob", _as("alice", srv), relay_for_record=None)
    assert [o.id for o in mailbox.run(mailbox.fetch(bob, _as("bob", srv), addr["bob"])).opened] == []  # nothing half-delivered


def test_a_person_cannot_read_another_persons_mailbox_or_bucket(people, tmp_path: Path) -> None:
    """What a sender of big envelopes used to be allowed (every stream's info and stored messages,
    a wildcard being a whole token) is refused now: alice, under the documented permissions, asks
    for bob's mailbox stream and bucket by every read the JetStream API has, and the relay refuses
    each, while the operator reads the same message (so there was something to read)."""
    homes, addr, srv = people
    alice, bob = homes["alice"], homes["bob"]
    for n in homes:
        mailbox.run(mailbox.create(_as("admin", srv), addr[n]))
    pair(alice, "bob", bob)
    # alice's own relay, with alice's user (settings); bob's claim names the relay, never alice's user
    config.record(alice, _as("alice", srv), None)
    whereabouts.remember(alice, whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=srv.url, source="key file"))
    bid = _big(alice, tmp_path)
    assert deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None).via == "object"
    mb, ob = f"GAGE_MB_{addr['bob']}", f"OBJ_GAGE_OB_{addr['bob']}"

    async def ask(who: str, subj: str, body: bytes) -> bytes:
        async with mailbox.connected(_as(who, srv)) as nc:
            return (await nc.request(subj, body, timeout=5)).data

    first = b'{"seq": 1}'
    assert b'"message"' in mailbox.run(ask("admin", f"$JS.API.STREAM.MSG.GET.{mb}", first))
    for subj, body in [
        (f"$JS.API.STREAM.MSG.GET.{mb}", first),
        (f"$JS.API.DIRECT.GET.{mb}", first),
        (f"$JS.API.DIRECT.GET.{mb}.gage.mb.{addr['bob']}", b""),
        (f"$JS.API.STREAM.INFO.{mb}", b""),
        (f"$JS.API.STREAM.MSG.GET.{ob}", first),
        (f"$JS.API.DIRECT.GET.{ob}", first),
        (f"$JS.API.STREAM.INFO.{ob}", b""),
        (f"$JS.API.CONSUMER.CREATE.{ob}", b"{}"),
        (f"$JS.API.STREAM.PURGE.{ob}", b"{}"),
    ]:
        with pytest.raises(RelayError, match=f"the relay refused: .*permissions violation for publish to \"?{re.escape(subj.lower())}"):
            mailbox.run(ask("alice", subj, body))
    # And bob still fetches what alice sent: nothing she tried touched it.
    assert [o.id for o in mailbox.run(mailbox.fetch(bob, _as("bob", srv), addr["bob"])).opened] == [bid]
