"""Mailboxes on a real nats-server: deliver, fetch, ack after import, limits, drops, restarts."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import nats
import pytest
from gagetest import pair
from pyrage import x25519
from relaytest import bundle, open_mailbox, own_relay, relay  # noqa: F401  (fixtures)

from gage.carriers.relay import envelope, mailbox, seal
from gage.format.errors import Exit
from gage.home import listing, sealing, settings
from gage.home.layout import Home


@pytest.fixture
def two(make_home, relay):  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(alice, relay.url)
    open_mailbox(bob, relay.url)
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    _share_where(alice, bob)
    _share_where(bob, alice)
    return alice, bob


def _share_where(home: Home, other: Home, relay_url: str | None = None) -> None:
    """`home` learns `other`'s mailbox as from their key file (what `gage pair bob.key` keeps)."""
    from gage.home import whereabouts

    key = sealing.load(other.root, other.identity.key)
    assert key is not None
    whereabouts.remember(home, whereabouts.from_binding(key.binding, relay=relay_url, source="key file"))


def _address(home: Home) -> str:
    key = sealing.load(home.root, home.identity.key)
    assert key is not None
    return sealing.mailbox_address(key.recipient)


def _publish_raw(url: str, address: str, data: bytes, tmp: Path) -> None:
    p = tmp / f"raw-{len(list(tmp.glob('raw-*')))}.age"
    p.write_bytes(data)
    mailbox.run(mailbox.publish(url, address, p))


def test_deliver_then_fetch_lands_in_pending_and_says_so(two, gage, tmp_path: Path) -> None:
    alice, bob = two
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid[:12], "--to", "bob")
    assert r.code == 0, r.err
    assert r.out.strip() == f"{bid[:12]}: delivered to bob's mailbox; not yet fetched (where bob is: a claim, from key file)"
    assert listing.find(bob, bid) is None  # delivered is not fetched
    r = gage(bob, "mailbox", "fetch", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)["fetched"]
    assert [(g["id"], g["state"], g["new"], g["ok"]) for g in got] == [(bid, "pending", True, True)]
    assert listing.find(bob, bid).state == "pending"  # arrival is not consent
    arrival = [e for e in bob.journal.entries() if e.get("bundle") == bid]
    assert arrival[0]["event"] == "received" and arrival[0]["via"] == "relay"
    assert arrival[0]["transport"]["mailbox"] == _address(bob)
    # the mailbox is empty now: acknowledged after the import
    assert json.loads(gage(bob, "mailbox", "fetch", "--json").out)["fetched"] == []


def test_deliver_json_and_the_relay_sees_no_bundle_bytes(two, gage, tmp_path: Path, relay) -> None:  # noqa: F811
    alice, bob = two
    bid = bundle(alice, tmp_path, name="secret-name.txt", data=b"the numbers for Q3")
    r = gage(alice, "deliver", bid, "--to", "bob", "--json")
    obj = json.loads(r.out)
    assert obj["recipient"] == "confirmed contact" and obj["fetched"] is False and obj["mailbox"] == _address(bob)

    async def peek() -> tuple[bytes, dict[str, str]]:
        nc = await nats.connect(relay.url)
        js = nc.jetstream()
        msg = await js.get_last_msg(mailbox.stream_name(_address(bob)), mailbox.subject(_address(bob)))
        await nc.close()
        return msg.data or b"", dict(msg.headers or {})

    data, headers = asyncio.run(peek())
    manifest = (alice.state_dir("outbox") / bid / "manifest.json").read_bytes()
    assert data.startswith(b"age-encryption.org/v1\n")
    for leak in (b"the numbers", b"secret-name", bid.encode(), manifest[:40], alice.identity.key.hex().encode(), b"alice"):
        assert leak not in data and leak.decode() not in json.dumps(headers)
    assert set(headers) == {"Gage-Envelope", "Nats-Msg-Id", "Nats-Expected-Stream"}  # the mailbox, nothing more


