"""Taking the next messages from a mailbox's consumer, telling an envelope from the server's word by
where it came from, never by its headers.

nats-py's pull subscription reads a message's status from its headers, and it merges the headers a
publisher stored with the status line the server writes. Anyone may publish into a mailbox, with any
headers (spec/relay.md section 8.6): a stored message with a `Status: 408` header was taken for the
server's "no messages" (the fetch stopped, everything after it waiting for the next one), `Status:
100` for a heartbeat (swallowed, never acknowledged), `Status: 400` for an error (the fetch failed).
Here the test is the reply subject: the consumer delivers every stored message with its
acknowledgement subject (`$JS.ACK.<stream>.<consumer>...`), and the server's own status messages
(no messages, a request that expired, a heartbeat) come with none. So a stored message is an
envelope to take, whatever its headers say, and only the server ends a pull.
"""

from __future__ import annotations

import json
import time

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg

from gage.carriers.relay.connection import api_subject
from gage.carriers.relay.errors import RelayError

# The server's answers that end a pull with nothing (more) to hand out.
_DONE = frozenset({"404", "408", "409"})
_HEARTBEAT = "100"
_NO_RESPONDERS = "503"


def is_delivery(msg: Msg) -> bool:
    """A message the consumer delivered (stored by someone), not a status from the server."""
    return bool(msg.reply) and msg.reply.startswith("$JS.ACK.")


async def take(nc: Client, stream: str, consumer: str, *, batch: int, wait: float) -> list[Msg]:
    """Up to `batch` messages from the consumer, waiting at most `wait` seconds for the first.

    What is waiting is asked for at once (`no_wait`: the server hands out what it has, then says
    "no messages"); only when nothing waits is one message waited for. A pull that waited for a
    whole batch would outlast the ack wait of its first messages, which the server would then hand
    out again in the same pull. An empty list is an empty mailbox. A relay that does not answer, or
    answers with an error, raises RelayError (nothing was taken: what was handed out is delivered
    again after the ack wait).
    """
    got = await _pull(nc, stream, consumer, {"batch": batch, "no_wait": True}, batch, NO_WAIT_ANSWER) if batch > 1 else []
    if got:
        return got
    return await _pull(nc, stream, consumer, {"batch": 1, "expires": int(wait * 1e9)}, 1, wait + 2.0)  # the server's own "expired" comes at `wait`


# How long a `no_wait` pull may take to be answered before what came is taken as all.
NO_WAIT_ANSWER = 5.0


async def _pull(nc: Client, stream: str, consumer: str, req: dict[str, object], batch: int, within: float) -> list[Msg]:
    sub = await nc.subscribe(nc.new_inbox())
    try:
        await nc.publish(api_subject(nc, f"CONSUMER.MSG.NEXT.{stream}.{consumer}"), json.dumps(req).encode(), reply=sub.subject)
        got: list[Msg] = []
        deadline = time.monotonic() + within
        while len(got) < batch:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                msg = await sub.next_msg(timeout=left)
            except nats.errors.TimeoutError:
                break
            if is_delivery(msg):
                got.append(msg)
                continue
            status = (msg.headers or {}).get("Status", "")
            if status == _HEARTBEAT:
                continue
            if status in _DONE:
                break
            if status == _NO_RESPONDERS:
                raise RelayError("this home has no mailbox on that relay (nothing answers for its consumer): run `gage mailbox create` first")
            raise RelayError(f"the relay answered a fetch with status {status[:20]!r}: {str((msg.headers or {}).get('Description', ''))[:200]}")
        return got
    finally:
        try:
            await sub.unsubscribe()
        except nats.errors.Error:
            pass
