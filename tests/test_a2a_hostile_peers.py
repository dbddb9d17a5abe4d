"""Issue 19: hostile peers over live A2A. Refusals in each version's shape, a send that only a
delivery result confirms, answers that arrive whole, tenants, extension echo, card caching,
one reader's rule for numbers, total deadlines and one redirect policy, bounded error text.

Every server here listens on 127.0.0.1, and every exchange is bounded in count and time.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import test_a2a_live as live
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_a2a_live import SMALL, bundle, fake_agent, footprint, post, rpc_body, run_app

from gage.carriers.a2a import artifact, client, fetching, server
from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.artifact import EXTENSION_URI
from gage.format.errors import Exit, GageError, MalformedError
from gage.home import listing
from gage.home.layout import Home

PROTOCOLS = ("1.0", "0.3")
homes, serving = live.homes, live.serving  # the fixtures of the live tests


# --- 1. refusals in each protocol's error shape -----------------------------------------------


def test_a_1_0_refusal_is_a_list_of_typed_details_and_0_3_keeps_its_object(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    _bid, out = bundle(alice, tmp_path)
    for protocol in PROTOCOLS:
        msg = artifact.export_message(out, protocol=protocol, message_id="m", claims=None)
        msg["metadata"][EXTENSION_URI]["version"] = "9"  # an unknown metadata version
        err = post(srv.url, rpc_body(protocol, msg), version=protocol).json()["error"]
        assert err["code"] == -32602
        if protocol == "1.0":
            assert isinstance(err["data"], list) and len(err["data"]) == 1
            [info] = err["data"]
            assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
            assert info["reason"] == "GAGE_REFUSED" and info["domain"] == EXTENSION_URI
            assert info["metadata"]["stage"] == "refused" and "unknown format version" in info["metadata"]["error"]
        else:
            assert err["data"][EXTENSION_URI]["stage"] == "refused"
    # A body that is not strict JSON, sent as 1.0: the parse error has the 1.0 shape too.
    err = post(srv.url, b'{"jsonrpc": "2.0", "id": 1, "id": 2}', version="1.0").json()["error"]
    assert err["code"] == -32700 and err["data"][0]["reason"] == "GAGE_MALFORMED"


# --- 2. only gage's delivery result is a delivery -------------------------------------------


def _own_words(doc: dict[str, Any]) -> dict[str, Any]:
    msg = {"messageId": "x", "role": "ROLE_AGENT", "parts": [{"text": "thanks, got it!"}]}
    return {"jsonrpc": "2.0", "id": doc["id"], "result": {"message": msg}}


def _internal_error(doc: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": doc["id"], "error": {"code": -32603, "message": "Internal error"}}


def test_an_answer_in_the_agents_own_words_is_not_a_delivery_and_exits_14(homes, tmp_path: Path, gage) -> None:
    alice, bob = homes
    bid, _out = bundle(alice, tmp_path)
    with run_app(fake_agent(bob, _own_words)) as url:
        r = gage(alice, "a2a", "send", bid, url)
        rj = gage(alice, "a2a", "send", bid, url, "--json")
    assert r.code == Exit.A2A_UNCONFIRMED == 14 and "did not say, in gage's words" in r.out
    assert rj.code == 14 and json.loads(rj.out)["delivered"] is False


def test_a_peers_internal_error_is_not_called_a_refusal(homes, tmp_path: Path, gage) -> None:
    alice, bob = homes
    bid, out = bundle(alice, tmp_path)
    with run_app(fake_agent(bob, _internal_error)) as url:
        with pytest.raises(client.A2AUnconfirmedError) as exc:
            client.send(alice, out, url)
        r = gage(alice, "a2a", "send", bid, url)
    assert exc.value.exit_code == 14 and exc.value.stage == "a2a-unconfirmed"
    assert "agent refused" not in str(exc.value) and "may or may not be there" in str(exc.value)
    assert r.code == 14


# --- 3. a 401 or a 413 arrives whole, whatever the body's size -------------------------------


def test_401_and_413_for_a_large_body_reach_send_as_refusals(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    _bid, out = bundle(alice, tmp_path, b"\x07" * (16 << 20), name="big.bin")
    srv, _ = serving(bob, token="a-token-of-sixteen+")
    with pytest.raises(client.A2ARefusedError, match="HTTP 401") as no_token:
        client.send(alice, out, srv.url, timeout=60)
    assert no_token.value.exit_code == Exit.A2A_REFUSED
    small, _ = serving(bob, limits=SMALL)  # its cap is about 12 MB; the body is about 22 MB
    before = footprint(bob)
    with pytest.raises(client.A2ARefusedError, match="HTTP 413") as too_big:
        client.send(alice, out, small.url, timeout=60)
    assert too_big.value.exit_code == Exit.A2A_REFUSED and footprint(bob) == before


# --- 5. tenant, extension echo, card cache --------------------------------------------------


def test_send_sets_the_tenant_of_the_interface_it_picked(homes, tmp_path: Path) -> None:
    alice, bob = homes
    _bid, out = bundle(alice, tmp_path)
    seen: list[dict[str, Any]] = []

    def reply(doc: dict[str, Any]) -> dict[str, Any]:
        seen.append(doc["params"])
        return _own_words(doc)

    def with_tenant(card: dict[str, Any]) -> None:
        for i in card["supportedInterfaces"]:
            i["tenant"] = "team-7" if i["protocolVersion"] == "1.0" else "old"

    with run_app(fake_agent(bob, reply, card_edit=with_tenant)) as url:
        client.send(alice, out, url, protocol="1.0")
        client.send(alice, out, url, protocol="0.3")  # 0.3 has no tenant: none is sent
    assert seen[0]["tenant"] == "team-7" and "tenant" not in seen[1]


def test_serve_echoes_the_extension_it_activated(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    _bid, out = bundle(alice, tmp_path)
    msg = artifact.export_message(out, protocol="1.0", message_id="m-echo", claims=None)
    resp = httpx.post(
        srv.url, json=rpc_body("1.0", msg), timeout=10, headers={"A2A-Version": "1.0", "A2A-Extensions": f"urn:other:x, {EXTENSION_URI}"}
    )
    assert resp.status_code == 200 and resp.headers["a2a-extensions"] == EXTENSION_URI
    assert EXTENSION_URI.endswith(":v1")  # the URI carries its major version (spec/a2a.md section 2)


def test_send_caches_the_card_and_revalidates_it_with_its_etag(homes, tmp_path: Path) -> None:
    alice, bob = homes
    _bid, out = bundle(alice, tmp_path)
    hits: list[str | None] = []
    body = json.dumps(card_mod.agent_card(bob, "http://127.0.0.1:1/")).encode()

    async def card(request: Request) -> Response:
        hits.append(request.headers.get("if-none-match"))
        if request.headers.get("if-none-match") == '"v1"':
            return Response(status_code=304, headers={"ETag": '"v1"'})
        doc = json.loads(body)
        for i in doc["supportedInterfaces"]:
            i["url"] = str(request.base_url)
        return Response(json.dumps(doc), media_type="application/json", headers={"ETag": '"v1"'})

    async def rpc(request: Request) -> JSONResponse:
        return JSONResponse(_own_words(await request.json()))

    app = Starlette(routes=[Route(card_mod.CARD_PATH, card), Route("/", rpc, methods=["POST"])])
    with run_app(app) as url:
        client.send(alice, out, url)
        client.send(alice, out, url)
        assert hits == [None], "a card fetched within 15 minutes comes from the cache"
        for f in (alice.cache / "cards").glob("*.json"):
            old = time.time() - card_mod.CARD_TTL_SECONDS - 5
            import os

            os.utime(f, (old, old))
        client.send(alice, out, url)
    assert hits == [None, '"v1"']  # revalidated, and the 304 kept the copy


# --- 6. one reader, one rule for numbers ----------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_serve_takes_fractional_numbers_in_another_extensions_metadata(homes, serving, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    bid, out = bundle(alice, tmp_path)
    msg = artifact.export_message(out, protocol=protocol, message_id="m-f", claims=None)
    msg["metadata"]["urn:other:geo"] = {"lat": 52.5, "lon": 13.4}
    resp = post(srv.url, rpc_body(protocol, msg), version=protocol).json()
    assert "error" not in resp, resp
    assert listing.find(bob, bid) is not None
    # ... as `a2a import` does with the same message.
    carol = bob  # the same reader: parse_bytes
    assert artifact.parse_bytes(json.dumps(msg).encode())[0].id == bid and carol


# --- 11. a total deadline, a size cap, one redirect policy ----------------------------------


@contextlib.contextmanager
def trickler(head: bytes = b"HTTP/1.1 200 OK\r\n", every: float = 0.2) -> Iterator[str]:
    """A peer that answers one byte at a time, for ever (until the test ends)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with conn:
            with contextlib.suppress(OSError):
                conn.recv(65536)
                data = head + b"X-Slow: " + b"a" * 100_000
                for i in range(len(data)):
                    if stop.is_set():
                        return
                    conn.sendall(data[i : i + 1])
                    time.sleep(every)

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        stop.set()
        t.join(5)
        sock.close()


