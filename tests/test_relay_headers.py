"""Every per-message header nats-server honours on a publish into a stream, on every subject a person
may publish to, tried by mallory on a real nats-server running exactly `gage relay config`'s output
(spec/relay.md section 8.7, the table). What holds for each: nothing stored for bob changes (every
message in his mailbox, bucket and directory is there after, byte for byte, at its sequence), what
mallory stored is only her own junk that bob drops, all of bob's mail lands, and what she learns
is at most what section 8.6 says: a stream's or a subject's last sequence, and the stream's last
message id (random, unrelated to anything else of the envelope)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from relayiso import Shared, running
from relaytest import bundle
from test_relay_isolation import fetch, paired, send

from gage.carriers.relay import deliver, directory, mailbox, objects, rendezvous
from gage.carriers.relay.creds import as_credentials

STAMP = "2026-01-01T00:00:00Z"
# What a refusal may say, and nothing else: a number is a sequence, the last msg ID the stream's.
REFUSALS = [
    r"wrong last sequence: \d+",
    r"wrong last msg ID: (?P<id>\S*)",
    r"expected stream does not match",
    r"rollup not permitted",
    r"per-message TTL is disabled",
    r"message counters is disabled",
    r"atomic publish is disabled",
    r"batch publish is disabled",
    r"message schedules is disabled",
    r"message schedules invalid scheduler",
    r"message stream source header is not allowed",
    r"expected last sequence per subject temporarily unavailable|missing sequence for expected last sequence per subject",
]


def headers_to_try(target: str) -> list[tuple[str, dict[str, str], bytes]]:
    """(what, headers, body): each header nats-server 2.15 honours on a publish (server/stream.go)."""
    return [
        ("plain", {}, b"junk"),
        ("Nats-Msg-Id", {"Nats-Msg-Id": secrets.token_hex(16)}, b"junk"),
        ("Nats-Expected-Stream", {"Nats-Expected-Stream": "ELSEWHERE"}, b"junk"),
        ("Nats-Expected-Last-Sequence", {"Nats-Expected-Last-Sequence": "999999"}, b"junk"),
        ("Nats-Expected-Last-Subject-Sequence", {"Nats-Expected-Last-Subject-Sequence": "999999"}, b"junk"),
        ("...-Subject >", {"Nats-Expected-Last-Subject-Sequence": "999999", "Nats-Expected-Last-Subject-Sequence-Subject": ">"}, b"junk"),
        ("...-Subject alone", {"Nats-Expected-Last-Subject-Sequence-Subject": ">"}, b"junk"),
        ("Nats-Expected-Last-Msg-Id", {"Nats-Expected-Last-Msg-Id": "x"}, b"junk"),
        ("Nats-Rollup all", {"Nats-Rollup": "all"}, b"junk"),
        ("Nats-Rollup sub", {"Nats-Rollup": "sub"}, b"junk"),
        ("Nats-TTL", {"Nats-TTL": "1s"}, b"junk"),
        ("Nats-TTL never", {"Nats-TTL": "never"}, b"junk"),
        ("Nats-Incr", {"Nats-Incr": "1"}, b""),
        ("Nats-Batch-Id commit", {"Nats-Batch-Id": "b1", "Nats-Batch-Sequence": "1", "Nats-Batch-Commit": "1"}, b"junk"),
        ("Nats-Batch-Id start", {"Nats-Batch-Id": "b2", "Nats-Batch-Sequence": "1"}, b"junk"),
        ("Nats-Schedule", {"Nats-Schedule": "@every 1s", "Nats-Schedule-Target": target, "Nats-Schedule-TTL": "1s"}, b"junk"),
        ("Nats-Schedule-Next purge", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": target + "x"}, b"junk"),
        ("Nats-Scheduler", {"Nats-Scheduler": target + "x"}, b"junk"),
        ("Nats-Stream-Source", {"Nats-Stream-Source": "GAGE_MB_x 1 > >"}, b"junk"),
        ("Nats-Marker-Reason", {"Nats-Marker-Reason": "Purge"}, b""),
        ("KV-Operation DEL", {"KV-Operation": "DEL"}, b""),
        ("KV-Operation PURGE", {"KV-Operation": "PURGE"}, b""),
        ("Nats-Request-Info", {"Nats-Request-Info": json.dumps({"acc": "P_alice", "reply": "x.$FI"})}, b"junk"),
        ("Nats-Trace-Dest", {"Nats-Trace-Dest": "trace.mallory"}, b"junk"),
        ("Nats-Trace-Only", {"Nats-Trace-Dest": "trace.mallory", "Nats-Trace-Only": "true"}, b"junk"),
        ("Nats-Required-Api-Level", {"Nats-Required-Api-Level": "99"}, b"junk"),
        ("Nats-Pin-Id", {"Nats-Pin-Id": "p1"}, b"junk"),
        ("Nats-Sequence", {"Nats-Sequence": "1", "Nats-Stream": "GAGE_MB_x", "Nats-Last-Sequence": "0", "Nats-Msg-Size": "1"}, b"junk"),
        ("Status 408", {"Status": "408", "Description": "Request Timeout"}, b""),
        ("Status 100", {"Status": "100", "Description": "Idle Heartbeat"}, b""),
        ("Status 400", {"Status": "400", "Description": "Bad Request"}, b""),
    ]


@pytest.fixture
def shared(make_home, tmp_path: Path) -> Iterator[Shared]:
    with running(make_home, tmp_path) as s:
        yield s


async def _operator(shared: Shared, work: Any) -> Any:
    async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
        return await work(nc.jetstream())


def stored(shared: Shared, stream: str) -> dict[int, tuple[str, dict[str, str], str]]:
    """The operator's view of a stream: each stored message's subject, headers and SHA-256."""
    async def go(js: Any) -> dict[int, tuple[str, dict[str, str], str]]:
        state = (await js.stream_info(stream)).state
        out = {}
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                m = await js.get_msg(stream, seq)
            except nats.js.errors.NotFoundError:
                continue
            out[seq] = (m.subject, dict(m.headers or {}), hashlib.sha256(m.data or b"").hexdigest())
        return out

    return dict(mailbox.run(_operator(shared, go)))


def big_send(shared: Shared, tmp: Path) -> str:
    """alice delivers bob an envelope too big for one message: it waits in his bucket."""
    a = shared.homes["alice"]
    bid = bundle(a, tmp, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 200_000))
    d = deliver.deliver(a, a.state_dir("outbox") / bid, bid, "bob", relay=shared.url, unconfirmed=False, creds=shared.creds["alice"])
    assert d.via == "object"
    return bid


@pytest.fixture
def bobs_mail(shared: Shared, tmp_path: Path) -> list[str]:
    paired(shared, ("alice", "bob"), ("carol", "bob"))
    ids = [send(shared, "alice", "bob", tmp_path), big_send(shared, tmp_path), send(shared, "carol", "bob", tmp_path, data=b"carol's")]
    directory.publish(shared.homes["bob"], "bob", shared.url, relay_for_record=None, creds=shared.creds["bob"])
    return ids


def streams_of(shared: Shared) -> dict[str, str]:
    addr = shared.addr["bob"]
    return {
        "mailbox": mailbox.stream_name(addr),
        "bucket": objects.stream_of(mailbox.bucket_name(addr)),
        "directory": "KV_GAGE_DIRECTORY",
    }


def object_names(shared: Shared) -> set[str]:
    """Every object name and chunk nuid in bob's bucket: what nobody else may learn."""
    names = set()
    for subj, _h, _d in stored(shared, streams_of(shared)["bucket"]).values():
        last = subj.rsplit(".", 1)[1]
        names.add(base64.urlsafe_b64decode(last).decode() if ".M." in subj else last)
    return names


