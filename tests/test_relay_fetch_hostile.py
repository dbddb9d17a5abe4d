"""Nothing is lost, nothing stalls (issue 26), on a real nats-server: gage's own object reader.

Anyone may publish chunks and metas into a mailbox's bucket. Every malformed, missing, racing or
oversized meta or chunk is one journaled drop with a bounded line, and the envelope acknowledged;
never a traceback, never a wait without a deadline. A relay that dies mid-read is a relay failure
with nothing journaled and nothing acknowledged. The writer publishes no `Nats-Rollup`.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.js import api
from relaytest import bundle, own_relay, relay  # noqa: F401  (fixtures)
from test_fuzz_common import fuzz_settings
from test_relay_mailbox import _address, two  # noqa: F401  (fixture)

from gage.carriers.relay import mailbox, objects, objread, taking
from gage.carriers.relay.errors import RelayError
from gage.format.errors import Exit
from gage.home import listing, sealing
from gage.home.layout import Home

C = objects.CHUNK


def _drops(home: Home) -> list[dict[str, Any]]:
    return [e for e in home.journal.entries() if e["event"] == "envelope-dropped"]


def _journal_lines(home: Home) -> list[bytes]:
    return [ln for ln in home.journal.path.read_bytes().splitlines() if b'"envelope-dropped"' in ln]


async def _raw(url: str, work: Any) -> Any:
    nc = await nats.connect(url)
    try:
        return await work(nc, nc.jetstream())
    finally:
        await nc.close()


def _meta(bucket: str, name: str, nuid: str, data: bytes, **over: Any) -> dict[str, Any]:
    m = objects.meta(bucket, name, nuid, len(data), -(-len(data) // C), hashlib.sha256(data).digest(), C)
    m.update(over)
    return {k: v for k, v in m.items() if v is not ...}


def _named(name: str, data: bytes) -> objread.Named:
    """What a mailbox message of this gage names: the object, its size and its SHA-256."""
    return objread.Named(name, len(data), hashlib.sha256(data).digest())


def _name(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()[:32]


def _hostile(bucket: str) -> list[tuple[str, bytes | None, list[bytes]]]:
    """(object name, meta bytes or None for no meta, chunks stored under the meta's nuid)."""
    data = os.urandom(C + 100)
    parts = [data[:C], data[C:]]
    out: list[tuple[str, bytes | None, list[bytes]]] = []

    def add(meta: dict[str, Any] | bytes | None, chunks: list[bytes] = parts) -> None:
        name = _name(len(out))
        if isinstance(meta, dict):
            meta = json.dumps({**meta, "name": name}).encode()
        out.append((name, meta, chunks))

    add(_meta(bucket, "", "N0", data, digest="SHA-256=abc"))  # a digest of the wrong form
    add(_meta(bucket, "", "N1", data, digest=...))  # no digest
    add(_meta(bucket, "", "N2", data, digest=objects.digest_text(bytes(32))))  # the wrong digest
    add(_meta(bucket, "", "N3", data, size=len(data) + 5))  # a size its chunks do not add up to
    add(_meta(bucket, "", "N4", data, size=len(data) - 5))  # and smaller
    add(_meta(bucket, "", "N5", data), chunks=parts[:1])  # a chunk missing
    add(_meta(bucket, "", "N6", data), chunks=[*parts, b"more"])  # more chunks than said
    add(_meta(bucket, "", "N7", data, size=1 << 40, chunks=(1 << 40) // C))  # oversized
    add(b"not json")
    add(_meta(bucket, "", "N9", data, options={"link": {"bucket": "ELSEWHERE", "name": "x"}}))  # a link
    add(_meta(bucket, "", "N10", data, deleted=True))
    add(None)  # no meta at all
    add(_meta(bucket, "", "a.b", data))  # a nuid that is no single token
    add(_meta(bucket, "", "N13", data, description="x" * 20_000))  # a meta far over its bound
    add(_meta(bucket, "", "N14", data, chunks=40))  # more chunks than its size can fill
    return out


def test_every_hostile_object_is_one_bounded_drop_acknowledged_and_the_next_envelope_lands(two, tmp_path, relay, gage) -> None:  # noqa: F811
    alice, bob = two
    addr = _address(bob)
    bucket = mailbox.bucket_name(addr)
    cases = _hostile(bucket)
    huge = "h" * 60_000  # a Gage-Object header of 60 KB

    async def hostile(nc: Any, js: Any) -> None:
        for i, (name, meta, chunks) in enumerate(cases):
            if meta is not None:
                nuid = (json.loads(meta).get("nuid") if meta.startswith(b"{") else None) or f"N{i}"
                for c in chunks:
                    await js.publish(objects.chunk_subject(bucket, nuid if "." not in nuid else "x"), c)
                await js.publish(objects.meta_subject(bucket, name), meta)
            await js.publish(mailbox.subject(addr), b"", headers={mailbox.HEADER: "1", mailbox.OBJECT_HEADER: name})
        await js.publish(mailbox.subject(addr), b"", headers={mailbox.HEADER: "1", mailbox.OBJECT_HEADER: huge})

    mailbox.run(_raw(relay.url, hostile))
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 1000))
    assert json.loads(gage(alice, "deliver", bid, "--to", "bob", "--json").out)["via"] == "object"
    r = gage(bob, "mailbox", "fetch", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)["fetched"]
    assert [g["dropped"] is not None for g in got] == [True] * (len(cases) + 1) + [False], got
    assert got[-1]["id"] == bid and listing.find(bob, bid).state == "pending"
    drops = _drops(bob)
    assert len(drops) == len(cases) + 1  # one line each
    assert [d["envelope"] for d in drops[:-1]] == [f"object:{name}" for name, _m, _c in cases]
    assert drops[-1]["envelope"] == "object-sha256:" + hashlib.sha256(huge.encode()).hexdigest()
    assert all(d["stage"] == "malformed" for d in drops)
    lines = _journal_lines(bob)
    assert len(lines) == len(drops) and max(len(ln) for ln in lines) < 1200  # bounded (spec/relay.md section 6)
    reasons = [d["message"] for d in drops]
    assert "not SHA-256=" in reasons[0] and "no digest" in reasons[1] and "do not match the SHA-256" in reasons[2]
    assert "missing" in reasons[5] and "more chunks" in reasons[6] and "over the" in reasons[7]
    # All acknowledged: nothing comes again, and the bucket keeps nothing of what was taken.
    assert json.loads(gage(bob, "mailbox", "fetch", "--json").out)["fetched"] == []

    async def metas(nc: Any, js: Any) -> set[str]:
        info = await js.stream_info(objects.stream_of(bucket), subjects_filter=f"$O.{bucket}.M.>")
        return set(info.state.subjects or {})

    left = mailbox.run(_raw(relay.url, metas))
    assert not left & {objects.meta_subject(bucket, n) for n, _m, _c in cases}


def test_the_object_is_read_from_the_meta_that_was_checked_a_swap_changes_nothing(two, tmp_path, relay, monkeypatch) -> None:  # noqa: F811
    """The meta replaced by a bad one between its check and the chunk reads: what was checked is read."""
    alice, bob = two
    addr = _address(bob)
    real_get = objread._get
    swapped: list[int] = []

    async def get(nc: Any, stream: str, req: dict[str, Any], timeout: float) -> Any:
        got = await real_get(nc, stream, req, timeout)
        if ".M." in req.get("next_by_subj", "") and not swapped:
            bad = json.loads(got.data)
            bad["digest"], bad["nuid"] = "SHA-256=abc", "elsewhere"
            await nc.jetstream().publish(req["next_by_subj"], json.dumps(bad).encode())
            swapped.append(1)
        return got

    monkeypatch.setattr(objread, "_get", get)
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(2 * mailbox.INLINE_MAX))
    from gage.carriers.relay import deliver

    deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    got = mailbox.run(asyncio.wait_for(mailbox.fetch(bob, relay.url, addr), 60))
    assert swapped and [(o.id, o.dropped) for o in got.opened] == [(bid, None)]
    assert not _drops(bob)

    async def held(nc: Any, js: Any) -> int:
        return int((await js.stream_info(objects.stream_of(mailbox.bucket_name(addr)))).state.messages)

    assert mailbox.run(_raw(relay.url, held)) == 0  # landed, then its chunks and every meta under its name purged