def test_a_redelivered_envelope_is_already_there_never_a_double(two, tmp_path: Path, relay) -> None:  # noqa: F811
    """The crash between import and acknowledgement: the relay delivers again; it lands once."""
    alice, bob = two
    bid = bundle(alice, tmp_path)
    sealed = tmp_path / "e.age"
    key = sealing.load(bob.root, bob.identity.key)
    with open(sealed, "wb") as f:
        seal.seal_bundle(alice.state_dir("outbox") / bid, key.recipient, f)
    mailbox.run(mailbox.publish(relay.url, _address(bob), sealed))
    mailbox.run(mailbox.publish(relay.url, _address(bob), sealed))  # the same envelope twice (a retry)
    got = mailbox.run(mailbox.fetch(bob, relay.url, _address(bob)))
    assert [(o.id, o.new) for o in got.opened] == [(bid, True), (bid, False)]
    assert len([e for e in bob.journal.entries() if e.get("bundle") == bid and not e.get("again")]) == 1


def test_an_envelope_not_acknowledged_is_delivered_again(two, tmp_path: Path, relay, monkeypatch) -> None:  # noqa: F811
    alice, bob = two
    bid = bundle(alice, tmp_path)
    mailbox.run(mailbox.publish(relay.url, _address(bob), _sealed_to(bob, alice, bid, tmp_path)))

    async def no_ack(self, timeout: float = 1.0) -> None:
        raise nats.errors.TimeoutError

    monkeypatch.setattr(nats.aio.msg.Msg, "ack_sync", no_ack)
    with pytest.raises(Exception, match="did not take the acknowledgement"):
        mailbox.run(mailbox.fetch(bob, relay.url, _address(bob)))
    assert listing.find(bob, bid).state == "pending"
    monkeypatch.undo()
    # the consumer redelivers after ack_wait; make it immediate by asking for a nak-free refetch
    monkeypatch.setattr(mailbox, "ACK_WAIT", 1.0)
    _shorten_ack_wait(relay.url, _address(bob))
    got = mailbox.run(mailbox.fetch(bob, relay.url, _address(bob), wait=3.0))
    assert [(o.id, o.new, o.state) for o in got.opened] == [(bid, False, "pending")]


def _shorten_ack_wait(url: str, address: str) -> None:
    async def go() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        info = await js.consumer_info(mailbox.stream_name(address), mailbox.CONSUMER)
        cfg = info.config
        cfg.ack_wait = 1.0
        await js.add_consumer(mailbox.stream_name(address), cfg)
        await nc.close()

    asyncio.run(go())
    import time

    time.sleep(1.5)


def _sealed_to(receiver: Home, sender: Home, bid: str, tmp: Path) -> Path:
    key = sealing.load(receiver.root, receiver.identity.key)
    p = tmp / f"{bid[:8]}-{receiver.identity.name}.age"
    with open(p, "wb") as f:
        seal.seal_bundle(sender.state_dir("outbox") / bid, key.recipient, f)
    return p


def test_the_relay_restarted_between_deliver_and_fetch_loses_nothing(make_home, own_relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, own_relay.url)
    pair(alice, "bob", bob)
    _share_where(alice, bob)
    ids = [bundle(alice, tmp_path, name=f"n{i}.txt", data=f"n{i}".encode()) for i in range(5)]
    for bid in ids:
        assert gage(alice, "deliver", bid, "--to", "bob", "--relay", own_relay.url).code == 0
    own_relay.stop()
    assert gage(bob, "mailbox", "fetch").code == Exit.RELAY  # down: a relay error, nothing changed
    own_relay.start()
    r = gage(bob, "mailbox", "fetch", "--json")
    assert r.code == 0, r.err
    assert sorted(o["id"] for o in json.loads(r.out)["fetched"]) == sorted(ids)


def test_a_full_mailbox_refuses_the_newest_and_keeps_what_waits(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url, max_msgs=3)
    pair(alice, "bob", bob)
    _share_where(alice, bob, relay.url)
    ids = [bundle(alice, tmp_path, name=f"f{i}.txt", data=f"f{i}".encode()) for i in range(4)]
    for bid in ids[:3]:
        assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    r = gage(alice, "deliver", ids[3], "--to", "bob")
    assert r.code == Exit.RELAY and "mailbox is full" in r.err
    got = json.loads(gage(bob, "mailbox", "fetch", "--json").out)["fetched"]
    assert sorted(o["id"] for o in got) == sorted(ids[:3])


