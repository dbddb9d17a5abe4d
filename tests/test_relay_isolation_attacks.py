"""mallory, a fellow user of the shared relay (issue 26), tries everything she should not, on a real
nats-server running exactly the generated configuration: each attempt fails, and bob's mail is all
still there and lands. Every JetStream API request is tried under both names a person's account
has for it: `$JS.API.*` (answered by the server: no JetStream here) and the relay's prefix."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from relayiso import Shared, running
from test_relay_isolation import fetch, paired, send, waiting

from gage.carriers.relay import directory, dirrecord, mailbox, objects
from gage.carriers.relay.creds import as_credentials
from gage.carriers.relay.errors import RelayError
from gage.carriers.relay.mailbox import SHARED_API_PREFIX


@pytest.fixture
def shared(make_home, tmp_path: Path) -> Iterator[Shared]:
    with running(make_home, tmp_path) as s:
        yield s


def api_names(subj: str) -> list[str]:
    return [subj, SHARED_API_PREFIX + subj[len("$JS.API") :]] if subj.startswith("$JS.API.") else [subj]


async def _request(shared: Shared, who: str, subj: str, body: bytes, headers: dict[str, str] | None = None) -> Any:
    async with mailbox.connected(shared.url, shared.creds[who]) as nc:
        try:
            return await nc.request(subj, body, timeout=2, headers=headers)
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError, TimeoutError):
            return None


def answered(shared: Shared, who: str, subj: str, body: bytes = b"", headers: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The relay's answer when it did what was asked; None when nothing answered or it said no."""
    msg = mailbox.run(_request(shared, who, subj, body, headers))
    if msg is None or not msg.data:
        return None
    try:
        resp = json.loads(msg.data)
    except ValueError:
        return {"raw": msg.data}
    return None if isinstance(resp, dict) and "error" in resp else resp


@pytest.fixture
def bobs_mail(shared: Shared, tmp_path: Path) -> list[str]:
    """Two envelopes waiting for bob (from alice and carol), a directory record for bob, an object in his bucket."""
    paired(shared, ("alice", "bob"), ("carol", "bob"))
    ids = [send(shared, "alice", "bob", tmp_path), send(shared, "carol", "bob", tmp_path, data=b"carol's")]
    directory.publish(shared.homes["bob"], "bob", shared.url, relay_for_record=None, creds=shared.creds["bob"])
    bucket = mailbox.bucket_name(shared.addr["bob"])

    async def an_object() -> None:  # what a sender's big envelope leaves: a chunk, then its meta (no rollup)
        async with mailbox.connected(shared.url, shared.creds["alice"]) as nc:
            js = nc.jetstream()
            await js.publish(objects.chunk_subject(bucket, "n1"), b"c" * 100, stream=objects.stream_of(bucket))
            info = objects.meta(bucket, "obj1", "n1", 100, 1, b"\0" * 32, objects.CHUNK)
            await js.publish(objects.meta_subject(bucket, "obj1"), json.dumps(info).encode(), stream=objects.stream_of(bucket))

    mailbox.run(an_object())
    return ids


def held(shared: Shared) -> tuple[int, int, int]:
    addr = shared.addr["bob"]
    return (
        waiting(shared, mailbox.stream_name(addr)),
        waiting(shared, objects.stream_of(mailbox.bucket_name(addr))),
        waiting(shared, "KV_GAGE_DIRECTORY"),
    )


def bob_lands_everything(shared: Shared, ids: list[str]) -> None:
    rec = directory.lookup(shared.homes["alice"], "bob", shared.url, creds=shared.creds["alice"])
    assert rec.signing_key == shared.homes["bob"].identity.key
    assert sorted(fetch(shared, "bob")) == sorted(ids)