def test_a_relay_killed_mid_read_of_a_32_mib_object_is_a_relay_failure_nothing_journaled_nothing_acked(make_home, tmp_path, own_relay, monkeypatch) -> None:  # noqa: F811
    from gagetest import pair

    from gage.carriers.relay import config, deliver
    from gage.home import whereabouts

    alice, bob = make_home("alice"), make_home("bob")
    with bob.lock():
        key = sealing.ensure(bob.root, bob.identity.secret)
    addr = sealing.mailbox_address(key.recipient)
    mailbox.run(mailbox.create(own_relay.url, addr, ack_wait=2.0))
    config.record(bob, own_relay.url, None)
    pair(alice, "bob", bob)
    whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=own_relay.url, source="key file"))
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(32 << 20))
    assert deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    real_get = objread._get
    calls: list[int] = []

    async def get(nc: Any, stream: str, req: dict[str, Any], timeout: float) -> Any:
        calls.append(1)
        if len(calls) == 40:  # the meta and 38 of its 257 chunks read: kill -9 of the relay
            own_relay.stop(kill=True)
        return await real_get(nc, stream, req, timeout)

    monkeypatch.setattr(objread, "_get", get)
    with pytest.raises(RelayError) as failed:
        mailbox.run(asyncio.wait_for(mailbox.fetch(bob, own_relay.url, addr), 60))
    assert failed.value.exit_code == Exit.RELAY == 15
    assert not _drops(bob) and listing.find(bob, bid) is None
    monkeypatch.setattr(objread, "_get", real_get)
    own_relay.start()
    got = mailbox.run(asyncio.wait_for(mailbox.fetch(bob, own_relay.url, addr, wait=5.0), 120))  # after the ack wait
    assert [o.id for o in got.opened] == [bid]  # it was not acknowledged: it lands now, once
    assert not _drops(bob)


