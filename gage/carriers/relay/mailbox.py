"""Mailboxes on a NATS JetStream relay: create one, publish an envelope to one, fetch from one.

A mailbox is a JetStream stream on the subject `gage.mb.<address>` with a durable pull
consumer; its limits (messages and bytes) are the stream's, with the discard policy "new",
so a full mailbox refuses the newest envelope and never drops one already waiting. An
envelope too big for one message travels in the mailbox's object store bucket, and the
message in the mailbox points at it. The relay sees the subject, the size and the time:
the envelope is age ciphertext, and no header names the sender or the bundle.

Fetching acknowledges an envelope only after its bundle has landed (or it was journaled and
dropped), so a crash anywhere in between makes the relay deliver it again, and the import,
which is idempotent by bundle id, says "already there" rather than land it twice.
See spec/relay.md sections 1, 4 and 6.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

from gage.carriers.relay import landing, objects, taking
from gage.carriers.relay.errors import (
    PERMISSIONS,
    REFUSED_MSG,
    RelayError,
    refusal_text,
)
from gage.home import settings
from gage.home.layout import Home

SUBJECT_PREFIX = "gage.mb."
STREAM_PREFIX = "GAGE_MB_"
OBJECT_PREFIX = "GAGE_OB_"
CONSUMER = "inbox"
HEADER = "Gage-Envelope"
OBJECT_HEADER = "Gage-Object"
ENVELOPE_VERSION = "1"
# One message carries an envelope up to this size; a bigger one goes by the object store.
INLINE_MAX = 768 * 1024
DEFAULT_MAX_MSGS = 10_000
DEFAULT_MAX_BYTES = 1 << 30
ACK_WAIT = 120.0
CONNECT_TIMEOUT = 5.0


def subject(address: str) -> str:
    return SUBJECT_PREFIX + address


def stream_name(address: str) -> str:
    return STREAM_PREFIX + address


def bucket_name(address: str) -> str:
    return OBJECT_PREFIX + address


@contextlib.asynccontextmanager
async def connected(url: str, creds: str | None = None) -> AsyncIterator[Client]:
    """A connection that fails fast and once: a relay that is down is an error now, not a hang.

    A relay that does not let this user do something (per-user permissions, spec/relay.md
    section 8) says so only in an error message on the side, while the request itself would
    wait for its timeout: so a permissions violation stops the operation at once and is the
    error raised, naming what was refused.
    """
    refused: list[str] = []
    task = asyncio.current_task()

    async def on_error(exc: Exception) -> None:
        """nats-py reports every failed attempt here; the error raised below says it once."""
        if PERMISSIONS in str(exc).lower() and not refused:
            refused.append(str(exc))
            if task is not None and not task.done():
                task.cancel(REFUSED_MSG)

    # max_reconnect_attempts=0 would mean "try this server forever" to nats-py's first connect.
    kwargs: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "allow_reconnect": False,
        "max_reconnect_attempts": 1,
        "reconnect_time_wait": 0.2,
        "error_cb": on_error,
    }
    if creds:
        kwargs["user_credentials"] = creds
    # A cluster is given as its nodes' URLs, comma-separated: any node that answers will do.
    servers = [u.strip() for u in url.split(",") if u.strip()]
    try:
        nc = await nats.connect(servers=servers, **kwargs)
    except (TimeoutError, OSError, nats.errors.Error) as exc:
        raise RelayError(f"cannot reach the relay at {url}: {exc or type(exc).__name__}") from None
    try:
        yield nc
    except BaseException:
        if not refused:
            raise
        if task is not None and task.cancelling():
            task.uncancel()  # the cancel was ours: what stops the operation is the refusal below
        raise RelayError(refusal_text(refused[0])) from None
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


@dataclass(frozen=True)
class Mailbox:
    address: str
    url: str
    max_msgs: int
    max_bytes: int
    replicas: int

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "relay": self.url,
            "subject": subject(self.address),
            "max_msgs": self.max_msgs,
            "max_bytes": self.max_bytes,
            "replicas": self.replicas,
        }


async def create(
    url: str,
    address: str,
    *,
    creds: str | None = None,
    max_msgs: int = DEFAULT_MAX_MSGS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    replicas: int = 1,
    ack_wait: float = ACK_WAIT,
) -> Mailbox:
    """The stream, its consumer and its object bucket; again is harmless (limits are updated)."""
    config = api.StreamConfig(
        name=stream_name(address),
        subjects=[subject(address)],
        retention=api.RetentionPolicy.LIMITS,
        max_msgs=max_msgs,
        max_bytes=max_bytes,
        discard=api.DiscardPolicy.NEW,
        storage=api.StorageType.FILE,
        num_replicas=replicas,
        duplicate_window=120.0,
    )
    async with connected(url, creds) as nc:
        js = nc.jetstream()
        try:
            try:
                await js.add_stream(config)
            except nats.js.errors.BadRequestError:
                await js.update_stream(config)
            await js.add_consumer(
                stream_name(address),
                api.ConsumerConfig(
                    durable_name=CONSUMER,
                    ack_policy=api.AckPolicy.EXPLICIT,
                    ack_wait=ack_wait,
                    deliver_policy=api.DeliverPolicy.ALL,
                    max_ack_pending=1000,
                ),
            )
            await js.create_object_store(bucket_name(address), api.ObjectStoreConfig(max_bytes=max_bytes, replicas=replicas))
            await objects.sweep(js, bucket_name(address))  # what failed puts left (spec/relay.md section 4)
        except nats.js.errors.Error as exc:
            raise RelayError(f"the relay refused to create the mailbox: {exc}") from None
        except nats.errors.Error as exc:
            raise RelayError(f"the relay failed while creating the mailbox: {exc or type(exc).__name__}") from None
    return Mailbox(address=address, url=url, max_msgs=max_msgs, max_bytes=max_bytes, replicas=replicas)


def _full(exc: Exception) -> bool:
    text = str(exc).lower()
    return "maximum messages" in text or "maximum bytes" in text or "resource limits" in text or "err_code=10077" in text


# How long a delivery keeps trying after a failure on the way: a cluster that lost a node
# elects a new stream leader in seconds, longer on a loaded machine. Bounded, then reported.
PUBLISH_PATIENCE = 10.0


async def publish(url: str, address: str, envelope: Path, *, creds: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
    """Put one sealed envelope (a file) into the mailbox at `address`. Returns what the relay acknowledged.

    A failure on the way (a cluster node lost, an acknowledgement that never came) is tried
    again, on any node, under the same message id: the relay's duplicate window stores it
    once however many times it arrived. Refusals (no mailbox, full) are not retried.
    """
    msg_id = secrets.token_hex(16)  # random: the relay's dedupe window, never the bundle id
    deadline = time.monotonic() + PUBLISH_PATIENCE
    attempt = 0
    while True:
        try:
            return await _publish_once(url, address, envelope, msg_id, creds=creds, timeout=timeout)
        except _Transient as exc:
            attempt += 1
            pause = min(2.0, 0.5 * attempt)
            if time.monotonic() + pause > deadline:
                raise RelayError(f"the relay failed during the delivery: {exc}; it may not have arrived") from None
            await asyncio.sleep(pause)


class _Transient(Exception):
    """A publish that failed on the way, not one the relay refused: worth trying again."""


async def _publish_once(url: str, address: str, envelope: Path, msg_id: str, *, creds: str | None, timeout: float) -> dict[str, Any]:
    size = envelope.stat().st_size
    headers = {HEADER: ENVELOPE_VERSION, "Nats-Msg-Id": msg_id}
    conn = connected(url, creds)
    try:
        nc = await conn.__aenter__()
    except RelayError as exc:
        raise _Transient(str(exc)) from None
    try:
        ack = await _put(nc, address, envelope, size, headers, msg_id, timeout)
    except BaseException as exc:
        # Through the connection's exit, which turns a permissions violation into the refusal it is.
        await conn.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    await conn.__aexit__(None, None, None)
    via = "message" if size <= INLINE_MAX else "object"
    return {"stream": ack.stream, "seq": ack.seq, "bytes": size, "via": via, "duplicate": bool(ack.duplicate)}


async def _put(nc: Client, address: str, envelope: Path, size: int, headers: dict[str, str], msg_id: str, timeout: float) -> Any:
    """The envelope as the message's body, or by the mailbox's object store when it is big."""
    js = nc.jetstream(timeout=timeout)
    try:
        if size <= INLINE_MAX:
            ack = await js.publish(subject(address), envelope.read_bytes(), headers=headers, stream=stream_name(address))
        else:
            # Publishes only, into the recipient's bucket: nats-py's put would read it first.
            with open(envelope, "rb") as f:
                await objects.put(nc, bucket_name(address), msg_id, f, timeout=timeout)
            headers[OBJECT_HEADER] = msg_id
            ack = await js.publish(subject(address), b"", headers=headers, stream=stream_name(address))
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
    return ack


@dataclass
class Fetched:
    opened: list[landing.Opened]
    left: bool  # the relay may hold more (a limit on how many to take was reached)


async def fetch(
    home: Home,
    url: str,
    address: str,
    *,
    creds: str | None = None,
    limit: int | None = None,
    wait: float = 1.0,
    forever: bool = False,
    on_opened: Callable[[landing.Opened], None] | None = None,
    stop: Any = None,  # anything with is_set(): an asyncio or a threading Event
) -> Fetched:
    """Take envelopes until the mailbox is empty (or `limit`, or, with `forever`, until `stop`).

    Each is acknowledged only after it landed or was dropped (gage.carriers.relay.taking decides
    which, by the type of what went wrong); an error of this home's own (a full disk) stops the
    fetch and hands that envelope back unacknowledged, leaving it and all after it on the relay;
    a relay failure stops it with nothing journaled or acknowledged.
    """
    transport = {"relay": url, "mailbox": address}
    done: list[landing.Opened] = []
    max_size = landing.envelope_limit(settings.load(home).limits)
    sweeper = taking.Sweeper()
    async with connected(url, creds) as nc:
        js = nc.jetstream()
        try:
            sub = await js.pull_subscribe_bind(durable=CONSUMER, stream=stream_name(address))
            info = await js.consumer_info(stream_name(address), CONSUMER)
            ack_wait = float(info.config.ack_wait or ACK_WAIT)
        except nats.js.errors.NotFoundError:
            raise RelayError("this home has no mailbox on that relay: run `gage mailbox create` first") from None
        except (TimeoutError, nats.errors.Error) as exc:
            raise RelayError(f"the relay failed: {exc or type(exc).__name__}") from None
        while limit is None or len(done) < limit:
            if stop is not None and stop.is_set():
                break
            try:
                msgs = await sub.fetch(1, timeout=wait)
            except nats.errors.TimeoutError:
                await sweeper.maybe(js, stream_name(address), CONSUMER, bucket_name(address))
                if forever:
                    continue
                return Fetched(done, left=False)
            except (nats.errors.Error, nats.js.errors.Error) as exc:
                raise RelayError(f"the relay failed while fetching: {exc or type(exc).__name__}") from None
            for msg in msgs:
                work = taking.take(
                    nc, home, msg, bucket=bucket_name(address), object_header=OBJECT_HEADER, transport=transport, max_size=max_size
                )
                try:
                    taken = await taking.working(msg, ack_wait, work)
                except RelayError:
                    raise  # the relay failed: it cannot take a word from us either
                except Exception:
                    # This home's fault (a full disk) or one nobody foresaw: not acknowledged, but
                    # handed back at once, so the next fetch has it without waiting out the ack wait.
                    with contextlib.suppress(Exception):
                        await msg.nak()
                    raise
                opened = taken.opened
                try:
                    await msg.ack_sync(timeout=10)
                except (TimeoutError, nats.errors.Error) as exc:
                    # Landed but not acknowledged: the relay delivers it again, and it is
                    # "already there". Nothing is lost or doubled.
                    raise RelayError(f"landed {opened.id or 'an envelope'} but the relay did not take the acknowledgement: {exc or type(exc).__name__}") from None
                await taking.forget(nc, bucket_name(address), taken)
                if _last(msg):  # drained: what is left in the bucket unnamed is an orphan's
                    await sweeper.maybe(js, stream_name(address), CONSUMER, bucket_name(address))
                done.append(opened)
                if on_opened is not None:
                    on_opened(opened)
                if not forever and _last(msg):
                    return Fetched(done, left=False)  # the relay says none is waiting: no need to wait to be sure
    return Fetched(done, left=True)


def _last(msg: Msg) -> bool:
    try:
        return int(msg.metadata.num_pending) == 0
    except Exception:
        return False


def run(coro: Any) -> Any:
    """Run one relay operation from synchronous code (the CLI)."""
    return asyncio.run(coro)


