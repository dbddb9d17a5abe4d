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
import secrets
import shutil
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from gage.carriers.relay import landing, objects, objread
from gage.format.errors import GageError, GageIOError
from gage.home.layout import Home

# How often a fetch that runs for ever (`gage watch --mailbox`) sweeps its bucket's orphans.
SWEEP_EVERY = 600.0


@dataclass
class Taken:
    opened: landing.Opened
    obj: str | None = None  # the object to delete once acknowledged (one its message named, gage's name form only)
    nuid: str | None = None


async def working(msg: Msg, ack_wait: float, work: Awaitable[Taken]) -> Taken:
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


async def take(
    nc: Client, home: Home, msg: Msg, *, bucket: str, object_header: str, transport: dict[str, str], max_size: int
) -> Taken:
    """One message: its envelope to a scratch file, opened, landed or dropped; acknowledged by the caller."""
    scratch = _scratch(home)
    tmp = scratch / "envelope.age"
    again = False
    with contextlib.suppress(Exception):
        again = msg.metadata.num_delivered > 1
    try:
        headers = msg.headers or {}
        raw = headers.get(object_header)
        nuid: str | None = None
        gone: str | None = None  # the object deleted with the envelope: one its message named
        obj: objread.Named | None = None
        try:
            with open(tmp, "wb") as f:
                if raw is None:
                    f.write(msg.data)
                else:
                    obj = objread.named(headers)
                    # A message from an older gage names its object alone: it goes whatever its fate.
                    gone = obj.name if obj.size is None else None
                    meta = await objread.read(nc, bucket, obj, f, max_size=max_size)
                    gone, nuid = obj.name, meta.nuid
        except objread.ObjectError as exc:
            assert raw is not None
            dropped = landing.drop(home, exc, transport=transport, digest=landing.object_ref(raw), again=again)
            # Deleted only when a meta that matched the message was read (its chunks were bad): a
            # message naming what it does not match deletes nothing but what its own sender put.
            if exc.nuid is not None and obj is not None:
                gone = obj.name
            return Taken(dropped, gone, exc.nuid)
        except OSError as exc:
            raise GageIOError(f"cannot write the envelope into this home: {exc.strerror or exc}; nothing was acknowledged", path=str(home.staging)) from exc
        digest = landing.digest_of_file(tmp)

        def work() -> landing.Opened:
            try:
                with open(tmp, "rb") as f:
                    return landing.open_and_land(home, f, transport=transport, digest=digest)
            except GageIOError:
                raise  # this home's own trouble: leave the envelope on the relay
            except GageError as exc:
                return landing.drop(home, exc, transport=transport, digest=digest, again=again)
            except OSError as exc:  # a fault of this home no stage named: never a drop
                raise GageIOError(f"cannot land the envelope: {exc.strerror or exc}; nothing was acknowledged") from exc

        opened = await asyncio.get_running_loop().run_in_executor(None, work)
        return Taken(opened, gone, nuid)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def forget(nc: Client, bucket: str, taken: Taken) -> None:
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
