"""Writing an envelope into a recipient's object-store bucket with publishes only.

nats-py's `ObjectStore.put` first reads the object's existing meta (a stream info and a
stream message get), and a NATS permission cannot narrow those reads to one bucket the sender
does not own: a wildcard is a whole token, so the lines a sender would need read every stream's
information and stored messages, other people's mailboxes included (spec/relay.md section 8).
A sender has no use for those reads: every delivery writes a new object under a fresh random
name. So this writes the object itself, in exactly the layout ADR-20 and the clients read
(nats-py's `ObjectStore.get`, the Go client): the chunks published to `$O.<bucket>.C.<nuid>`,
then the meta JSON to `$O.<bucket>.M.<base64url name>`, each publish acknowledged by the bucket's
stream. The meta carries no `Nats-Rollup` header: buckets refuse rollups (a stranger's rollup
would wipe what waits there). The object's name and its chunks' nuid are fresh random values that
appear in no header a stranger can learn (spec/relay.md section 8.6): the mailbox message names the
object with its size and SHA-256, and the reader takes only a meta that matches them
(gage.carriers.relay.objread). The sender needs to publish there and nothing that reads.

Streamed: a chunk is read, published and forgotten; at most WINDOW chunks wait for their
acknowledgements, so memory is bounded by WINDOW * CHUNK whatever the envelope's size. The meta
is published only after every chunk was acknowledged: a failed or refused put publishes no meta,
so no reader ever sees the object. The chunks it did store are garbage the sender may not purge
(a purge's subject filter is in the request's body, so a permission to purge one's own leftovers
would be a permission to purge anyone's bucket); the bucket's byte limit bounds them, and the
bucket's owner sweeps them (`sweep`).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import datetime
import hashlib
import json
import secrets
from typing import Any, BinaryIO

import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

# The mailbox message of a big envelope names its object with these (spec/relay.md section 4): the
# name, 32 random hex digits; the size in bytes, decimal; the digest, as the meta writes it.
NAME_HEADER = "Gage-Object"
SIZE_HEADER = "Gage-Object-Size"
DIGEST_HEADER = "Gage-Object-Digest"

# ADR-20's default chunk, and what nats-py's put uses: readers do not depend on it.
CHUNK = 128 * 1024
# Chunks in flight, waiting for their acknowledgements: 2 MiB at most.
WINDOW = 16
# A chunk subject with no meta naming it, older than this, is a put that died: swept.
ORPHAN_AGE = datetime.timedelta(hours=1)


def new_name() -> str:
    """A big envelope's object name: random, never a message id or anything else a stranger sees."""
    return secrets.token_hex(16)


def stream_of(bucket: str) -> str:
    return f"OBJ_{bucket}"


def chunk_subject(bucket: str, nuid: str) -> str:
    return f"$O.{bucket}.C.{nuid}"


def meta_subject(bucket: str, name: str) -> str:
    """The name base64url-encoded with its padding, as nats-py and the Go client encode it."""
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


def digest_text(sha256: bytes) -> str:
    """`SHA-256=<base64url with padding>`, the digest nats-py writes and checks on get."""
    return "SHA-256=" + base64.urlsafe_b64encode(sha256).decode()


def meta(bucket: str, name: str, nuid: str, size: int, chunks: int, sha256: bytes, chunk_size: int) -> dict[str, Any]:
    """The object's info, the fields nats-py's put writes, but `mtime`: ADR-20 says it is never
    stored (a reader takes the meta message's time), and nats-py reads it as optional."""
    return {
        "name": name,
        "bucket": bucket,
        "nuid": nuid,
        "size": size,
        "chunks": chunks,
        "digest": digest_text(sha256),
        "deleted": False,
        "options": {"max_chunk_size": chunk_size},
    }


async def put(
    nc: Client,
    bucket: str,
    name: str,
    source: BinaryIO,
    *,
    timeout: float,
    chunk_size: int = CHUNK,
    window: int = WINDOW,
) -> dict[str, Any]:
    """Store what `source` holds as the object `name` in `bucket`; returns the meta published.

    Raises what the publishes raise (nats-py's errors: no stream answering, an API error such
    as a full bucket, a timeout); then no meta was published.
    """
    stream = stream_of(bucket)
    # Random, not a NUID (whose tail counts on from one put to the next): nobody but the reader of
    # the meta may name these chunks, so nobody else can put a chunk among them.
    nuid = secrets.token_hex(16)
    subj = chunk_subject(bucket, nuid)
    h = hashlib.sha256()
    size = chunks = 0
    acks = _Acks(nc)
    loop = asyncio.get_running_loop()
    try:
        await acks.start()
        while True:
            data = await loop.run_in_executor(None, source.read, chunk_size)
            if not data:
                break
            h.update(data)
            # Published in order from this one coroutine, so the chunks reach the stream in the
            # order they were read; only the acknowledgements are waited for later.
            await acks.publish(subj, data, stream)
            size += len(data)
            chunks += 1
            while acks.waiting() >= window:
                await acks.oldest(timeout)
        while acks.waiting():
            await acks.oldest(timeout)
    finally:
        await acks.stop()
    info = meta(bucket, name, nuid, size, chunks, h.digest(), chunk_size)
    await nc.jetstream().publish(meta_subject(bucket, name), json.dumps(info).encode(), timeout=timeout, stream=stream)  # no rollup: the bucket refuses them
    return info