def test_envelopes_that_do_not_open_or_hold_no_bundle_are_journaled_once_and_dropped(two, tmp_path: Path, relay) -> None:  # noqa: F811
    alice, bob = two
    addr = _address(bob)
    key = sealing.load(bob.root, bob.identity.key)
    _publish_raw(relay.url, addr, b"not age at all", tmp_path)
    _publish_raw(relay.url, addr, seal.seal_bytes(b"x" * 100, str(x25519.Identity.generate().to_public())), tmp_path)
    _publish_raw(relay.url, addr, seal.seal_bytes(b"gage-envelope/v1\n garbage", key.recipient), tmp_path)
    _publish_raw(relay.url, addr, seal.seal_bytes(b"just some text", key.recipient), tmp_path)
    good = bundle(alice, tmp_path)
    mailbox.run(mailbox.publish(relay.url, addr, _sealed_to(bob, alice, good, tmp_path)))
    got = mailbox.run(mailbox.fetch(bob, relay.url, addr))
    assert [o.dropped is not None for o in got.opened] == [True, True, True, True, False]  # never stalls
    assert got.opened[-1].id == good and listing.find(bob, good).state == "pending"
    drops = [e for e in bob.journal.entries() if e["event"] == "envelope-dropped"]
    assert len(drops) == 4 and len({d["envelope"] for d in drops}) == 4
    assert {d["stage"] for d in drops} == {"malformed"}
    assert mailbox.run(mailbox.fetch(bob, relay.url, addr)).opened == []  # acknowledged: gone


def test_a_dropped_envelope_delivered_again_is_not_journaled_twice(two, tmp_path: Path, relay, monkeypatch) -> None:  # noqa: F811
    alice, bob = two
    addr = _address(bob)
    _publish_raw(relay.url, addr, b"not age at all", tmp_path)
    real = nats.aio.msg.Msg.ack_sync

    async def lost(self, timeout: float = 1.0) -> None:
        raise nats.errors.TimeoutError

    monkeypatch.setattr(nats.aio.msg.Msg, "ack_sync", lost)
    with pytest.raises(Exception, match="acknowledgement"):
        mailbox.run(mailbox.fetch(bob, relay.url, addr))
    monkeypatch.setattr(nats.aio.msg.Msg, "ack_sync", real)
    _shorten_ack_wait(relay.url, addr)
    got = mailbox.run(mailbox.fetch(bob, relay.url, addr, wait=3.0))
    assert len(got.opened) == 1 and got.opened[0].dropped
    assert len([e for e in bob.journal.entries() if e["event"] == "envelope-dropped"]) == 1


def test_a_strangers_flood_stops_at_the_pending_limits_and_a_contact_still_gets_through(make_home, relay, tmp_path: Path) -> None:  # noqa: F811
    bob, alice, mallory = make_home("bob"), make_home("alice"), make_home("mallory")
    addr = open_mailbox(bob, relay.url)
    settings.path_of(bob).write_text(settings.path_of(bob).read_text() + "\n[limits]\npending_per_key = 3\n")
    pair(bob, "alice", alice)
    flood = [bundle(mallory, tmp_path, name=f"m{i}.txt", data=f"m{i}".encode()) for i in range(6)]
    for bid in flood:
        mailbox.run(mailbox.publish(relay.url, addr, _sealed_to(bob, mallory, bid, tmp_path)))
    good = bundle(alice, tmp_path)
    mailbox.run(mailbox.publish(relay.url, addr, _sealed_to(bob, alice, good, tmp_path)))
    got = mailbox.run(mailbox.fetch(bob, relay.url, addr))
    landed = [o.id for o in got.opened if o.dropped is None]
    assert landed == flood[:3] + [good]
    dropped = [o for o in got.opened if o.dropped is not None]
    assert len(dropped) == 3 and all("pending_per_key" in o.dropped for o in dropped)
    assert listing.find(bob, good).state == "pending"


def test_a_big_envelope_travels_by_the_object_store(two, tmp_path: Path, relay, gage) -> None:  # noqa: F811
    alice, bob = two
    data = bytes(range(256)) * 8192  # 2 MiB: over one message
    bid = bundle(alice, tmp_path, name="big.bin", data=data)
    r = gage(alice, "deliver", bid, "--to", "bob", "--json")
    assert json.loads(r.out)["via"] == "object"
    got = json.loads(gage(bob, "mailbox", "fetch", "--json").out)["fetched"]
    assert [g["id"] for g in got] == [bid]
    assert (listing.find(bob, bid).path / "payload" / "src-alice-big.bin").read_bytes() == data


