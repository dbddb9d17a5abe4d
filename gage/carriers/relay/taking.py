"""Taking one message from a mailbox: its envelope to a scratch file, opened, landed or dropped.

What happens to one message decides what is acknowledged, by the type of what went wrong:

- the envelope's own fault (it does not open, holds no bundle, is over a limit, its object is
  missing, malformed, oversized or not what its meta says): journaled once, with a bounded line,
  and acknowledged (`landing.drop`), so it never stalls the mailbox;
- the relay's fault (no answer within a step's deadline, the connection gone): `RelayError`,
  nothing journaled, nothing acknowledged;
- this home's fault (a full disk, a folder it may not write, a killed process): `GageIOError`
  (or no outcome at all), nothing acknowledged; the envelope waits for the next fetch.

See spec/relay.md sections 4 and 6.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import io
import secrets
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from gage.carriers.relay import landing, objects, objread
from gage.carriers.relay.errors import RelayError
from gage.carriers.testhook import kill_at
from gage.format.errors import GageError, GageIOError
from gage.home.layout import Home

# An envelope in its message up to this size is opened on the event loop itself (a few
# milliseconds); a bigger one, or one from the bucket, on a thread, so the relay still hears
# that the others are in hand.
INLINE_HERE = 64 << 10
# How often a fetch that runs for ever (`gage watch --mailbox`) sweeps its bucket's orphans.
SWEEP_EVERY = 600.0


async def working(msg: Msg, ack_wait: float, work: Awaitable[Any]) -> Any:
    """Run `work`, telling the relay it is still in hand (a big bundle takes longer than the ack
    wait), so it is not delivered again while it is landing; a crash stops the telling."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=max(0.5, ack_wait / 3))
        if done:
            return task.result()
        with contextlib.suppress(Exception):
            await msg.in_progress()


def _scratch(home: Home) -> Any:
    """A folder, not a file: reconcile tidies a killed fetch's scratch folders (tmp/import-*)."""
    try:
        home.staging.mkdir(parents=True, exist_ok=True)
        scratch = home.staging / f"import-relay-{secrets.token_hex(8)}"
        scratch.mkdir(mode=0o700)
    except OSError as exc:
        raise GageIOError(f"cannot make a scratch folder for the envelope: {exc.strerror or exc}; nothing was acknowledged", path=str(home.staging)) from exc
    return scratch


@dataclass
class Prepared:
    """One message made ready for its batch: an envelope opened into `scratch/b` (`sealed`), or
    a drop already journaled (`dropped`). Acknowledged only once its batch has landed."""

    msg: Msg
    scratch: Any
    sealed: landing.Sealed | None = None
    dropped: landing.Opened | None = None
    obj: str | None = None
    nuid: str | None = None
    nbytes: int = 0


async def prepare(
    nc: Client, home: Home, msg: Msg, *, bucket: str, object_header: str, transport: dict[str, str], max_size: int, opener: landing.Opener | None = None
) -> Prepared:
    """One message: its envelope to a scratch file, opened into a scratch bundle folder, or dropped
    (journaled once). Nothing lands here: the batch does (`landing.land_opened`). On a fault of
    this home (GageIOError) or the relay's (RelayError) the scratch is removed and it raises."""
    scratch = _scratch(home)
    ok = False
    try:
        prepared = await _prepare(
            nc, home, msg, scratch, bucket=bucket, object_header=object_header, transport=transport, max_size=max_size, opener=opener
        )
        ok = True
        return prepared
    finally:
        if not ok:
            shutil.rmtree(scratch, ignore_errors=True)


async def _prepare(
    nc: Client, home: Home, msg: Msg, scratch: Any, *, bucket: str, object_header: str, transport: dict[str, str], max_size: int, opener: landing.Opener | None
) -> Prepared:
    tmp = scratch / "envelope.age"
    again = False
    with contextlib.suppress(Exception):
        again = msg.metadata.num_delivered > 1
    headers = msg.headers or {}
    raw = headers.get(object_header)
    nuid: str | None = None
    gone: str | None = None  # the object deleted with the envelope: one its message named
    if raw is None:
        # In the message itself: opened from memory, no file written and read back.
        size, digest = len(msg.data), hashlib.sha256(msg.data).hexdigest()
    else:
        obj: objread.Named | None = None
        try:
            with open(tmp, "wb") as f:
                obj = objread.named(headers)
                # A message from an older gage names its object alone: it goes whatever its fate.
                gone = obj.name if obj.size is None else None
                meta = await objread.read(nc, bucket, obj, f, max_size=max_size)
                gone, nuid = obj.name, meta.nuid
        except objread.ObjectError as exc:
            dropped = landing.drop(home, exc, transport=transport, digest=landing.object_ref(raw), again=again)
            # Deleted only when a meta that matched the message was read (its chunks were bad): a
            # message naming what it does not match deletes nothing but what its own sender put.
            if exc.nuid is not None and obj is not None:
                gone = obj.name
            return Prepared(msg, scratch, dropped=dropped, obj=gone, nuid=exc.nuid)
        except OSError as exc:
            raise GageIOError(f"cannot write the envelope into this home: {exc.strerror or exc}; nothing was acknowledged", path=str(home.staging)) from exc
        size = tmp.stat().st_size
        digest = landing.digest_of_file(tmp)

    def work() -> Prepared:
        try:
            with io.BytesIO(msg.data) if raw is None else open(tmp, "rb") as f:
                landing.open_into(home, f, scratch / "b", opener)
        except GageIOError:
            raise  # this home's own trouble: leave the envelope on the relay
        except GageError as exc:
            dropped = landing.drop(home, exc, transport=transport, digest=digest, again=again)
            return Prepared(msg, scratch, dropped=dropped, obj=gone, nuid=nuid, nbytes=size)
        except OSError as exc:  # a fault of this home no stage named: never a drop
            raise GageIOError(f"cannot open the envelope: {exc.strerror or exc}; nothing was acknowledged") from exc
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # opened: only the bundle folder waits for the batch
        return Prepared(msg, scratch, sealed=landing.Sealed(scratch / "b", transport, digest), obj=gone, nuid=nuid, nbytes=size)

    if raw is None and size <= INLINE_HERE:
        return work()  # a small envelope: opened at once, cheaper than a hop to a thread
    return await asyncio.get_running_loop().run_in_executor(None, work)


