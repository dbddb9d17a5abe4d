"""Connections to `gage a2a serve`, bounded before any request exists, so idle or slow
connections cannot shut real senders out.

Off loopback anyone can open a connection, and the bearer token is read only with a request:
1,100 connections that never sent a byte used to exhaust the server's descriptors, and no
delivery got through; then 300 that trickled their headers filled a cap of 256, and every
newcomer, a real sender among them, was refused. So, below the ASGI app, in uvicorn's own
HTTP protocol:

- a connection that has not sent a whole request head (idle, or trickling its headers) is
  cheap: no request, no body, a head buffer of at most HEAD_BYTES, and it may be dropped;
- at most `max_connections` are kept (MAX_CONNECTIONS, or fewer if the descriptor limit is
  lower), and at most PER_ADDRESS from one address (an IPv6 /64 counts as one). A newcomer
  over either is kept, and to make room the server closes the oldest idle connection: of
  the newcomer's own address when that address is over its share, else of the address
  holding the most. Only when there is no idle connection to close is the newcomer closed.
  A flood from one address thus loses its own connections, and a sender who sends its
  request at once is past the point of being dropped within a round trip;
- a request head must be whole within HEAD_SECONDS of the connection opening, or of the
  previous answer on a kept-alive connection; else the connection is closed. A body has its
  own deadline, in the gatekeeper;
- the event loop's unexpected errors (an accept that fails for want of descriptors, a
  protocol callback that raises) are one visible line each, never a traceback.

With server.py, client.py and fetching.py, the only modules that import the optional extra.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
import time
from collections.abc import Callable
from typing import Any, TypeVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gage.format.sanitize import clip, visible

MAX_CONNECTIONS = 2048  # idle ones are cheap (HEAD_BYTES of buffer at most); see descriptor_room
PER_ADDRESS = 256  # one address's share; past it, its own oldest idle connection makes room
HEAD_BYTES = 8192  # the most of a request head (request line and headers) held while it arrives
HEAD_SECONDS = 10.0
DESCRIPTOR_RESERVE = 64  # descriptors kept for the home's files, the journal, the listening socket

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


C = TypeVar("C")


def address_key(host: str) -> str:
    """What counts as one address for a peer's share: the IPv4 address, or the IPv6 /64 (one host's usual allotment)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def victim(book: dict[str, dict[C, None]], addr: str, *, over_address: bool, is_idle: Callable[[C], bool]) -> C | None:
    """The connection to close to make room for a newcomer from `addr`, or None to close the newcomer.

    `book` maps each address to its connections, oldest first. Over its share, the
    newcomer's address gives up its own oldest idle connection; over the whole cap, the
    address holding the most does (then the next, if it has none idle). Never one with a
    request under way.
    """
    if over_address:
        order = [addr]
    else:
        order = sorted(book, key=lambda a: len(book[a]), reverse=True)
    for a in order:
        for conn in book.get(a, {}):
            if is_idle(conn):
                return conn
    return None


def descriptor_room(wanted: int) -> int:
    """How many connections the descriptor limit allows: the soft limit is raised towards the
    hard one for `wanted` connections and the reserve, and the cap is what fits."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        need = wanted + DESCRIPTOR_RESERVE
        if soft != resource.RLIM_INFINITY and soft < need and (hard == resource.RLIM_INFINITY or hard > soft):
            soft = need if hard == resource.RLIM_INFINITY else min(need, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        return wanted if soft == resource.RLIM_INFINITY else max(16, min(wanted, soft - DESCRIPTOR_RESERVE))
    except (OSError, ValueError):
        return min(wanted, 1024 - DESCRIPTOR_RESERVE)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection cap that drops the oldest idle connection
    first, a share per address, and a deadline on every request head."""

    max_connections = MAX_CONNECTIONS
    per_address = PER_ADDRESS
    head_seconds = HEAD_SECONDS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._addr = address_key(str(self.client[0])) if self.client else "unknown"
        book = _book(self.server_state)
        mine = book.setdefault(self._addr, {})
        over_address = len(mine) >= self.per_address
        if over_address or len(self.connections) > self.max_connections:
            drop = victim(book, self._addr, over_address=over_address, is_idle=GuardedH11Protocol.idle)
            if drop is None:
                SAID("cap", f"turned connections away: more than {self.max_connections} open at once, none idle", _emit[0])
                self.connections.discard(self)
                if not mine:
                    del book[self._addr]
                transport.abort()
                return
            SAID("evict", "turned connections away: at the cap, the oldest idle connection was closed to make room", _emit[0])
            drop.forget()
            drop.transport.abort()
        mine[self] = None
        self._arm()

    def idle(self) -> bool:
        """No request under way: nothing but (part of) a request head has arrived since the last answer."""
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def forget(self) -> None:
        """Out of the cap's books at once (the loop reports the loss a moment later)."""
        self.connections.discard(self)
        book = _book(self.server_state)
        mine = book.get(self._addr)
        if mine is not None:
            mine.pop(self, None)
            if not mine:
                del book[self._addr]

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
        if hasattr(self, "_addr"):
            self.forget()
        super().connection_lost(exc)


def guarded_protocol() -> type[GuardedH11Protocol]:
    """The protocol class for one server: its cap is what the descriptor limit allows now."""
    room = descriptor_room(GuardedH11Protocol.max_connections)
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"max_connections": room})


def _book(state: Any) -> dict[str, dict[GuardedH11Protocol, None]]:
    """The server's connections by address, oldest first, kept on uvicorn's per-server state."""
    book: dict[str, dict[GuardedH11Protocol, None]] | None = getattr(state, "gage_by_address", None)
    if book is None:
        book = {}
        state.gage_by_address = book
    return book


def quiet_loop_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Make the loop's unexpected errors one visible line each, rate-limited, never a traceback."""

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        what = str(context.get("message") or "error")
        if exc is not None:
            what += f": {type(exc).__name__}: {exc}"
        SAID("loop", f"serve: {visible(clip(what, 300))}", _emit[0])

    loop.set_exception_handler(handler)