@pytest.mark.parametrize("size", [0, 1, C, C + 1, 40 * C + 7])
def test_the_writer_puts_no_rollup_and_the_reader_reads_it_back_from_a_bucket_that_refuses_rollups(relay, size: int) -> None:  # noqa: F811
    data = os.urandom(size)
    bucket = f"T_NR{size}"

    async def work(nc: Any, js: Any) -> None:
        stream = objects.stream_of(bucket)
        await js.add_stream(api.StreamConfig(
            name=stream, subjects=[f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"], allow_rollup_hdrs=False,
            discard=api.DiscardPolicy.NEW, allow_direct=True,
        ))
        with pytest.raises(nats.js.errors.APIError):  # the bucket does refuse a rollup
            await js.publish(objects.meta_subject(bucket, "x"), b"{}", headers={"Nats-Rollup": "sub"})
        name = _name(size)
        info = await objects.put(nc, bucket, name, io.BytesIO(data), timeout=10)
        out = io.BytesIO()
        meta = await objread.read(nc, bucket, _named(name, data), out, max_size=1 << 30)
        assert out.getvalue() == data and meta.nuid == info["nuid"] and meta.size == size
        # A later put under the same name: the reader takes the first meta that matches what the
        # message names, never merely the last; a message of an older gage (the name alone), the first.
        again = os.urandom(10)
        await objects.put(nc, bucket, name, io.BytesIO(again), timeout=10)
        for want, named in ((again, _named(name, again)), (data, _named(name, data)), (data, objread.Named(name))):
            out = io.BytesIO()
            await objread.read(nc, bucket, named, out, max_size=1 << 30)
            assert out.getvalue() == want
        await objread.delete(nc, bucket, name, (await objread.read(nc, bucket, objread.Named(name), io.BytesIO(), max_size=1 << 30)).nuid)
        with pytest.raises(objread.ObjectError, match="not in the mailbox's bucket"):
            await objread.read(nc, bucket, objread.Named(name), io.BytesIO(), max_size=1 << 30)

    mailbox.run(_raw(relay.url, work))


def test_an_orphaned_object_is_swept_by_its_owner_and_a_waiting_one_is_not(two, tmp_path, relay, monkeypatch) -> None:  # noqa: F811
    """A stranger's meta and chunks with no mailbox message would count against the bucket for
    ever; once the mailbox is drained its owner's fetch sweeps what is older than the sweep age."""
    alice, bob = two
    addr = _address(bob)
    bucket = mailbox.bucket_name(addr)
    stream = objects.stream_of(bucket)

    async def orphan(nc: Any, js: Any) -> None:
        await objects.put(nc, bucket, _name(99), io.BytesIO(os.urandom(3 * C)), timeout=10)

    mailbox.run(_raw(relay.url, orphan))
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 10))
    from gage.carriers.relay import deliver

    deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    monkeypatch.setattr(objects, "ORPHAN_AGE", datetime.timedelta(0))

    async def state(nc: Any, js: Any) -> tuple[int, int]:
        info = await js.stream_info(stream, subjects_filter=f"$O.{bucket}.M.>")
        return len(info.state.subjects or {}), info.state.messages

    async def sweep_now(nc: Any, js: Any) -> int:
        return await taking.Sweeper().maybe(js, mailbox.stream_name(addr), mailbox.CONSUMER, bucket)

    # Not drained (alice's envelope waits): neither object is touched, old as they are.
    assert mailbox.run(_raw(relay.url, sweep_now)) == 0
    assert mailbox.run(_raw(relay.url, state))[0] == 2
    got = mailbox.run(mailbox.fetch(bob, relay.url, addr))
    assert [o.id for o in got.opened] == [bid]
    metas, messages = mailbox.run(_raw(relay.url, state))
    assert metas == 0 and messages == 0  # alice's deleted once landed, the orphan swept: nothing counts