async def _try_all(shared: Shared, targets: list[tuple[str, str]]) -> list[tuple[str, str, str, Any]]:
    """mallory publishes each header to each target, as a JetStream publish; (target, what, stream, answer)."""
    async def shrug(exc: Exception) -> None:
        return None

    nc = await nats.connect(shared.url, error_cb=shrug, allow_reconnect=False, **as_credentials(shared.creds["mallory"]).nats_options())
    out: list[tuple[str, str, str, Any]] = []
    traces: list[dict[str, Any]] = []

    async def keep(m: Any) -> None:
        traces.append(json.loads(m.data))

    await nc.subscribe("trace.mallory", cb=keep)
    try:
        for label, subj in targets:
            # The last message id the stream tells anyone, published again: a duplicate, nothing stored.
            r = json.loads((await nc.request(subj, b"", headers={"Nats-Expected-Last-Msg-Id": "x"}, timeout=2)).data)
            told = r["error"]["description"].rsplit(": ", 1)[-1] if ": " in r["error"]["description"] else ""
            again = [("Nats-Msg-Id told", {"Nats-Msg-Id": told}, b"junk")] if told else []
            for what, hdrs, body in [*headers_to_try(subj), *again]:
                try:
                    r = await nc.request(subj, body, headers=hdrs, timeout=2)
                    answer: Any = json.loads(r.data) if r.data else {"status": (r.headers or {}).get("Status")}
                except (nats.errors.NoRespondersError, nats.errors.TimeoutError, TimeoutError):
                    answer = None
                out.append((label, what, subj, answer))
            # A fast batch is asked for by the reply subject: `<prefix>.<id>.<flow>.<gap>.<seq>.<op>.$FI`.
            box = nc.new_inbox()
            sub = await nc.subscribe(box + ".>")
            await nc.publish(subj, b"junk", reply=f"{box}.b1.1.fail.1.0.$FI")
            try:
                r = await sub.next_msg(timeout=2)
                answer = json.loads(r.data) if r.data else {"status": (r.headers or {}).get("Status")}
            except (nats.errors.TimeoutError, TimeoutError):
                answer = None
            await sub.unsubscribe()
            out.append((label, "fast batch", subj, answer))
        await asyncio.sleep(1.5)  # a TTL or a schedule would have fired by now
    finally:
        await nc.close()
    # A trace stops where the message enters account MAIL: no JetStream event, nothing of a stream.
    assert traces and all({e["type"] for e in t["events"]} <= {"in", "si"} for t in traces), traces
    assert not any("GAGE_MB_" in json.dumps(t) or "OBJ_" in json.dumps(t) for t in traces)
    return out


