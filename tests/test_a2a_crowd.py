"""Slow strangers cannot starve a real sender (issue 29 item 2; spec/a2a.md section 10, "Connections").

A connection that has not sent a whole request head (idle, or trickling its headers) is
cheap and may be dropped: at the cap, the newcomer is kept and the oldest idle connection
of the address holding the most is closed instead; one address may hold only its share.
So 300 connections trickling headers do not keep a delivery out. Everything here runs on
127.0.0.1 with bounded loops.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import test_a2a_live as live
from test_a2a_live import bundle

from gage.carriers.a2a import client, connections
from gage.home import listing

homes, serving = live.homes, live.serving


def _held(srv: object) -> int:
    """How many connections the server holds now (uvicorn's own count)."""
    return len(srv._uvicorn.server_state.connections)  # type: ignore[attr-defined]


def _until_held(srv: object, at_least: int) -> None:
    """Wait until the server holds `at_least` connections: it has accepted them, not just the kernel."""
    deadline = time.monotonic() + 60  # a cap for a busy machine, not a wait
    while _held(srv) < at_least and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _held(srv) >= at_least, (_held(srv), at_least)


class Tricklers:
    """`n` connections from 127.0.0.1 that each send a request head one byte at a time, for
    at most `seconds`, opening a new one whenever the server closes one (a bounded loop)."""

    def __init__(self, port: int, n: int, seconds: float = 40.0) -> None:
        self.port, self.n, self.until = port, n, time.monotonic() + seconds
        self.socks: list[socket.socket] = []
        self.opened = 0
        self.stop = threading.Event()
        for _ in range(n):
            self._open()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            s.setblocking(False)
        except OSError:
            return None
        self.opened += 1
        self.socks.append(s)
        return s

    def _run(self) -> None:
        while not self.stop.is_set() and time.monotonic() < self.until:
            for s in list(self.socks):
                try:
                    s.send(b"a")
                except OSError:  # closed by the server: replace it, as a determined crowd would
                    self.socks.remove(s)
                    s.close()
                    self._open()
            self.stop.wait(0.5)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()


def test_300_trickling_connections_do_not_keep_a_delivery_out(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    srv, events = serving(bob)
    crowd = Tricklers(srv.port, 300)
    try:
        # The crowd is in: the server holds as many of them as it keeps (its cap, and one address's share).
        kept = srv._uvicorn.config.http
        _until_held(srv, min(300, kept.max_connections, kept.per_address))
        bid, out = bundle(alice, tmp_path)
        t0 = time.monotonic()
        result = client.send(alice, out, srv.url)
        took = time.monotonic() - t0
        assert result.delivered and took < 20, took
        held = listing.find(bob, bid)
        assert held is not None and held.state == "pending"
    finally:
        crowd.close()


def test_at_the_cap_the_oldest_idle_connection_goes_first(homes, serving, tmp_path: Path, monkeypatch) -> None:
    alice, bob = homes
    monkeypatch.setattr(connections.GuardedH11Protocol, "max_connections", 16)
    monkeypatch.setattr(connections, "SAID", connections._Said())  # a line of its own, not rate-limited away by an earlier test
    srv, events = serving(bob)
    first = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    first.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # trickling: not a whole head
    _until_held(srv, 1)  # the first is the oldest
    rest = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(15)]
    try:
        _until_held(srv, 16)  # at the cap
        newest = socket.create_connection(("127.0.0.1", srv.port), timeout=10)  # one over the cap
        rest.append(newest)
        first.settimeout(5)
        with contextlib.suppress(ConnectionResetError):
            assert first.recv(1) == b""  # the oldest idle one was closed to make room
        newest.settimeout(0.5)
        with contextlib.suppress(TimeoutError):
            newest.recv(1)
            raise AssertionError("the newcomer was closed, not the oldest idle connection")
        assert len(srv._uvicorn.server_state.connections) <= 16
        _bid, out = bundle(alice, tmp_path)
        assert client.send(alice, out, srv.url).delivered  # and a sender gets in at the cap
        assert any(e.kind == "error" and "oldest idle" in e.message for e in events)
    finally:
        first.close()
        for s in rest:
            s.close()


class _Conn:
    def __init__(self, addr: str, idle: bool) -> None:
        self.addr, self.idle = addr, idle


def _conn(addr: str, idle: bool = True) -> _Conn:
    return _Conn(addr, idle)


def test_the_victim_is_the_crowds_oldest_idle_never_a_busy_one() -> None:
    """The rule itself (connections.victim), with several addresses, as loopback alone cannot show it."""
    a = [_conn("10.0.0.1", idle=False), _conn("10.0.0.1"), _conn("10.0.0.1")]
    b = [_conn("10.0.0.2"), _conn("10.0.0.2")]
    book = {"10.0.0.1": dict.fromkeys(a), "10.0.0.2": dict.fromkeys(b)}
    is_idle = lambda c: c.idle  # noqa: E731
    # Over the whole cap: the address holding the most loses its oldest idle connection (not its busy one).
    assert connections.victim(book, "10.0.0.2", over_address=False, is_idle=is_idle) is a[1]
    # Over its own share: the newcomer's address loses its own oldest idle, whoever holds more.
    assert connections.victim(book, "10.0.0.2", over_address=True, is_idle=is_idle) is b[0]
    # Nothing idle to drop: None, and the newcomer is the one turned away.
    busy = {"10.0.0.1": dict.fromkeys([_conn("10.0.0.1", idle=False)])}
    assert connections.victim(busy, "10.0.0.1", over_address=True, is_idle=is_idle) is None
    # IPv6 addresses share by /64: one host's many addresses are one address here.
    assert connections.address_key("2001:db8::1") == connections.address_key("2001:db8::ffff:1") != connections.address_key("2001:db8:0:1::1")
    assert connections.address_key("127.0.0.1") == "127.0.0.1"


def test_a_request_head_is_held_to_8_kib(homes, serving) -> None:
    """What an idle connection may make the server hold: at most HEAD_BYTES of a head; more is refused."""
    _alice, bob = homes
    srv, _ = serving(bob)
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (connections.HEAD_BYTES + 1024))
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:100]
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (connections.HEAD_BYTES - 1024) + b"\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