def test_an_empty_mailbox_fetch_sweeps_an_orphan_too(two, relay, monkeypatch) -> None:  # noqa: F811
    alice, bob = two
    addr = _address(bob)
    bucket = mailbox.bucket_name(addr)

    async def orphan(nc: Any, js: Any) -> None:
        await objects.put(nc, bucket, _name(98), io.BytesIO(b"x" * 10), timeout=10)

    async def messages(nc: Any, js: Any) -> int:
        return int((await js.stream_info(objects.stream_of(bucket))).state.messages)

    mailbox.run(_raw(relay.url, orphan))
    mailbox.run(mailbox.fetch(bob, relay.url, addr, wait=0.2))
    assert mailbox.run(_raw(relay.url, messages)) == 2  # young: it may be a put whose message is on the way
    monkeypatch.setattr(objects, "ORPHAN_AGE", datetime.timedelta(0))
    mailbox.run(mailbox.fetch(bob, relay.url, addr, wait=0.2))
    assert mailbox.run(_raw(relay.url, messages)) == 0


def test_the_meta_check_refuses_what_an_honest_writer_never_writes() -> None:
    """The checks themselves, each able to fail: a good meta passes, each edit of it is refused."""
    data = b"z" * (C + 3)
    good = _meta("B", "n", "NUID1", data)
    good["name"] = "n"
    meta = objread.check_meta(json.dumps(good).encode(), "B", "n", 9, 1 << 20)
    assert (meta.nuid, meta.size, meta.chunks, meta.sha256) == ("NUID1", len(data), 2, hashlib.sha256(data).digest())
    for edit in (
        {"digest": "SHA-256=" + base64.urlsafe_b64encode(bytes(31)).decode()},
        {"digest": "SHA-512=" + base64.urlsafe_b64encode(bytes(32)).decode()},
        {"size": True}, {"size": -1}, {"chunks": 0}, {"name": "other"}, {"bucket": "C"},
        {"nuid": ""}, {"nuid": "a b"}, {"options": []}, {"size": 2 << 20},
    ):
        with pytest.raises(objread.ObjectError):
            objread.check_meta(json.dumps({**good, **edit}).encode(), "B", "n", 9, 1 << 20)


