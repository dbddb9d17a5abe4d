"""gage's own object writer (gage/carriers/relay/objects.py) against nats-py's reader, on a real
nats-server: what it writes with publishes only is what `ObjectStore.get` reads, byte for byte,
with the digest checked; a put that fails publishes no meta; the owner's sweep takes what a
failed put left, and leaves a put in progress alone."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import io
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import nats
import nats.js.errors
import pytest
from nats.js import api
from relaytest import bundle, relay  # noqa: F401  (fixture)
from test_relay_mailbox import two  # noqa: F401  (fixture)

from gage.carriers.relay import mailbox, objects
from gage.home import listing, sealing

C = objects.CHUNK


def _on(url: str, bucket: str, work: Callable[[Any, Any], Awaitable[Any]], max_bytes: int = -1) -> Any:
    async def go() -> Any:
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            try:
                await js.delete_object_store(bucket)
            except nats.js.errors.NotFoundError:
                pass
            obs = await js.create_object_store(bucket, api.ObjectStoreConfig(max_bytes=max_bytes))
            return await work(js, obs)
        finally:
            await nc.close()

    return mailbox.run(go())


# The edges: no chunk at all, one byte, exactly one chunk, one over, and more chunks than the window.
SIZES = [0, 1, C, C + 1, (objects.WINDOW * 2 + 3) * C + 7]


@pytest.mark.parametrize("size", SIZES)
def test_what_gage_writes_nats_py_reads_byte_for_byte_with_the_digest_checked(relay, size: int) -> None:  # noqa: F811
    data = os.urandom(size)

    async def work(js: Any, obs: Any) -> None:
        info = await objects.put(js._nc, "T_RT", "an-envelope-id", io.BytesIO(data), timeout=10)
        out = io.BytesIO()
        got = await obs.get("an-envelope-id", writeinto=out)
        assert out.getvalue() == data
        assert got.info.size == size and got.info.chunks == -(-size // C) == info["chunks"]
        assert got.info.digest == objects.digest_text(hashlib.sha256(data).digest()) == info["digest"]
        assert got.info.nuid == info["nuid"] and got.info.bucket == "T_RT" and got.info.name == "an-envelope-id"
        assert got.info.options.max_chunk_size == C
        assert (await obs.get("an-envelope-id")).data == data  # into memory too
        # The same fields nats-py's own put writes for the same bytes (but the random nuid and mtime).
        theirs = await obs.put("by-nats-py", data)
        mine = api.ObjectInfo.from_response(dict(info))
        for f in ("size", "chunks", "digest", "deleted", "bucket"):
            assert getattr(mine, f) == getattr(theirs, f), f
        assert mine.options.max_chunk_size == theirs.options.max_chunk_size

    _on(relay.url, "T_RT", work)


def test_nats_py_checks_the_digest_gage_writes(relay, monkeypatch) -> None:  # noqa: F811
    """The digest field is what the reader checks: a wrong one is a mismatch, so ours is right."""
    monkeypatch.setattr(objects, "digest_text", lambda sha: "SHA-256=" + objects.base64.urlsafe_b64encode(bytes(32)).decode())

    async def work(js: Any, obs: Any) -> None:
        await objects.put(js._nc, "T_DG", "x", io.BytesIO(b"abc" * C), timeout=10)
        with pytest.raises(nats.js.errors.DigestMismatchError):
            await obs.get("x", writeinto=io.BytesIO())

    _on(relay.url, "T_DG", work)


class _Breaks(io.RawIOBase):
    """A source that fails after some chunks: the disk under the envelope went away."""

    def __init__(self, good: int) -> None:
        self.left = good

    def read(self, n: int = -1) -> bytes:
        if self.left == 0:
            raise OSError("the envelope file went away")
        self.left -= 1
        return b"z" * n


def _chunk_subjects(info: Any) -> int:
    return len(info.state.subjects or {})


def test_a_put_that_fails_publishes_no_meta_and_the_owners_sweep_takes_its_chunks_later(relay) -> None:  # noqa: F811
    async def work(js: Any, obs: Any) -> None:
        with pytest.raises(OSError):
            await objects.put(js._nc, "T_FAIL", "broken", _Breaks(3), timeout=10)  # type: ignore[arg-type]
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await obs.get_info("broken")
        # A full bucket (its byte limit) refuses a chunk: no meta either.
        with pytest.raises(nats.js.errors.APIError) as full:
            await objects.put(js._nc, "T_FAIL", "too-big", io.BytesIO(os.urandom(40 * C)), timeout=10)
        assert mailbox._full(full.value)
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await obs.get_info("too-big")
        await objects.put(js._nc, "T_FAIL", "fine", io.BytesIO(b"kept"), timeout=10)
        chunks = await js.stream_info("OBJ_T_FAIL", subjects_filter="$O.T_FAIL.C.>")
        assert _chunk_subjects(chunks) == 3  # two failed puts' leftovers and the good object's
        assert await objects.sweep(js, "T_FAIL") == 0  # young: could be a put still in progress
        later = datetime.datetime.now(datetime.UTC) + objects.ORPHAN_AGE * 2
        assert await objects.sweep(js, "T_FAIL", now=later) == 2
        chunks = await js.stream_info("OBJ_T_FAIL", subjects_filter="$O.T_FAIL.C.>")
        assert _chunk_subjects(chunks) == 1
        assert (await obs.get("fine")).data == b"kept"  # a named object is never swept

    _on(relay.url, "T_FAIL", work, max_bytes=20 * C)


def test_a_hostile_meta_in_the_bucket_is_dropped_and_never_stalls_the_mailbox(two, tmp_path, relay, gage) -> None:  # noqa: F811
    """Anyone may publish a meta into a bucket: a link into a bucket the receiver may not read, a
    meta whose chunks are not there (nats-py's get would wait for them forever), one that is not
    JSON. Each envelope pointing at one is journaled and dropped, and the next one lands."""
    alice, bob = two
    addr = sealing.mailbox_address(sealing.load(bob.root, bob.identity.key).recipient)
    bucket = mailbox.bucket_name(addr)
    link = {"name": "l", "bucket": bucket, "nuid": "n1", "size": 0, "chunks": 0, "digest": "", "options": {"link": {"bucket": "ELSEWHERE", "name": "x"}}}
    missing = objects.meta(bucket, "m", "nochunks", 10 * C, 10, bytes(32), C)

    async def hostile() -> None:
        nc = await nats.connect(relay.url)
        js = nc.jetstream()
        for name, body in [("l", json.dumps(link).encode()), ("m", json.dumps(missing).encode()), ("j", b"not json")]:
            await js.publish(objects.meta_subject(bucket, name), body)  # no rollup: buckets refuse them
            await js.publish(mailbox.subject(addr), b"", headers={mailbox.HEADER: "1", mailbox.OBJECT_HEADER: name, "Nats-Msg-Id": name * 8})
        await nc.close()

    mailbox.run(hostile())
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 1000))
    assert json.loads(gage(alice, "deliver", bid, "--to", "bob", "--json").out)["via"] == "object"
    got = mailbox.run(asyncio.wait_for(mailbox.fetch(bob, relay.url, addr), 60))
    assert [o.dropped is not None for o in got.opened] == [True, True, True, False]
    assert got.opened[-1].id == bid and listing.find(bob, bid).state == "pending"