def test_a_trickling_peer_is_cut_off_at_the_total_deadline() -> None:
    with trickler() as url:
        for call in (
            lambda: fetching.request("GET", url + "x.json", cap=1 << 18, deadline=1.5),
            lambda: fetching.request("POST", url, cap=1 << 18, deadline=1.5, content=b"{}"),
        ):
            t0 = time.monotonic()
            with pytest.raises(fetching.FetchError) as exc:
                call()
            assert exc.value.kind == "timeout" and time.monotonic() - t0 < 5


def test_pair_card_and_send_discovery_stop_at_the_deadline(homes, tmp_path: Path, monkeypatch) -> None:
    alice, _bob = homes
    _bid, out = bundle(alice, tmp_path)
    monkeypatch.setattr(card_mod, "FETCH_TIMEOUT", 1.0)
    with trickler() as url:
        t0 = time.monotonic()
        with pytest.raises(card_mod.CardUnavailable, match="within 1 seconds"):
            card_mod.load(alice, url + "card.json")
        with pytest.raises(client.A2ATransportError):
            client.send(alice, out, url)
        assert time.monotonic() - t0 < 10


def _redirecting(to: Callable[[str], str]) -> Starlette:
    async def go(request: Request) -> Response:
        return Response(status_code=302, headers={"Location": to(str(request.base_url))})

    return Starlette(routes=[Route("/{p:path}", go)])


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (lambda base: "http://localhost:9/" + card_mod.CARD_PATH, "another origin"),  # another host
        (lambda base: base.replace("http://", "https://") + "c.json", "another origin"),  # another scheme
        (lambda base: base + "again.json", "more than 3 redirects"),  # a loop within the origin
    ],
)
def test_card_redirects_stay_within_the_origin(make_home: Callable[[str], Home], target: Callable[[str], str], words: str) -> None:
    bob = make_home("bob")
    with run_app(_redirecting(target)) as url:
        with pytest.raises(card_mod.CardUnavailable, match=words):
            card_mod.load(bob, url + "card.json")


