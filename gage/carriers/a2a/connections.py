"""Connections to `gage a2a serve`, bounded before any request exists (issue 19).

Off loopback anyone can open a connection, and the bearer token is read only with a request:
1,100 connections that never sent a byte used to exhaust the server's descriptors, and no
delivery got through. So, below the ASGI app, in uvicorn's own HTTP protocol:

- at most MAX_CONNECTIONS connections are kept; one more is closed as soon as it is accepted
  (its descriptor is freed at once, so the process never runs out of them);
- a request head (request line and headers) must be whole within HEAD_SECONDS of the
  connection opening, or of the previous answer on a kept-alive connection; else the
  connection is closed. A body has its own deadline, in the gatekeeper;
- the event loop's unexpected errors (an accept that fails for want of descriptors, a
  protocol callback that raises) are one visible line each, never a traceback.

With server.py, client.py and fetching.py, the only modules that import the optional extra.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gage.format.sanitize import clip, visible

MAX_CONNECTIONS = 256  # far below the usual 1,024 descriptors a process may have
HEAD_SECONDS = 10.0

log = logging.getLogger("gage.carriers.a2a.serve")


class _Said:
    """At most one line per kind of event every few seconds: a flood must not flood the log."""

    def __init__(self, every: float = 5.0) -> None:
        self.every = every
        self._last: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str, line: str, emit: Callable[[str], None]) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        now = time.monotonic()
        if now - self._last.get(kind, -1e9) >= self.every:
            self._last[kind] = now
            emit(line)


SAID = _Said()
_emit: list[Callable[[str], None]] = [log.warning]


def on_event(emit: Callable[[str], None]) -> None:
    """Where the lines about connections go (`serve`'s output); the log when unset."""
    _emit[0] = emit


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and a deadline on every request head."""

    max_connections = MAX_CONNECTIONS
    head_seconds = HEAD_SECONDS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections:
            SAID("cap", f"turned connections away: more than {self.max_connections} open at once", _emit[0])
            self.connections.discard(self)
            transport.abort()
            return
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_seconds, self._head_late)

    def _disarm(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            SAID("head", f"closed connections that sent no whole request within {self.head_seconds:g} s", _emit[0])
            self.transport.abort()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request head on a kept-alive connection has the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def quiet_loop_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Make the loop's unexpected errors one visible line each, rate-limited, never a traceback."""

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        what = str(context.get("message") or "error")
        if exc is not None:
            what += f": {type(exc).__name__}: {exc}"
        SAID("loop", f"serve: {visible(clip(what, 300))}", _emit[0])

    loop.set_exception_handler(handler)