def test_an_unforeseen_error_in_the_mailbox_loop_is_said_and_the_watcher_goes_on(two, tmp_path, relay, monkeypatch) -> None:  # noqa: F811
    """`watch --mailbox`: before, the thread died silently at the first error that was not gage's."""
    import threading

    from gage.carriers.relay import deliver, follow, landing

    alice, bob = two
    real = landing.land_opened
    failed: list[int] = []

    def boom(*a: Any, **kw: Any) -> Any:
        if not failed:
            failed.append(1)
            raise RuntimeError("something nobody foresaw")
        return real(*a, **kw)

    monkeypatch.setattr(landing, "land_opened", boom)
    bid = bundle(alice, tmp_path)
    deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
    events: list[Any] = []
    stop = threading.Event()
    t = threading.Thread(
        target=follow.follow, args=(bob, relay.url, _address(bob)),
        kwargs={"creds": None, "budget": None, "on_event": events.append, "stop": stop}, daemon=True,
    )
    t.start()
    try:
        for _ in range(300):
            if listing.find(bob, bid) is not None:
                break
            stop.wait(0.1)
        assert t.is_alive()
    finally:
        stop.set()
        t.join(30)
    errors = [e.message for e in events if e.kind == "error"]
    assert errors and "RuntimeError: something nobody foresaw" in errors[0]
    assert listing.find(bob, bid) is not None and listing.find(bob, bid).state == "pending"  # not lost: it came again
    assert not _drops(bob)


def _publish_file(url: str, address: str, data: bytes, tmp: Path) -> None:
    p = tmp / f"raw-{hashlib.sha256(data).hexdigest()[:8]}.age"
    p.write_bytes(data)
    mailbox.run(mailbox.publish(url, address, p))


def test_chunks_interleaved_with_another_objects_and_one_appended_after_the_meta_read_right(relay) -> None:  # noqa: F811
    """The window of chunk reads (objread.WINDOW at once) takes consecutive chunks whatever the stream
    holds between them; a chunk a stranger appends after the meta is no part of the object."""
    bucket = "T_IL"
    k = objread.MIN_CHUNK  # the smallest chunks a meta may say it has
    a, b = os.urandom(21 * k + 5), os.urandom(13 * k)
    pa = [a[i : i + k] for i in range(0, len(a), k)]
    pb = [b[i : i + k] for i in range(0, len(b), k)]

    async def work(nc: Any, js: Any) -> None:
        await js.add_stream(api.StreamConfig(name=objects.stream_of(bucket), subjects=[f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"]))
        for i in range(max(len(pa), len(pb))):
            for nuid, parts in (("A", pa), ("B", pb)):
                if i < len(parts):
                    await js.publish(objects.chunk_subject(bucket, nuid), parts[i])
            if i % 3 == 0:
                await js.publish(f"$O.{bucket}.C.other", b"noise")
        for nuid, name, data, parts in (("A", _name(1), a, pa), ("B", _name(2), b, pb)):
            meta = objects.meta(bucket, name, nuid, len(data), len(parts), hashlib.sha256(data).digest(), k)
            await js.publish(objects.meta_subject(bucket, name), json.dumps(meta).encode())
        await js.publish(objects.chunk_subject(bucket, "A"), b"appended after the meta")
        for name, data in ((_name(1), a), (_name(2), b)):
            out = io.BytesIO()
            await objread.read(nc, bucket, _named(name, data), out, max_size=1 << 30)
            assert out.getvalue() == data

    mailbox.run(_raw(relay.url, work))


_GOOD_META = json.dumps({**objects.meta("B", "n", "NUID1", 3 * C, 3, bytes(32), C)}).encode()


@fuzz_settings(300)
@given(st.one_of(st.binary(max_size=300), st.builds(lambda b, i, x: b[:i] + x + b[i:], st.just(_GOOD_META), st.integers(0, len(_GOOD_META)), st.binary(max_size=12))))
def test_a_meta_of_any_bytes_is_taken_whole_or_refused_as_an_object_error(data: bytes) -> None:
    try:
        meta = objread.check_meta(data, "B", "n", 5, 1 << 30)
    except objread.ObjectError:
        return
    assert meta.size >= 0 and meta.chunks <= -(-meta.size // objread.MIN_CHUNK) and (meta.size == 0) == (meta.chunks == 0)
    assert len(meta.sha256) == 32 and meta.nuid.isalnum()