def test_mallory_can_read_delete_purge_or_list_nothing_of_bobs(shared: Shared, bobs_mail: list[str]) -> None:
    addr = shared.addr["bob"]
    mb, ob = mailbox.stream_name(addr), objects.stream_of(mailbox.bucket_name(addr))
    before = held(shared)
    assert before[0] == 2 and before[1] == 2
    first = b'{"seq": 1}'
    tries = [
        ("$JS.API.STREAM.NAMES", b""),
        ("$JS.API.STREAM.LIST", b""),
        ("$JS.API.INFO", b""),
        (f"$JS.API.STREAM.INFO.{mb}", b""),
        (f"$JS.API.STREAM.MSG.GET.{mb}", first),
        (f"$JS.API.DIRECT.GET.{mb}", first),
        (f"$JS.API.STREAM.MSG.DELETE.{mb}", first),
        (f"$JS.API.STREAM.PURGE.{mb}", b"{}"),
        (f"$JS.API.STREAM.DELETE.{mb}", b""),
        (f"$JS.API.CONSUMER.INFO.{mb}.inbox", b""),
        (f"$JS.API.CONSUMER.MSG.NEXT.{mb}.inbox", b'{"batch": 1, "expires": 500000000}'),
        (f"$JS.API.CONSUMER.CREATE.{mb}", b'{"stream_name": "%s", "config": {"ack_policy": "none"}}' % mb.encode()),
        (f"$JS.API.CONSUMER.DELETE.{mb}.inbox", b""),
        (f"$JS.API.STREAM.INFO.{ob}", b""),
        (f"$JS.API.STREAM.MSG.GET.{ob}", first),
        (f"$JS.API.DIRECT.GET.{ob}", first),
        (f"$JS.API.STREAM.PURGE.{ob}", b"{}"),
        (f"$JS.API.STREAM.MSG.DELETE.{ob}", first),
        (f"$JS.API.CONSUMER.CREATE.{ob}", b"{}"),
        ("$JS.API.STREAM.PURGE.KV_GAGE_DIRECTORY", b"{}"),
        ("$JS.API.STREAM.MSG.DELETE.KV_GAGE_DIRECTORY", first),
        ("$JS.API.STREAM.DELETE.KV_GAGE_DIRECTORY", b""),
        ("$JS.API.STREAM.UPDATE.KV_GAGE_DIRECTORY", b"{}"),
    ]
    # The operator may (so there was something to read), mallory may not, under either name.
    assert answered(shared, "operator", f"$JS.API.STREAM.MSG.GET.{mb}", first) is not None
    assert "streams" in (answered(shared, "operator", "$JS.API.STREAM.NAMES") or {})
    for subj, body in tries:
        for name in api_names(subj):
            got = answered(shared, "mallory", name, body)
            assert got is None, (name, got)
    # Her own mailbox's API answers her (so the refusals above are not just a broken connection).
    assert answered(shared, "mallory", f"{SHARED_API_PREFIX}.CONSUMER.INFO.{mailbox.stream_name(shared.addr['mallory'])}.inbox") is not None
    assert held(shared) == before
    bob_lands_everything(shared, bobs_mail)


def test_rollups_wipe_nothing_bobs_bucket_or_the_directory(shared: Shared, bobs_mail: list[str]) -> None:
    """Issue 26 item 3: `Nats-Rollup: all` to a meta subject of bob's bucket, or to mallory's own
    directory key, dropped bob's object and every other record. The streams refuse rollups now."""
    bucket = mailbox.bucket_name(shared.addr["bob"])
    before = held(shared)

    async def roll(subj: str, value: str, stream: str) -> str:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            try:
                await nc.jetstream().publish(subj, b"{}", headers={"Nats-Rollup": value}, stream=stream)
            except Exception as exc:  # noqa: BLE001  (any refusal will do; the test is what is left)
                return type(exc).__name__ + str(exc)
            return "accepted"

    for value in ("all", "sub"):
        assert "rollup" in mailbox.run(roll(objects.meta_subject(bucket, "x"), value, objects.stream_of(bucket))).lower()
        assert "rollup" in mailbox.run(roll("$KV.GAGE_DIRECTORY.mallory", value, "KV_GAGE_DIRECTORY")).lower()
        assert mailbox.run(roll(mailbox.subject(shared.addr["bob"]), value, mailbox.stream_name(shared.addr["bob"]))) != "accepted"
    assert held(shared) == before
    bob_lands_everything(shared, bobs_mail)


