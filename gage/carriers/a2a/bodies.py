"""Request bodies as the gatekeeper reads them: under a size cap, a total deadline and a rate,
replayed to the SDK from what was read, or drained and dropped when refused; and the bearer
token compared in constant time. Plain ASGI: no SDK, starlette or uvicorn (split out of
gatekeeper.py to keep it readable)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

# ASGI, as starlette.types spells it (the same aliases, so the SDK's app fits).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BODY_SECONDS = 120.0  # the longest a request body may take to arrive


async def drain(receive: Receive, limit: int, seconds: float) -> None:
    """Read and discard what is left of a refused body: at most `limit` bytes and `seconds`.

    A server that answers and closes with request bytes still unread makes the kernel reset
    the connection, and the reset can reach the sender before the answer it already sent:
    the sender then sees a dropped connection where the agent said 401 or 413. Reading the
    rest first (no memory kept) lets the close be an orderly one. A body beyond the bound
    still gets the answer, and may lose it to a reset: spec/a2a.md section 10 says so.
    """
    total = 0

    async def rest() -> None:
        nonlocal total
        while total <= limit:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            total += len(msg.get("body", b""))
            if not msg.get("more_body", False):
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(rest(), seconds)


def header_values(scope: Scope, name: bytes) -> list[bytes]:
    return [v for k, v in scope.get("headers", []) if k.lower() == name]


def bearer_ok(scope: Scope, token: str) -> bool:
    values = header_values(scope, b"authorization")
    if len(values) != 1:
        return False
    scheme, _, given = values[0].partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token.encode("utf-8"))


class TooLarge(Exception):
    def __init__(self, declared: int | None = None) -> None:
        super().__init__()
        self.declared = declared  # the Content-Length, when that is how the body was found too large


class Gone(Exception):
    pass


class Slow(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


async def read_capped(scope: Scope, receive: Receive, cap: int, *, total: float = BODY_SECONDS, grace: float = 1e9, rate: int = 1) -> bytearray:
    """The whole body, or `TooLarge` as soon as the declared or counted size passes `cap`.

    Gathered in one growing buffer, not a list of chunks joined at the end, which held the
    body twice at the join.

    `Slow` when it takes longer than `total` seconds, or trickles: after `grace` seconds,
    at least `rate` bytes a second on average must have arrived. A slow sender cannot
    keep a slot for the whole of `total` with a byte now and then.
    """
    declared = header_values(scope, b"content-length")
    if declared:
        try:
            length = int(declared[0])
        except ValueError:
            raise TooLarge from None
        if length > cap:
            raise TooLarge(length)
    buf = bytearray()
    got = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    while True:
        by_total = start + total
        by_rate = start + grace + got / rate
        left = min(by_total, by_rate) - loop.time()
        if left <= 0:
            raise Slow(f"within {total:.0f} s" if by_total <= by_rate else f"at {rate // 1024} KiB/s or more after the first {grace:.0f} s")
        try:
            msg = await asyncio.wait_for(receive(), left)
        except TimeoutError:
            continue  # the deadline is checked at the top
        if msg["type"] == "http.disconnect":
            raise Gone
        chunk = msg.get("body", b"")
        got += len(chunk)
        if got > cap:
            raise TooLarge  # chunked (or lying) bodies are counted as they stream
        buf += chunk
        del chunk
        if not msg.get("more_body", False):
            return buf


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the SDK the body gage already read, then the client's own events.

    It keeps the body only until it has handed it over: the SDK holds its own parse after
    that, and a second copy of the request would only take memory while landing waits."""
    held: list[bytes] = [body]
    del body

    async def replay() -> dict[str, Any]:
        if held:
            return {"type": "http.request", "body": held.pop(), "more_body": False}
        return dict(await receive())

    return replay
