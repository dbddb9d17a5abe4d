"""Mailboxes on a NATS JetStream relay: create one, publish an envelope to one, fetch from one.

A mailbox is a JetStream stream on the subject `gage.mb.<address>` with a durable pull
consumer; its limits (messages and bytes) are the stream's, with the discard policy "new",
so a full mailbox refuses the newest envelope and never drops one already waiting. An
envelope too big for one message travels in the mailbox's object store bucket, and the
message in the mailbox points at it. The relay sees the subject, the size and the time:
the envelope is age ciphertext, and no header names the sender or the bundle.

Fetching lands envelopes in batches and acknowledges each only after its batch has landed
(or it was journaled and dropped), so a crash anywhere in between makes the relay deliver it again, and the import,
which is idempotent by bundle id, says "already there" rather than land it twice.
See spec/relay.md sections 1, 4 and 6.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from gage.carriers.relay import landing, objects, pull, rendezvous, streams, taking
from gage.carriers.relay.connection import CONNECT_TIMEOUT, SHARED_API_PREFIX, connected
from gage.carriers.relay.creds import Creds
from gage.carriers.relay.errors import (
    RelayError,
    RelayUnreachable,
)
from gage.carriers.testhook import kill_at
from gage.home import settings
from gage.home.layout import Home

SUBJECT_PREFIX = streams.SUBJECT_PREFIX
STREAM_PREFIX = streams.STREAM_PREFIX
OBJECT_PREFIX = streams.OBJECT_PREFIX
CONSUMER = streams.CONSUMER
HEADER = "Gage-Envelope"
OBJECT_HEADER = objects.NAME_HEADER
ENVELOPE_VERSION = "1"
# One message carries an envelope up to this size; a bigger one goes by the object store.
INLINE_MAX = 768 * 1024
DEFAULT_MAX_MSGS = 10_000
DEFAULT_MAX_BYTES = 256 << 20  # JetStream reserves it (and the bucket the same) when the stream is made: hundreds fit a disk
ACK_WAIT = 120.0
# A fetch lands what it takes in batches of at most this many envelopes, or about this many
# envelope bytes (a big envelope lands alone): memory stays flat however many wait, and an
# envelope is acknowledged only once its batch is durable (spec/relay.md section 7).
BATCH_COUNT = 128
BATCH_BYTES = 64 << 20
__all__ = ["CONNECT_TIMEOUT", "SHARED_API_PREFIX", "connected"]  # where the other relay modules find them


def subject(address: str) -> str:
    return SUBJECT_PREFIX + address


def stream_name(address: str) -> str:
    return STREAM_PREFIX + address


def bucket_name(address: str) -> str:
    return OBJECT_PREFIX + address


@dataclass(frozen=True)
class Mailbox:
    address: str
    url: str
    max_msgs: int
    max_bytes: int
    replicas: int
    kept: tuple[str, ...] = ()  # what was asked but stays as the relay has it, in words
    by_operator: bool = False  # made by the relay's operator: this user may not change it

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "relay": self.url,
            "subject": subject(self.address),
            "max_msgs": self.max_msgs,
            "max_bytes": self.max_bytes,
            "replicas": self.replicas,
            "kept": list(self.kept),
            "made_by_operator": self.by_operator,
        }


async def create(
    url: str,
    address: str,
    *,
    creds: Creds = None,
    max_msgs: int = DEFAULT_MAX_MSGS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    replicas: int = 1,
    ack_wait: float = ACK_WAIT,
    directory: bool = False,
) -> Mailbox:
    """The stream, its consumer, its object bucket, and with `directory` the directory (the
    operator's `mailbox create --address`; elsewhere the first publish makes it) (gage.carriers.relay.streams);
    again updates what may be updated and names what may not. On a shared relay only the operator
    makes them: a person whose mailbox the operator made is told so, and nothing fails."""
    kept: list[str] = []
    async with connected(url, creds) as nc:
        js = nc.jetstream()
        try:
            box = await streams.ensure(js, streams.mailbox_config(address, max_msgs=max_msgs, max_bytes=max_bytes, replicas=replicas))
            kept += box.kept
            await streams.ensure_consumer(js, stream_name(address), streams.consumer_config(ack_wait))
            kept += (await streams.ensure(js, streams.bucket_config(address, max_bytes=max_bytes, replicas=replicas))).kept
            if directory:  # the operator's shared streams: the directory, and the rendezvous of `gage invite`
                kept += (await streams.ensure(js, streams.directory_config(replicas=replicas))).kept
                await rendezvous.ensure_stream(nc)
            await objects.sweep(js, bucket_name(address))  # what failed puts left (spec/relay.md section 4)
        except streams.NotPermitted:
            return await _made_by_operator(js, url, address)
        except nats.js.errors.Error as exc:
            if _no_room(exc):
                raise RelayError(
                    f"the relay's store has no room for this mailbox: JetStream reserves a mailbox's whole byte limit, and its "
                    f"bucket's the same (2 x {max_bytes:,} bytes here), when it is made, and its store is spoken for "
                    f"(the relay says: {exc}). Give smaller limits (--max-bytes, or [limits] mailbox_bytes in the people file) "
                    "or a bigger store ([limits] store, and the disk under it); `gage relay config` prints the arithmetic "
                    "(spec/relay.md section 8.4)"
                ) from None
            raise RelayError(f"the relay refused to create the mailbox: {exc}") from None
        except nats.errors.Error as exc:
            raise RelayError(f"the relay failed while creating the mailbox: {exc or type(exc).__name__}") from None
    return Mailbox(address=address, url=url, max_msgs=max_msgs, max_bytes=max_bytes, replicas=replicas, kept=tuple(kept))


async def _made_by_operator(js: Any, url: str, address: str) -> Mailbox:
    """A person on a shared relay: their mailbox is there (the operator made it) or it is not."""
    try:
        info = await js.stream_info(stream_name(address))
    except (nats.js.errors.Error, nats.errors.Error):
        raise RelayError(
            "this relay does not let this user make a mailbox (on a shared relay its operator makes them, "
            "spec/relay.md section 8), and it has none at this home's address yet: give the relay's operator "
            f"your mailbox address {address} (`gage mailbox show`)"
        ) from None
    c = info.config
    note = "made by the relay's operator: its limits are the operator's to change"
    return Mailbox(address=address, url=url, max_msgs=c.max_msgs, max_bytes=c.max_bytes, replicas=c.num_replicas, kept=(note,), by_operator=True)


def _no_room(exc: Exception) -> bool:
    """JetStream's "insufficient storage resources" (10047) or an account's limits (10027, 10028)."""
    text = str(exc).lower()
    return "insufficient" in text or any(f"err_code={c}" in text for c in (10047, 10027, 10028)) or "resources exceeded" in text


def _full(exc: Exception) -> bool:
    text = str(exc).lower()
    return "maximum messages" in text or "maximum bytes" in text or "resource limits" in text or "err_code=10077" in text


# How long a delivery keeps trying after a failure on the way: a cluster that lost a node
# elects a new stream leader in seconds, longer on a loaded machine. Bounded, then reported.
PUBLISH_PATIENCE = 10.0
CONNECT_PATIENCE = 0.8  # but no node reached (a random pick may be a dead one) this long: down, said in seconds, not after a hang


async def publish(
    url: str, address: str, envelope: Path, *, creds: Creds = None, timeout: float = 30.0, msg_id: str | None = None,
    sent_before: bool = False,
) -> dict[str, Any]:
    """Put one sealed envelope (a file) into the mailbox at `address`. Returns what the relay acknowledged.

    A failure on the way (a cluster node lost, an acknowledgement that never came) is tried
    again, on any node, under the same message id: the relay's duplicate window stores it
    once however many times it arrived. Refusals (no mailbox, full) are not retried. A queued
    delivery gives its own `msg_id`, the same at every try, so a try after a crash is one too, and
    `sent_before` when an earlier try of it (another process's) may have published it: a duplicate is then its own.
    """
    sending = _Sending(msg_id=msg_id or secrets.token_hex(16), name=objects.new_name(), sent=sent_before)
    deadline = time.monotonic() + PUBLISH_PATIENCE
    attempt = 0
    unreachable: float | None = None  # since when no node could be reached
    while True:
        try:
            return await _publish_once(url, address, envelope, sending, creds=creds, timeout=timeout)
        except _Unreachable as exc:
            unreachable = unreachable or time.monotonic()
            if time.monotonic() - unreachable > CONNECT_PATIENCE:
                raise RelayUnreachable(f"{exc}; nothing was delivered") from None
            await asyncio.sleep(0.1)
        except _Transient as exc:
            unreachable = None
            attempt += 1
            pause = min(2.0, 0.5 * attempt)
            if time.monotonic() + pause > deadline:
                raise RelayUnreachable(f"the relay failed during the delivery: {exc}; it may not have arrived") from None
            await asyncio.sleep(pause)


@dataclass
class _Sending:
    """One delivery across its attempts: its message id and object name (random, and unrelated to
    each other: the relay tells anyone a mailbox's last message id, spec/relay.md section 8.6),
    the headers naming its object once it is put, and whether its message was ever sent."""

    msg_id: str
    name: str
    object_headers: dict[str, str] | None = None
    sent: bool = False


class _Transient(Exception):
    """A publish that failed on the way, not one the relay refused: worth trying again."""


class _Unreachable(Exception):
    """No connection at all: tried again only briefly."""


async def _publish_once(url: str, address: str, envelope: Path, sending: _Sending, *, creds: Creds, timeout: float) -> dict[str, Any]:
    size = envelope.stat().st_size
    conn = connected(url, creds)
    try:
        nc = await conn.__aenter__()
    except RelayUnreachable as exc:  # not a refusal (a login refused is raised as it is: no try fixes it)
        raise _Unreachable(str(exc)) from None
    try:
        kill_at("publishing")
        ack = await _put(nc, address, envelope, size, sending, timeout)
    except BaseException as exc:
        # Through the connection's exit, which turns a permissions violation into the refusal it is.
        await conn.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    await conn.__aexit__(None, None, None)
    via = "message" if size <= INLINE_MAX else "object"
    return {"stream": ack.stream, "seq": ack.seq, "bytes": size, "via": via, "duplicate": bool(ack.duplicate)}


async def _put(nc: Client, address: str, envelope: Path, size: int, sending: _Sending, timeout: float) -> Any:
    """The envelope as the message's body, or by the mailbox's object store when it is big."""
    js = nc.jetstream(timeout=timeout)
    headers = {HEADER: ENVELOPE_VERSION, "Nats-Msg-Id": sending.msg_id}
    try:
        if size <= INLINE_MAX:
            body = envelope.read_bytes()
        else:
            if sending.object_headers is None:  # put once: an attempt after it only sends the message again
                # Publishes only, into the recipient's bucket: nats-py's put would read it first.
                with open(envelope, "rb") as f:
                    info = await objects.put(nc, bucket_name(address), sending.name, f, timeout=timeout)
                sending.object_headers = {
                    objects.NAME_HEADER: sending.name,
                    objects.SIZE_HEADER: str(info["size"]),
                    objects.DIGEST_HEADER: info["digest"],
                }
            body, headers = b"", {**headers, **sending.object_headers}
        before, sending.sent = sending.sent, True
        ack = await js.publish(subject(address), body, headers=headers, stream=stream_name(address))
    except nats.js.errors.NoStreamResponseError:
        # No mailbox there, or (in a cluster) none answering for a moment: tried again.
        raise _Transient("there is no mailbox at that address on this relay (nothing answers on its subject)") from None
    except (nats.js.errors.NotFoundError, nats.js.errors.BucketNotFoundError):
        raise RelayError("there is no mailbox at that address on this relay") from None
    except nats.js.errors.APIError as exc:
        if _full(exc):
            raise RelayError(f"the mailbox is full (its limits on the relay): {exc.description or exc}") from None
        if isinstance(exc, nats.js.errors.ServiceUnavailableError) or (exc.code is not None and exc.code >= 500):
            raise _Transient(f"{exc.description or exc}") from None
        raise RelayError(f"the relay refused the envelope: {exc.description or exc}") from None
    except (nats.errors.Error, TimeoutError) as exc:
        raise _Transient(f"{exc or type(exc).__name__}") from None
    if ack.duplicate and not before:
        # The relay kept another message under this id, and no earlier attempt of this delivery
        # was ever sent: it is not ours (spec/relay.md section 4). Said, never taken for delivered.
        raise RelayError(
            "the relay says a message with this delivery's id is already in the mailbox, and this delivery never sent one "
            "before: it was not stored; nothing was delivered (deliver again: a new delivery has a new id)"
        )
    return ack


@dataclass
class Fetched:
    opened: list[landing.Opened]  # each envelope's outcome, in order; empty unless kept (`keep`)
    left: bool  # the relay may hold more (a limit on how many to take was reached)
    count: int = 0  # how many envelopes came to an outcome (landed, already there, dropped)


async def fetch(
    home: Home,
    url: str,
    address: str,
    *,
    creds: Creds = None,
    limit: int | None = None,
    wait: float = 1.0,
    forever: bool = False,
    on_opened: Callable[[landing.Opened], None] | None = None,
    stop: Any = None,  # anything with is_set(): an asyncio or a threading Event
    keep: bool = True,
) -> Fetched:
    """Take envelopes until the mailbox is empty (or `limit`, or, with `forever`, until `stop`).

    `keep`: the outcomes are returned in `Fetched.opened`; without it each goes to `on_opened`
    alone, so memory stays flat however many are fetched (the command line, a watcher).

    Each is acknowledged only after it landed or was dropped (gage.carriers.relay.taking decides
    which, by the type of what went wrong); an error of this home's own (a full disk) stops the
    fetch and hands that envelope back unacknowledged, leaving it and all after it on the relay;
    a relay failure stops it with nothing journaled or acknowledged.
    """
    transport = {"relay": url, "mailbox": address}
    done: list[landing.Opened] = []
    count = 0
    max_size = landing.envelope_limit(settings.load(home).limits)
    sweeper = taking.Sweeper()
    async with connected(url, creds) as nc:
        js = nc.jetstream()
        try:
            info = await js.consumer_info(stream_name(address), CONSUMER)
            ack_wait = float(info.config.ack_wait or ACK_WAIT)
        except nats.js.errors.NotFoundError:
            raise RelayError("this home has no mailbox on that relay: run `gage mailbox create` first") from None
        except (TimeoutError, nats.errors.Error) as exc:
            raise RelayError(f"the relay failed: {exc or type(exc).__name__}") from None
        while limit is None or count < limit:
            if stop is not None and stop.is_set():
                break
            want = BATCH_COUNT if limit is None else min(BATCH_COUNT, limit - count)
            try:
                # Not nats-py's pull subscription: it reads a status from headers a sender stored (gage.carriers.relay.pull).
                msgs = await pull.take(nc, stream_name(address), CONSUMER, batch=want, wait=wait)
            except (nats.errors.Error, nats.js.errors.Error) as exc:
                raise RelayError(f"the relay failed while fetching: {exc or type(exc).__name__}") from None
            if not msgs:
                await sweeper.maybe(js, stream_name(address), CONSUMER, bucket_name(address))
                if forever:
                    continue
                return Fetched(done, left=False, count=count)
            batch: list[taking.Prepared] = []
            try:
                opener = landing.Opener(home)  # the key and pending read once for what this pull took
                for k, msg in enumerate(msgs):
                    work = taking.prepare(
                        nc, home, msg, bucket=bucket_name(address), object_header=OBJECT_HEADER, transport=transport, max_size=max_size,
                        opener=opener,
                    )
                    batch.append(await taking.working(msg, ack_wait, work))
                    if sum(p.nbytes for p in batch) >= BATCH_BYTES and k + 1 < len(msgs):
                        count += await taking.land_and_ack(nc, home, bucket_name(address), ack_wait, batch, done if keep else None, on_opened)
                        batch = []
                count += await taking.land_and_ack(nc, home, bucket_name(address), ack_wait, batch, done if keep else None, on_opened)
                batch = []
            except BaseException:
                # This home's fault (a full disk), the relay's, or one nobody foresaw: what was not
                # acknowledged is handed back at once, so the next fetch has it without waiting out
                # the ack wait; what landed was acknowledged above and stays landed.
                for msg in msgs:
                    if not msg.is_acked:
                        with contextlib.suppress(Exception):
                            await msg.nak()
                taking.forget_scratch(batch)
                raise
            if msgs and _last(msgs[-1]):  # drained: what is left in the bucket unnamed is an orphan's
                await sweeper.maybe(js, stream_name(address), CONSUMER, bucket_name(address))
                if not forever:
                    return Fetched(done, left=False, count=count)  # the relay says none is waiting: no need to wait to be sure
    return Fetched(done, left=True, count=count)


def _last(msg: Msg) -> bool:
    try:
        return int(msg.metadata.num_pending) == 0
    except Exception:
        return False


def run(coro: Any) -> Any:
    """Run one relay operation from synchronous code (the CLI)."""
    return asyncio.run(coro)