def test_every_header_on_every_subject_changes_nothing_of_bobs_and_tells_only_sequences(shared: Shared, bobs_mail: list[str]) -> None:
    addr, bucket = shared.addr["bob"], mailbox.bucket_name(shared.addr["bob"])
    names = object_names(shared)
    real = [s for s in stored(shared, streams_of(shared)["bucket"]).values()]
    before = {k: stored(shared, s) for k, s in streams_of(shared).items()}
    targets = [
        ("mailbox", mailbox.subject(addr)),
        ("chunk", objects.chunk_subject(bucket, secrets.token_hex(16))),
        ("meta", objects.meta_subject(bucket, secrets.token_hex(16))),
        # Even knowing the subjects of alice's waiting object (nobody can: section 8.6), nothing of it changes.
        *[("alice's " + ("meta" if ".M." in s else "chunk"), s) for s, _h, _d in real[-2:]],
        ("own directory key", "$KV.GAGE_DIRECTORY.mallory"),
        ("rendezvous", rendezvous.SUBJECT_PREFIX + secrets.token_hex(16)),
    ]
    results = mailbox.run(_try_all(shared, targets))
    stored_by_mallory = {"mailbox": 0}
    told: set[str] = set()
    for label, what, _subj, answer in results:
        text = json.dumps(answer)
        for n in names:
            assert n not in text, (label, what, answer)  # no object name or nuid, ever
        if answer is None:
            assert what == "Nats-Trace-Only", (label, what)  # traced, never delivered
            continue
        if "error" in answer:
            desc = answer["error"].get("description", "")
            m = next((re.fullmatch(p, desc) for p in REFUSALS if re.fullmatch(p, desc)), None)
            assert m is not None, (label, what, desc)
            if "id" in m.groupdict() and label == "mailbox":
                told.add(m["id"])
            continue
        assert set(answer) <= {"stream", "seq", "duplicate", "domain"}, (label, what, answer)
        if what == "Nats-Msg-Id told":
            assert answer.get("duplicate") is True, (label, answer)
            continue
        if label == "mailbox":
            stored_by_mallory["mailbox"] += 1
    # Refused, as the streams are made: no rollup, TTL, counter, batch, schedule or source header is ever stored.
    refused = {what for _l, what, _s, a in results if a and "error" in a}
    assert "mailbox" in {label for label, what, _s, _a in results if what == "Nats-Msg-Id told"}  # carol's id, told and tried
    assert {"Nats-Rollup all", "Nats-Rollup sub", "Nats-TTL", "Nats-Incr", "Nats-Batch-Id commit", "fast batch", "Nats-Schedule", "Nats-Stream-Source"} <= refused
    after = {k: stored(shared, s) for k, s in streams_of(shared).items()}
    for k in before:
        assert {s: after[k][s] for s in before[k]} == before[k], k  # every message of bob's, as it was
    for _s, hdrs, _d in after["mailbox"].values():
        assert "Nats-Request-Info" not in hdrs  # nobody can make a message claim another sender
    # The last message id told is a random id a message carried (bob's, or mallory's own), no object's name.
    assert told and told <= {h.get("Nats-Msg-Id", "") for _s, h, _d in after["mailbox"].values()} | {""}
    rec = directory.lookup(shared.homes["alice"], "bob", shared.url, creds=shared.creds["alice"])
    assert rec.signing_key == shared.homes["bob"].identity.key
    got = mailbox.run(mailbox.fetch(shared.homes["bob"], shared.url, addr, creds=shared.creds["bob"]))
    assert sorted(o.id for o in got.opened if o.id) == sorted(bobs_mail)
    assert sum(1 for o in got.opened if o.dropped) == stored_by_mallory["mailbox"]