def test_an_answer_over_the_cap_is_refused() -> None:
    async def big(request: Request) -> Response:
        return Response(b"x" * (card_mod.CARD_LIMIT + 1), media_type="application/json")

    with run_app(Starlette(routes=[Route("/c.json", big)])) as url:
        with pytest.raises(fetching.FetchError) as exc:
            fetching.request("GET", url + "c.json", cap=card_mod.CARD_LIMIT, deadline=10)
    assert exc.value.kind == "too-large"


# --- 12. error text is cut ------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_huge_part_name_is_cut_in_the_error(homes, serving, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    srv, events = serving(bob)
    _bid, out = bundle(alice, tmp_path)
    msg = artifact.export_message(out, protocol=protocol, message_id="m-long", claims=None)
    name = "payload/" + "A" * 100_000
    part = msg["parts"][-1]
    if protocol == "1.0":
        part["filename"] = name
    else:
        part["file"]["name"] = name
    with pytest.raises(GageError) as exc:
        artifact.parse(msg)
    text = str(exc.value)
    assert "(100008 characters)" in text and len(text) < 1000
    err = post(srv.url, rpc_body(protocol, msg), version=protocol).json()["error"]
    assert len(err["message"]) < 1000 and "(100008 characters)" in err["message"]
    assert all(len(e.message) < 1000 for e in events)