class _Acks:
    """JetStream publishes whose acknowledgements come back on one inbox, waited for in order.

    nats-py's `publish_async` would do, but in 2.16 an error acknowledgement (a full bucket)
    raises inside its reply handler and leaves the publish's future waiting forever.
    """

    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._prefix = self._nc.new_inbox()
        self._sent = 0
        self._futures: collections.deque[asyncio.Future[api.PubAck]] = collections.deque()
        self._by_token: dict[str, asyncio.Future[api.PubAck]] = {}
        self._sub: Any = None

    async def start(self) -> None:
        self._sub = await self._nc.subscribe(self._prefix + ".*", cb=self._reply)

    async def publish(self, subject: str, data: bytes, stream: str) -> None:
        token = str(self._sent)
        self._sent += 1
        fut: asyncio.Future[api.PubAck] = asyncio.get_running_loop().create_future()
        self._by_token[token] = fut
        self._futures.append(fut)
        await self._nc.publish(subject, data, reply=f"{self._prefix}.{token}", headers={api.Header.EXPECTED_STREAM: stream})

    def waiting(self) -> int:
        return len(self._futures)

    async def oldest(self, timeout: float) -> api.PubAck:
        return await asyncio.wait_for(self._futures.popleft(), timeout)

    async def _reply(self, msg: Msg) -> None:
        fut = self._by_token.pop(msg.subject.rsplit(".", 1)[1], None)
        if fut is None or fut.done():
            return
        if msg.headers and msg.headers.get(api.Header.STATUS) == "503":
            fut.set_exception(nats.js.errors.NoStreamResponseError())
            return
        try:
            resp = json.loads(msg.data)
            if "error" in resp:
                nats.js.errors.APIError.from_error(resp["error"])  # raises the error it names
            fut.set_result(api.PubAck.from_response(resp))
        except Exception as exc:  # noqa: BLE001  (whatever it was, it is this publish's failure)
            fut.set_exception(exc)

    async def stop(self) -> None:
        for fut in self._futures:
            if fut.done() and not fut.cancelled():
                fut.exception()  # retrieved: the error raised is the first one's
            fut.cancel()
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()


# Subjects one sweep looks at: a bucket a stranger filled with metas is swept over several fetches.
SWEEP_MAX = 1000


async def sweep(js: JetStreamContext, bucket: str, *, now: datetime.datetime | None = None, drained: bool = False) -> int:
    """The bucket's owner purges what no envelope will ever read. Returns how many objects went.

    - Chunks no meta names whose newest chunk is older than ORPHAN_AGE: what a put that failed
      (or was killed) left. A put still in progress has a chunk newer than that.
    - With `drained` (the mailbox's consumer has nothing pending or unacknowledged, so no
      waiting message names any meta): every meta older than ORPHAN_AGE, and its chunks. A
      stranger's object with no mailbox message, or one whose message the mailbox refused,
      would otherwise count against the bucket for ever.
    """
    stream = stream_of(bucket)
    now = now or datetime.datetime.now(datetime.UTC)
    gone = 0
    named = set()
    minfo = await js.stream_info(stream, subjects_filter=f"$O.{bucket}.M.>")
    for s in sorted(minfo.state.subjects or {})[:SWEEP_MAX]:
        msg = await js.get_last_msg(stream, s)
        nuid = None
        with contextlib.suppress(ValueError, AttributeError, TypeError):  # a meta that is not JSON names no chunks
            nuid = json.loads(msg.data or b"{}").get("nuid")
        old = msg.time is not None and now - msg.time >= ORPHAN_AGE
        if drained and old:
            if isinstance(nuid, str) and nuid.isalnum() and len(nuid) <= 64:
                await js.purge_stream(stream, subject=chunk_subject(bucket, nuid))
            await js.purge_stream(stream, subject=s)
            gone += 1
        elif isinstance(nuid, str):
            named.add(nuid)
    info = await js.stream_info(stream, subjects_filter=f"$O.{bucket}.C.>")
    chunked = {s.rsplit(".", 1)[1] for s in (info.state.subjects or {})}
    for nuid in sorted(chunked - named)[:SWEEP_MAX]:
        last = await js.get_last_msg(stream, chunk_subject(bucket, nuid))
        if last.time is not None and now - last.time < ORPHAN_AGE:
            continue
        await js.purge_stream(stream, subject=chunk_subject(bucket, nuid))
        gone += 1
    return gone