def test_a_later_meta_under_a_waiting_objects_name_does_not_destroy_it(shared: Shared, bobs_mail: list[str]) -> None:
    """Finding 1: the refusal of `Nats-Expected-Last-Msg-Id` told the last message id, which was the
    waiting object's name; mallory put a chunk and a well-formed meta under it, and bob read the
    last meta and dropped alice's envelope. The id is no name now, and even given the real name
    (which no refusal tells) her meta is skipped: bob's fetch lands alice's envelope."""
    addr, bucket = shared.addr["bob"], mailbox.bucket_name(shared.addr["bob"])
    names = object_names(shared)

    async def mallory(nc: Any) -> str:
        r = await nc.request(mailbox.subject(addr), b"", headers={"Nats-Expected-Last-Msg-Id": "x"}, timeout=2)
        leaked = re.fullmatch(r"wrong last msg ID: (\S*)", json.loads(r.data)["error"]["description"])
        assert leaked is not None
        js = nc.jetstream()
        for name in [leaked[1], *names]:
            nuid, data = secrets.token_hex(16), b"mallory's own" * 100
            await js.publish(objects.chunk_subject(bucket, nuid), data)
            meta = objects.meta(bucket, name, nuid, len(data), 1, hashlib.sha256(data).digest(), objects.CHUNK)
            await js.publish(objects.meta_subject(bucket, name), json.dumps(meta).encode())
        return str(leaked[1])

    async def as_mallory() -> str:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            return await mallory(nc)

    leaked = mailbox.run(as_mallory())
    assert leaked not in names  # the message id is not the object's name
    got = mailbox.run(mailbox.fetch(shared.homes["bob"], shared.url, addr, creds=shared.creds["bob"]))
    assert sorted(o.id for o in got.opened) == sorted(bobs_mail) and not [o for o in got.opened if o.dropped]
    assert not [e for e in shared.homes["bob"].journal.entries() if e["event"] == "envelope-dropped"]