def test_no_error_carries_more_than_its_bound() -> None:
    err = MalformedError("x" * 50_000, field="f" * 5_000)
    assert len(err.message) < 2100 and "(50000 characters in all)" in err.message
    assert len(err.field or "") < 400


# --- 8. idle connections cannot take serve down ---------------------------------------------


def test_idle_connections_are_capped_and_timed_out_and_a_delivery_gets_through(homes, serving, tmp_path: Path, monkeypatch, capfd) -> None:
    from gage.carriers.a2a import connections

    alice, bob = homes
    monkeypatch.setattr(connections.GuardedH11Protocol, "max_connections", 32)
    monkeypatch.setattr(connections.GuardedH11Protocol, "head_seconds", 1.0)
    srv, events = serving(bob)
    host, port = "127.0.0.1", srv.port
    idle = []
    try:
        for _ in range(200):  # bounded: far over the cap, far under the descriptor limit
            idle.append(socket.create_connection((host, port), timeout=10))
        time.sleep(0.3)
        held = len(srv._uvicorn.server_state.connections)
        assert held <= 32, f"the server holds {held} connections"
        # Each idle connection is closed by the server: over the cap at once, the rest after the head deadline.
        deadline = time.monotonic() + 30
        closed = 0
        for s in idle:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ConnectionResetError):
                if s.recv(1) == b"":
                    closed += 1
                    continue
            closed += 1  # a reset is a close too
        assert closed == len(idle)
        _bid, out = bundle(alice, tmp_path)
        assert client.send(alice, out, srv.url).delivered
    finally:
        for s in idle:
            s.close()
    assert any(e.kind == "error" and "turned connections away" in e.message for e in events)
    assert any(e.kind == "error" and "no whole request" in e.message for e in events)
    assert "Traceback" not in capfd.readouterr().err


def test_a_slow_request_head_is_cut_off(homes, serving, monkeypatch) -> None:
    from gage.carriers.a2a import connections

    _alice, bob = homes
    monkeypatch.setattr(connections.GuardedH11Protocol, "head_seconds", 0.5)
    srv, _ = serving(bob)
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # and never the end of the head
        t0 = time.monotonic()
        with contextlib.suppress(ConnectionResetError):
            assert s.recv(100) == b""
        assert time.monotonic() - t0 < 5


# --- 9. memory bounded over the whole request, landing with a lock timeout ------------------


def test_a_held_home_lock_turns_a_delivery_away_instead_of_piling_it_up(homes, serving, tmp_path: Path, monkeypatch) -> None:
    alice, bob = homes
    monkeypatch.setattr(server, "LOCK_SECONDS", 0.5)
    srv, _ = serving(bob)
    bid, out = bundle(alice, tmp_path)
    with bob.lock():  # as another gage process would hold it
        with pytest.raises(client.A2ARefusedError, match="lock|busy") as exc:
            client.send(alice, out, srv.url)
    assert exc.value.exit_code == Exit.A2A_REFUSED and listing.find(bob, bid) is None
    assert client.send(alice, out, srv.url).delivered  # once it is free