def test_mallory_cannot_write_bobs_handle_or_delete_his_record(shared: Shared, bobs_mail: list[str]) -> None:
    with pytest.raises(RelayError):
        directory.publish(shared.homes["mallory"], "bob", shared.url, relay_for_record=None, creds=shared.creds["mallory"])
    for op in ("DEL", "PURGE"):
        for headers in ({"KV-Operation": op}, {"KV-Operation": op, "Nats-Rollup": "sub"}):
            assert answered(shared, "mallory", "$KV.GAGE_DIRECTORY.bob", b"", headers) is None
    directory.publish(shared.homes["mallory"], "mallory", shared.url, relay_for_record=None, creds=shared.creds["mallory"])
    bob_lands_everything(shared, bobs_mail)


def test_mallory_listening_on_every_inbox_sees_none_of_bobs_fetch(shared: Shared, bobs_mail: list[str]) -> None:
    """Issue 26 item 4: `_INBOX.>` received every user's fetch replies. mallory's account is hers:
    she subscribes to `>` there (everything she could) while bob fetches, and gets nothing of his."""
    seen: list[bytes] = []

    async def listen_while_bob_fetches() -> list[str]:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            async def keep(m: Any) -> None:
                seen.append(m.subject.encode() + b" " + m.data)

            await nc.subscribe(">", cb=keep)
            await nc.subscribe("_INBOX.>", cb=keep)
            await nc.flush()
            ids = await asyncio.get_running_loop().run_in_executor(None, fetch, shared, "bob")
            await asyncio.sleep(0.5)
            return ids

    ids = mailbox.run(listen_while_bob_fetches())
    assert sorted(ids) == sorted(bobs_mail)
    assert seen == []


def test_mallory_cannot_acknowledge_bobs_envelope_even_knowing_its_ack_subject(shared: Shared, bobs_mail: list[str]) -> None:
    """bob takes an envelope and crashes before acknowledging; mallory, who learned the ack subject,
    acknowledges and terminates it: it is redelivered to bob after the ack wait all the same."""
    addr = shared.addr["bob"]
    mailbox.run(mailbox.create(shared.url, addr, creds=shared.creds["operator"], ack_wait=1.0))

    async def take_one() -> str:
        async with mailbox.connected(shared.url, shared.creds["bob"]) as nc:
            sub = await nc.jetstream().pull_subscribe_bind(durable=mailbox.CONSUMER, stream=mailbox.stream_name(addr))
            msg = (await sub.fetch(1, timeout=5))[0]
            return str(msg.reply)

    reply = mailbox.run(take_one())
    assert reply.startswith(f"$JS.ACK.{mailbox.stream_name(addr)}.inbox.")

    async def ack_as_mallory() -> None:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            for verb in (b"+ACK", b"+TERM", b"-NAK"):
                await nc.publish(reply, verb)
            await nc.flush()

    mailbox.run(ack_as_mallory())
    import time

    time.sleep(1.5)
    assert held(shared)[0] == 2
    bob_lands_everything(shared, bobs_mail)