def test_a_junk_message_first_under_a_deliverys_id_is_no_silent_duplicate(shared: Shared, tmp_path: Path, monkeypatch) -> None:
    """A publish the relay calls a duplicate of a message this delivery never sent is not delivered:
    the sender is told (exit 15), and bob finds only the junk (a drop)."""
    paired(shared, ("alice", "bob"))
    taken = secrets.token_hex(16)

    async def preempt() -> None:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            await nc.jetstream().publish(mailbox.subject(shared.addr["bob"]), b"junk", headers={"Nats-Msg-Id": taken})

    mailbox.run(preempt())

    class Fixed:
        @staticmethod
        def token_hex(n: int) -> str:
            return taken

    monkeypatch.setattr(mailbox, "secrets", Fixed)  # as if mallory had guessed the id (128 random bits)
    from gage.carriers.relay.errors import RelayError

    with pytest.raises(RelayError, match="never sent one before: it was not stored; nothing was delivered"):
        send(shared, "alice", "bob", tmp_path)
    assert fetch(shared, "bob") == [None]


def test_an_attempt_again_after_a_lost_acknowledgement_is_the_deliverys_own_duplicate(shared: Shared, tmp_path: Path) -> None:
    """The relay stored the first attempt and its acknowledgement was lost: the second attempt is a
    duplicate of this delivery's own message, stored once, and delivered."""
    envelope = tmp_path / "envelope.age"
    envelope.write_bytes(os.urandom(mailbox.INLINE_MAX + 10))  # a big one: the object is put once
    sending = mailbox._Sending(msg_id=secrets.token_hex(16), name=objects.new_name())

    async def twice() -> tuple[Any, Any]:
        async with mailbox.connected(shared.url, shared.creds["alice"]) as nc:
            one = await mailbox._put(nc, shared.addr["bob"], envelope, envelope.stat().st_size, sending, 10)
            two = await mailbox._put(nc, shared.addr["bob"], envelope, envelope.stat().st_size, sending, 10)
            return one, two

    one, two = mailbox.run(twice())
    assert not one.duplicate and two.duplicate and one.seq == two.seq
    bucket = stored(shared, streams_of(shared)["bucket"])
    assert sum(1 for s, _h, _d in bucket.values() if ".M." in s) == 1  # put once


def test_what_a_fellow_user_learns_of_bobs_mailbox_is_its_sequences_as_section_8_6_says(shared: Shared, tmp_path: Path) -> None:
    """The traffic oracle nats-server gives every publisher (no server option removes it): pinned to
    what section 8.6 names. Last-Sequence counts every message ever stored in the mailbox; the
    subject's last sequence is the newest one waiting, 0 once bob took them all."""
    paired(shared, ("alice", "bob"))
    subj = mailbox.subject(shared.addr["bob"])

    def probe() -> tuple[int, int]:
        async def go() -> tuple[int, int]:
            async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
                out = []
                for h in ("Nats-Expected-Last-Sequence", "Nats-Expected-Last-Subject-Sequence"):
                    r = json.loads((await nc.request(subj, b"", headers={h: "999999"}, timeout=2)).data)
                    out.append(int(r["error"]["description"].rsplit(" ", 1)[1]))
                return out[0], out[1]

        return tuple(mailbox.run(go()))  # type: ignore[return-value]

    assert probe() == (0, 0)
    send(shared, "alice", "bob", tmp_path)
    send(shared, "alice", "bob", tmp_path, data=b"two")
    assert probe() == (2, 2)
    fetch(shared, "bob")
    assert probe() == (2, 0)


def test_a_stored_status_header_is_one_more_envelope_never_the_servers_word(shared: Shared, tmp_path: Path) -> None:
    """mallory's messages with `Status: 408`, `100` and `400` headers wait ahead of alice's: one fetch
    drops the three and lands alice's (nats-py's pull subscription stopped at the 408, swallowed the 100
    and failed on the 400)."""
    paired(shared, ("alice", "bob"))

    async def junk() -> None:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            for status in ("100", "408", "400", "404", "409"):
                await nc.jetstream().publish(mailbox.subject(shared.addr["bob"]), b"", headers={"Status": status, "Description": "x"})

    mailbox.run(junk())
    bid = send(shared, "alice", "bob", tmp_path)
    got = mailbox.run(mailbox.fetch(shared.homes["bob"], shared.url, shared.addr["bob"], creds=shared.creds["bob"]))
    assert [o.id for o in got.opened] == [None] * 5 + [bid] and all(o.dropped for o in got.opened[:5])
    assert fetch(shared, "bob") == []  # all acknowledged