def test_the_slot_is_held_for_the_whole_request(homes, serving, tmp_path: Path, monkeypatch) -> None:
    """While landings wait for the lock, further requests are answered 503, not read into memory."""
    alice, bob = homes
    monkeypatch.setattr(server, "LOCK_SECONDS", 3.0)
    monkeypatch.setattr(server, "MAX_BODIES_AT_ONCE", 2)
    monkeypatch.setattr(server, "PEER_SLOTS", 2)
    srv, events = serving(bob)
    outs = [bundle(alice, tmp_path, f"n{i}".encode())[1] for i in range(3)]
    results: list[object] = []
    with bob.lock():
        threads = [threading.Thread(target=lambda o=o: results.append(_try(alice, o, srv.url))) for o in outs[:2]]
        for t in threads:
            t.start()
        keeper = srv._uvicorn.config.app  # the gatekeeper, counting the requests in flight per peer
        deadline = time.monotonic() + 60  # a cap for a busy machine, not a wait
        while sum(keeper._per_peer.values()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sum(keeper._per_peer.values()) == 2  # both hold their slots, waiting for the lock
        third = _try(alice, outs[2], srv.url)
        for t in threads:
            t.join(30)
    assert isinstance(third, client.A2ATransportError) and "503" in str(third)  # busy: try again, not a refusal
    assert any(e.kind == "error" and "busy" in e.message for e in events)


def _try(home: Home, out: Path, url: str) -> object:
    try:
        return client.send(home, out, url)
    except GageError as exc:
        return exc


# --- 10. fairness: per-peer slots, and a trickle is cut off early ---------------------------


def _slow_from(host: str, port: int) -> socket.socket:
    s = socket.socket()
    s.bind((host, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 1000\r\n\r\n{")
    return s


def _second_loopback_address() -> bool:
    """127.0.0.2 is a loopback address on Linux; macOS configures only 127.0.0.1 by default."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _second_loopback_address(), reason="needs a second loopback address (127.0.0.2)")
def test_one_slow_peer_cannot_take_every_slot(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    srv, events = serving(bob)
    mine = [_slow_from("127.0.0.1", srv.port) for _ in range(server.PEER_SLOTS)]
    try:
        for _ in range(200):
            if post(srv.url, b"{}", version="1.0").status_code == 503:
                break
            time.sleep(0.05)
        assert any(e.kind == "error" and "its share" in e.message for e in events)
        # Another address still gets in while the first peer's share is taken.
        other = socket.create_connection(("127.0.0.1", srv.port), timeout=10, source_address=("127.0.0.2", 0))
        with other:
            other.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 2\r\n\r\n{}")
            assert not other.recv(100).startswith(b"HTTP/1.1 503")
    finally:
        for s in mine:
            s.close()


def test_a_trickling_body_is_cut_off_long_before_the_total_deadline(homes, serving, monkeypatch) -> None:
    _alice, bob = homes
    monkeypatch.setattr(server, "BODY_GRACE", 0.5)
    monkeypatch.setattr(server, "BODY_RATE", 1024)
    srv, events = serving(bob)
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 100000\r\n\r\n")
        t0 = time.monotonic()
        answer = b""
        s.settimeout(0.2)
        while not answer and time.monotonic() - t0 < 20:
            with contextlib.suppress(OSError):
                s.sendall(b" ")
            with contextlib.suppress(TimeoutError):
                answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < 10 < server.BODY_SECONDS
    assert any(e.kind == "error" and "KiB/s" in e.message for e in events)


def _write_all_then_read(port: int, head: bytes, body: bytes) -> bytes:
    """A plain client that sends its whole request before it reads (as urllib and many others do)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head + body)  # a reset while sending fails here: the answer would be lost
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        return answer


@pytest.mark.parametrize("why", ["token", "size"])
def test_a_client_that_writes_its_whole_body_first_still_gets_the_401_or_413(homes, serving, why: str) -> None:
    _alice, bob = homes
    srv, _ = serving(bob, **({"token": "a-token-of-sixteen+"} if why == "token" else {"limits": SMALL}))
    body = b'{"x": "' + b"a" * (SMALL.max_request_bytes + (1 << 20)) + b'"}'
    head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    # The drain is bounded (spec/a2a.md section 10: one more request cap, 10 s). On a loaded machine
    # (a CI run with every core busy) a 13 MB body once missed that bound and the answer was lost,
    # as the spec allows; so a lost answer is tried again, at most twice, and every answer that
    # arrives must be the refusal, never anything else.
    want = b"HTTP/1.1 401" if why == "token" else b"HTTP/1.1 413"
    answers = []
    for _ in range(3):
        answers.append(_write_all_then_read(srv.port, head, body))
        if answers[-1]:
            break
    assert answers[-1].startswith(want), [a[:100] for a in answers]
    assert all(a.startswith(want) for a in answers if a)
