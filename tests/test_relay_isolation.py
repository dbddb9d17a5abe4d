"""A relay many strangers share (issue 26), on a real nats-server running exactly the configuration
`gage relay config` generates: alice, bob, mallory and carol each deliver to anyone and fetch only
their own; the mailboxes, buckets and directory refuse what a fellow user tries against another."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gagetest import pair
from nats.js import api
from relayiso import Shared, running
from relaytest import bundle

from gage.carriers.relay import deliver, mailbox, streams
from gage.carriers.relay.errors import RelayError
from gage.home import listing, sealing, whereabouts


@pytest.fixture
def shared(make_home, tmp_path: Path) -> Iterator[Shared]:
    with running(make_home, tmp_path) as s:
        yield s


def send(shared: Shared, frm: str, to: str, tmp: Path, data: bytes = b"hello") -> str:
    """`frm` delivers a small bundle into `to`'s mailbox with their own credential."""
    a, b = shared.homes[frm], shared.homes[to]
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


def waiting(shared: Shared, stream: str) -> int:
    """What the operator sees: how many messages a stream in MAIL holds."""
    async def go() -> int:
        async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
            return int((await nc.jetstream().stream_info(stream)).state.messages)

    return int(mailbox.run(go()))


def test_each_person_delivers_to_another_and_fetches_only_their_own(shared: Shared, tmp_path: Path) -> None:
    paired(shared, ("alice", "bob"), ("carol", "bob"))
    one = send(shared, "alice", "bob", tmp_path)
    two = send(shared, "carol", "bob", tmp_path)  # carol logs in with a user and a password file
    assert sorted(fetch(shared, "bob")) == sorted([one, two])
    assert listing.find(shared.homes["bob"], one).state == "pending"
    with pytest.raises(RelayError):
        fetch(shared, "mallory", shared.addr["bob"])


def test_an_acknowledged_envelope_leaves_the_mailbox_so_it_never_counts_against_its_limit(shared: Shared, tmp_path: Path) -> None:
    """A limits-retention mailbox kept what was taken until it was full ("mailbox is full" with nothing
    waiting): the mailbox is a work queue now. bob's mailbox holds 3; 5 deliveries, fetched as they
    come, all land, and the relay holds none of them after."""
    mb = mailbox.stream_name(shared.addr["bob"])
    box = mailbox.run(mailbox.create(shared.url, shared.addr["bob"], creds=shared.creds["operator"], max_msgs=3))
    assert box.max_msgs == 3 and not box.kept
    paired(shared, ("alice", "bob"))
    landed = []
    for i in range(5):
        bid = send(shared, "alice", "bob", tmp_path, data=b"x" * (i + 1))
        landed += fetch(shared, "bob")
        assert bid in landed
        assert waiting(shared, mb) == 0
    assert len(landed) == 5


def test_mailbox_create_again_updates_the_limits_and_names_what_it_cannot_change(shared: Shared) -> None:
    """Made again with other limits: updated, where before it failed on the stream's config. A
    mailbox made the old way (limits retention) is kept as it is, and the answer says so and why."""
    addr = shared.addr["bob"]
    box = mailbox.run(mailbox.create(shared.url, addr, creds=shared.creds["operator"], max_msgs=7, max_bytes=1 << 20, ack_wait=5.0))
    assert (box.max_msgs, box.max_bytes, box.kept) == (7, 1 << 20, ())

    async def cfg() -> tuple[int, int, float, int]:
        async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
            js = nc.jetstream()
            si = await js.stream_info(mailbox.stream_name(addr))
            ci = await js.consumer_info(mailbox.stream_name(addr), mailbox.CONSUMER)
            return si.config.max_msgs, si.config.max_bytes, ci.config.ack_wait, ci.config.max_deliver

    assert mailbox.run(cfg()) == (7, 1 << 20, 5.0, streams.MAX_DELIVER)

    async def old_style() -> None:  # what `mailbox create` made before: limits retention, rollups allowed
        async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
            js = nc.jetstream()
            name = mailbox.stream_name("mb" + "0" * 40)
            await js.add_stream(api.StreamConfig(name=name, subjects=["gage.mb.mb" + "0" * 40], retention=api.RetentionPolicy.LIMITS))

    mailbox.run(old_style())
    again = mailbox.run(mailbox.create(shared.url, "mb" + "0" * 40, creds=shared.creds["operator"]))
    assert any("retention stays limits" in k and "counting against" in k for k in again.kept), again.kept


def test_a_person_is_told_the_operator_made_their_mailbox_and_may_not_make_one(shared: Shared, make_home) -> None:
    """On the shared relay a person has no JetStream API: `mailbox create` with their own credential
    finds the mailbox the operator made and says so; one the operator did not make is a clear refusal."""
    box = mailbox.run(mailbox.create(shared.url, shared.addr["bob"], creds=shared.creds["bob"], max_msgs=5))
    assert box.by_operator and box.max_msgs == mailbox.DEFAULT_MAX_MSGS
    with pytest.raises(RelayError, match="give the relay's operator your mailbox address"):
        mailbox.run(mailbox.create(shared.url, "mb" + "1" * 40, creds=shared.creds["mallory"]))


def test_a_raw_api_request_finds_the_relays_api_where_the_account_reaches_it(shared: Shared) -> None:
    """A person's account reaches MAIL's JetStream API under the prefix JS.MAIL.API (the server answers
    `$JS.API.>` itself in an account without JetStream); the operator's, and an open relay's, at `$JS.API`."""
    from gage.carriers.relay.connection import api_subject

    async def subjects(who: str) -> tuple[str, str]:
        async with mailbox.connected(shared.url, shared.creds[who]) as nc:
            stream = mailbox.stream_name(shared.addr["bob"])
            info = await nc.request(api_subject(nc, f"STREAM.INFO.{stream}"), b"", timeout=5)
            assert b'"error"' not in info.data, info.data
            return api_subject(nc, "X"), nc.jetstream()._prefix

    assert mailbox.run(subjects("bob")) == ("JS.MAIL.API.X", "JS.MAIL.API")
    assert mailbox.run(subjects("operator")) == ("$JS.API.X", "$JS.API")


def test_buckets_made_the_old_way_lose_their_rollups_when_the_mailbox_is_made_again(make_home, tmp_path: Path) -> None:
    """A relay set up before this (nats-py's bucket and key-value defaults: rollups allowed) is brought to
    the new config by `mailbox create` again: rollups off, deletes denied, and what stays is named."""
    from gage.carriers.relay import server

    srv = server.Server(store=tmp_path / "old", name="old").start()
    addr = "mb" + "2" * 40
    try:
        async def old_setup() -> None:
            async with mailbox.connected(srv.url) as nc:
                js = nc.jetstream()
                await js.create_object_store(mailbox.bucket_name(addr))
                await js.create_key_value(api.KeyValueConfig(bucket="GAGE_DIRECTORY", history=16))

        mailbox.run(old_setup())
        box = mailbox.run(mailbox.create(srv.url, addr, directory=True))

        async def configs() -> list[api.StreamConfig]:
            async with mailbox.connected(srv.url) as nc:
                js = nc.jetstream()
                names = [mailbox.stream_name(addr), f"OBJ_{mailbox.bucket_name(addr)}", "KV_GAGE_DIRECTORY"]
                return [(await js.stream_info(n)).config for n in names]

        for c in mailbox.run(configs()):
            assert not c.allow_rollup_hdrs and c.deny_delete, (c.name, box.kept)
        assert all("rollup" not in k for k in box.kept), box.kept
    finally:
        srv.stop(kill=True)