def test_deliver_seals_only_to_a_confirmed_contacts_bound_key(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    bid = bundle(alice, tmp_path)
    # bob's key is only a candidate (he sent alice a bundle once)
    from gage.trust import ceremony

    ceremony.add_candidate(alice, bob.identity.key, "bob", "test")
    _share_where(alice, bob, relay.url)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == Exit.REFUSED and "candidate, not a confirmed contact" in r.err
    r = gage(alice, "deliver", bid, "--to", "bob", "--unconfirmed")
    assert r.code == 0 and "sealed to a CLAIM" in r.out
    r = gage(alice, "deliver", bid, "--to", "bob", "--unconfirmed", "--json")
    assert json.loads(r.out)["recipient"] == "unconfirmed claim"
    assert gage(alice, "deliver", bid, "--to", "nobody").code == Exit.UNKNOWN_KEY


def test_fetch_without_a_mailbox_or_relay_is_a_clear_error(make_home, gage) -> None:
    home = make_home("carol")
    r = gage(home, "mailbox", "fetch")
    assert r.code == Exit.USAGE and "mailbox create" in r.err
    r = gage(home, "mailbox", "create", "--relay", "nats://127.0.0.1:1")
    assert r.code == Exit.RELAY and "cannot reach the relay" in r.err
    assert settings.load(home).relay_url is None  # nothing recorded for a relay that failed


def test_mailbox_create_records_the_relay_and_keeps_the_settings_file(make_home, relay, gage) -> None:  # noqa: F811
    home = make_home("dora")
    settings.path_of(home).write_text("# my limits\n[limits]\nmax_files = 50   # keep small\n")
    r = gage(home, "mailbox", "create", "--relay", relay.url, "--json")
    assert r.code == 0, r.err
    obj = json.loads(r.out)
    assert obj["address"] == _address(home) and obj["relay"] == relay.url
    text = settings.path_of(home).read_text()
    assert text.startswith("# my limits\n[limits]\nmax_files = 50   # keep small\n")
    assert settings.load(home).relay_url == relay.url and settings.load(home).limits.max_files == 50
    assert gage(home, "mailbox", "create", "--relay", relay.url).code == 0  # again: harmless
    assert settings.path_of(home).read_text().count("[relay]") == 1


def test_the_stream_reader_feeds_pyrage_in_bounded_pieces(make_home, tmp_path: Path) -> None:
    home = make_home("erin")
    bid = bundle(home, tmp_path, data=b"y" * (3 << 20))
    src = envelope.StreamReader(envelope.stream(home.state_dir("outbox") / bid))
    buf = bytearray(1 << 16)
    sizes = []
    while n := src.readinto(buf):
        sizes.append(n)
    assert sum(sizes) == len(envelope.to_bytes(home.state_dir("outbox") / bid)) and max(sizes) <= 1 << 16
    assert io.BytesIO  # the reader is a RawIOBase a decrypter can pull from


def test_a_contacts_envelope_lands_even_when_strangers_fill_pending(make_home, relay, tmp_path: Path) -> None:  # noqa: F811
    """A confirmed contact's signed bundle is never counted nor refused by the pending limits
    (spec/settings.md), also at the envelope's check before any payload is written."""
    bob, alice, mallory = make_home("bob"), make_home("alice"), make_home("mallory")
    addr = open_mailbox(bob, relay.url)
    settings.path_of(bob).write_text(settings.path_of(bob).read_text() + "\n[limits]\npending_unconfirmed = 2\n")
    pair(bob, "alice", alice)
    for i in range(2):
        bid = bundle(mallory, tmp_path, name=f"x{i}.txt", data=f"x{i}".encode())
        mailbox.run(mailbox.publish(relay.url, addr, _sealed_to(bob, mallory, bid, tmp_path)))
    extra = bundle(mallory, tmp_path, name="x9.txt", data=b"x9")
    mailbox.run(mailbox.publish(relay.url, addr, _sealed_to(bob, mallory, extra, tmp_path)))
    good = bundle(alice, tmp_path)
    mailbox.run(mailbox.publish(relay.url, addr, _sealed_to(bob, alice, good, tmp_path)))
    got = mailbox.run(mailbox.fetch(bob, relay.url, addr))
    assert [o.dropped is None for o in got.opened] == [True, True, False, True]
    assert "pending_unconfirmed" in got.opened[2].dropped
    assert listing.find(bob, good).state == "pending"