def land(home: Home, batch: list[Prepared]) -> list[landing.Opened | GageError]:
    """The batch's opened envelopes landed together; a refusal of one (not a fault of this home)
    is that envelope's drop, journaled once. One outcome per Prepared, in order."""
    sealed = [p for p in batch if p.sealed is not None]
    landed = iter(landing.land_opened(home, [p.sealed for p in sealed if p.sealed is not None]) if sealed else [])
    out: list[landing.Opened | GageError] = []
    for p in batch:
        if p.dropped is not None:
            out.append(p.dropped)
            continue
        got = next(landed)
        unforeseen = type(got) is GageError and got.__cause__ is not None  # a bug's, not the envelope's: kept
        if isinstance(got, GageError) and not isinstance(got, GageIOError) and not unforeseen:
            assert p.sealed is not None
            again = False
            with contextlib.suppress(Exception):
                again = p.msg.metadata.num_delivered > 1
            got = landing.drop(home, got, transport=p.sealed.transport, digest=p.sealed.digest, again=again)
        out.append(got)
    return out


async def working_all(msgs: list[Msg], ack_wait: float, work: Awaitable[Any]) -> Any:
    """`working` for a batch: every message of it is told to the relay as still in hand."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=max(0.5, ack_wait / 3))
        if done:
            return task.result()
        for msg in msgs:
            with contextlib.suppress(Exception):
                await msg.in_progress()


def forget_scratch(batch: list[Prepared]) -> None:
    for p in batch:
        shutil.rmtree(p.scratch, ignore_errors=True)


async def land_and_ack(
    nc: Client,
    home: Home,
    bucket: str,
    ack_wait: float,
    batch: list[Prepared],
    done: list[landing.Opened] | None,
    on_opened: Callable[[landing.Opened], None] | None,
) -> int:
    """Land a batch (one import batch, gage.inbox.landmany), then acknowledge each envelope whose
    outcome is durable: landed and journaled, already there, or dropped and journaled. One this
    home could not land (GageIOError) is handed back unacknowledged and the fetch stops, after
    the others are acknowledged. Each acknowledged outcome goes to `on_opened` and, unless it is
    None, `done`; how many there were is returned."""
    if not batch:
        return 0
    try:
        outcomes = await working_all(
            [p.msg for p in batch], ack_wait, asyncio.get_running_loop().run_in_executor(None, land, home, batch)
        )
    finally:
        forget_scratch(batch)
    kill_at("fetch-landed")
    failed: GageError | None = None
    acked = 0
    for p, got in zip(batch, outcomes, strict=True):
        if isinstance(got, GageError):
            failed = failed or got
            with contextlib.suppress(Exception):
                await p.msg.nak()
            continue
        try:
            await p.msg.ack_sync(timeout=10)
        except (TimeoutError, nats.errors.Error) as exc:
            # Landed but not acknowledged: the relay delivers it again, and it is
            # "already there". Nothing is lost or doubled.
            raise RelayError(f"landed {got.id or 'an envelope'} but the relay did not take the acknowledgement: {exc or type(exc).__name__}") from None
        kill_at("fetch-acked")
        await forget(nc, bucket, p)
        got.nbytes = p.nbytes
        acked += 1
        if done is not None:
            done.append(got)
        if on_opened is not None:
            on_opened(got)
    if failed is not None:  # this home's fault (a full disk), or an error nobody foresaw
        why = failed.message.replace("; nothing was imported", "")
        raise GageIOError(f"{why}; nothing was acknowledged, the envelope stays on the relay", path=failed.path) from failed
    return acked


async def forget(nc: Client, bucket: str, taken: Prepared) -> None:
    """After the acknowledgement: the object goes (best effort: what stays is swept later)."""
    if taken.obj is not None:
        with contextlib.suppress(GageError):
            await objread.delete(nc, bucket, taken.obj, taken.nuid)


class Sweeper:
    """Sweeps the bucket's orphans when the mailbox is drained, at most every SWEEP_EVERY seconds.

    Drained is the consumer's word: nothing pending and nothing delivered but unacknowledged.
    Then no message names any meta in the bucket (every one was taken), so a meta older than
    objects.ORPHAN_AGE is a stranger's that no message will ever name (or one whose message the
    mailbox refused), and goes with its chunks."""

    def __init__(self) -> None:
        self.last: float | None = None

    async def maybe(self, js: Any, stream: str, consumer: str, bucket: str, *, now: datetime.datetime | None = None) -> int:
        if self.last is not None and time.monotonic() - self.last < SWEEP_EVERY:
            return 0
        self.last = time.monotonic()
        with contextlib.suppress(Exception):  # best effort: an error here loses nothing
            info = await js.consumer_info(stream, consumer)
            drained = not info.num_pending and not info.num_ack_pending
            return int(await objects.sweep(js, bucket, drained=drained, now=now))
        return 0