def test_a_reply_subject_of_malloris_choosing_writes_into_nothing_of_bobs(shared: Shared, bobs_mail: list[str], tmp_path: Path) -> None:
    """nats-server discussion 8924: a user makes the server write a JetStream answer into another
    stream by naming that stream's subject as the reply subject of a request of her own. Across
    accounts a service import answers to a reply subject the server makes, in her own account."""
    paired(shared, ("alice", "mallory"))
    send(shared, "alice", "mallory", tmp_path)  # something for her own consumer to hand out
    addr, bucket = shared.addr["bob"], mailbox.bucket_name(shared.addr["bob"])
    before = held(shared)
    own = mailbox.stream_name(shared.addr["mallory"])
    targets = [
        mailbox.subject(addr),
        "$KV.GAGE_DIRECTORY.bob",
        objects.meta_subject(bucket, "x"),
        objects.chunk_subject(bucket, "n1"),
        f"$JS.API.STREAM.PURGE.{objects.stream_of(bucket)}",
        f"{SHARED_API_PREFIX}.STREAM.PURGE.{objects.stream_of(bucket)}",
        f"$JS.ACK.{mailbox.stream_name(addr)}.inbox.1.1.1.1.0",
    ]
    requests = [
        (f"{SHARED_API_PREFIX}.CONSUMER.MSG.NEXT.{own}.inbox", b'{"batch": 1, "expires": 200000000}'),
        (f"{SHARED_API_PREFIX}.CONSUMER.INFO.{own}.inbox", b""),
        (f"{SHARED_API_PREFIX}.STREAM.INFO.KV_GAGE_DIRECTORY", b""),
        (f"{SHARED_API_PREFIX}.STREAM.MSG.GET.KV_GAGE_DIRECTORY", b'{"last_by_subj": "$KV.GAGE_DIRECTORY.bob"}'),
    ]

    async def trick() -> None:
        # A bare client that shrugs off the relay's refusals (gage's own stops at the first one, and
        # which comes first depends on timing): every request is sent, whatever the relay says of each.
        async def shrug(exc: Exception) -> None:
            return None

        options = as_credentials(shared.creds["mallory"]).nats_options()
        nc = await nats.connect(shared.url, error_cb=shrug, allow_reconnect=False, **options)
        try:
            for subj, body in requests:
                for target in targets:
                    await nc.publish(subj, body, reply=target)
            await nc.flush()
            await asyncio.sleep(1.0)
        finally:
            await nc.close()

    mailbox.run(trick())
    assert held(shared) == before
    raw = mailbox.run(directory.get_raw(shared.url, "bob", creds=shared.creds["alice"]))
    assert dirrecord.parse(raw, handle="bob").signing_key == shared.homes["bob"].identity.key
    bob_lands_everything(shared, bobs_mail)


def test_bob_reads_and_deletes_an_object_in_his_bucket_with_the_exported_requests_alone(shared: Shared, bobs_mail: list[str]) -> None:
    """What the object reader of RELAY-CONTRACT.md needs, through bob's private exports: the last meta
    by subject, the chunks by sequence and subject, and a purge by subject (chunks, then meta)."""
    from gage.carriers.relay.connection import api_subject

    bucket = mailbox.bucket_name(shared.addr["bob"])
    stream = objects.stream_of(bucket)

    async def read_and_delete() -> tuple[dict[str, Any], bytes]:
        async with mailbox.connected(shared.url, shared.creds["bob"]) as nc:
            async def call(rest: str, body: dict[str, Any]) -> dict[str, Any]:
                r = await nc.request(api_subject(nc, rest), json.dumps(body).encode(), timeout=5)
                out: dict[str, Any] = json.loads(r.data)
                assert "error" not in out, out
                return out

            meta = await call(f"STREAM.MSG.GET.{stream}", {"last_by_subj": objects.meta_subject(bucket, "obj1")})
            import base64

            info = json.loads(base64.b64decode(meta["message"]["data"]))
            chunk = await call(f"STREAM.MSG.GET.{stream}", {"seq": 1, "next_by_subj": objects.chunk_subject(bucket, info["nuid"])})
            data = base64.b64decode(chunk["message"]["data"])
            await call(f"STREAM.PURGE.{stream}", {"filter": objects.chunk_subject(bucket, info["nuid"])})
            await call(f"STREAM.PURGE.{stream}", {"filter": objects.meta_subject(bucket, "obj1")})
            return info, data

    info, data = mailbox.run(read_and_delete())
    assert info["nuid"] == "n1" and data == b"c" * 100
    assert held(shared)[1] == 0  # the bucket is empty
    assert sorted(fetch(shared, "bob")) == sorted(bobs_mail)
