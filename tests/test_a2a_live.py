"""Live A2A: two homes over `serve` and `send` on loopback, the SDK's own client, and every refusal.

Each server is a real uvicorn on 127.0.0.1 with a free port, run in a thread and always
stopped (the fixtures join the thread and fail the test if it lingers).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, SendMessageRequest
from gagetest import pair
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gage.carriers.a2a import artifact, client, server
from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.artifact import EXTENSION_URI, Limits
from gage.carriers.events import WatchEvent
from gage.format.errors import Exit, UsageError
from gage.home import listing
from gage.home.layout import STATES, Home
from gage.inbox import send
from gage.trust import verdict as verdict_mod

PROTOCOLS = ["1.0", "0.3"]
SMALL = Limits(max_bytes=4096)  # the smallest request cap that still takes a real bundle: about 3.7 MB


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture
def homes(make_home: Callable[[str], Home]) -> tuple[Home, Home]:
    """alice and bob, each confirmed in the other's contacts."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    return alice, bob


@pytest.fixture
def serving() -> Iterator[Callable[..., tuple[server.Server, list[WatchEvent]]]]:
    """Start gage agents; every one is stopped, and its thread joined, after the test."""
    started: list[server.Server] = []

    def start(home: Home, **kw: Any) -> tuple[server.Server, list[WatchEvent]]:
        events: list[WatchEvent] = []
        srv = server.Server(home, host="127.0.0.1", port=0, on_event=events.append, **kw).start()
        started.append(srv)
        return srv, events

    yield start
    for srv in started:
        srv.stop(timeout=5)
        assert not srv.running, "the server did not stop"


@contextlib.contextmanager
def run_app(app: Starlette) -> Iterator[str]:
    """Any ASGI app (a fake agent) on a free loopback port, for as long as the block runs."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # a cap for a busy machine, not a wait
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
        assert not thread.is_alive()


def fake_agent(home: Home, reply: Callable[[dict[str, Any]], dict[str, Any]], *, card_edit: Callable[[dict[str, Any]], None] | None = None) -> Starlette:
    """An agent that serves a gage-looking card and answers every request with `reply`."""

    async def card(request: Request) -> JSONResponse:
        c = card_mod.agent_card(home, str(request.base_url))
        if card_edit:
            card_edit(c)
        return JSONResponse(c)

    async def rpc(request: Request) -> JSONResponse:
        return JSONResponse(reply(await request.json()))

    return Starlette(routes=[Route(card_mod.CARD_PATH, card), Route("/", rpc, methods=["POST"])])


def bundle(home: Home, tmp: Path, data: bytes = b"hello over A2A\n", name: str = "note.txt", **kw: Any) -> tuple[str, Path]:
    src = tmp / f"src-{home.identity.name}-{len(list(tmp.glob('src-*')))}"
    src.mkdir()
    (src / name).write_bytes(data)
    m, out = send.create(home, [src / name], **{"kind": "share", **kw})
    return m.id, out


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def footprint(home: Home) -> tuple[object, ...]:
    """Everything an arrival could change: the inbox states, the staging area, the journal."""
    listing = {s: sorted(p.name for p in home.state_dir(s).iterdir()) for s in ("pending", "accepted", "rejected")}
    return listing, sorted(p.name for p in home.staging.iterdir()), len(home.journal.entries())


def rpc_body(protocol: str, message: dict[str, Any], rid: object = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "SendMessage" if protocol == "1.0" else "message/send", "params": {"message": message}}


def post(url: str, body: dict[str, Any] | bytes, *, version: str | None, token: str | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if version is not None:
        headers["A2A-Version"] = version
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url, content=content, headers=headers, timeout=10)


def file_parts(message: dict[str, Any], protocol: str) -> dict[str, dict[str, Any]]:
    """The message's bytes parts by file name, each the dict that holds the base64 text."""
    if protocol == "1.0":
        return {p["filename"]: p for p in message["parts"]}
    return {p["file"]["name"]: p["file"] for p in message["parts"]}


def gage_refusal(err: dict[str, Any], protocol: str) -> dict[str, Any]:
    """gage's refusal in a JSON-RPC error: 1.0 an ErrorInfo in a list (A2A section 9.5), 0.3 the object."""
    if protocol == "1.0":
        [info] = err["data"]
        assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" and info["domain"] == EXTENSION_URI
        assert info["reason"] == "GAGE_" + info["metadata"]["stage"].upper().replace("-", "_")
        assert all(isinstance(v, str) for v in info["metadata"].values())
        return dict(info["metadata"])
    return dict(err["data"][EXTENSION_URI])


def b64_key(protocol: str) -> str:
    return "raw" if protocol == "1.0" else "bytes"


def no_accepts(home: Home) -> bool:
    return not any(home.state_dir("accepted").iterdir()) and not any(e.get("event") == "accepted" for e in home.journal.entries())


# --- two homes, both ways -------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_exchange_lands_byte_identical_in_pending_and_an_ack_flows_back(homes, serving, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    alice_srv, alice_events = serving(alice)
    bob_srv, bob_events = serving(bob)
    data = bytes(range(256)) * 3  # every byte value, so no text path could pass it unchanged by luck
    bid, out = bundle(alice, tmp_path, data, name="blob.bin")

    result = client.send(alice, out, bob_srv.url, protocol=protocol, from_card=alice_srv.url)
    assert result.delivered and result.bundle == bid and result.protocol == protocol
    assert result.claims["state"] == "pending" and "not accepted" in result.text
    assert "nothing is accepted" in result.summary()

    held = listing.find(bob, bid)
    assert held is not None and held.state == "pending"
    assert tree(held.path) == tree(out)  # manifest bytes, signature and payload, byte for byte
    assert set(tree(out)) == {"manifest.json", "manifest.sig", "payload/blob.bin"}
    assert [s.id for s in listing.list_bundles(bob, STATES)] == [bid]  # in pending, and nowhere else
    assert no_accepts(bob)

    v = verdict_mod.compute(bob, held)
    assert v.verdict == "verified" and v.sender.name == "alice" and v.state == "pending"
    assert v.transport is not None and v.transport.carrier == "a2a" and not v.transport.disagreements
    assert v.transport.fields["protocol"] == protocol and v.transport.fields["peer"] == "127.0.0.1"
    assert v.transport.fields["from_name"] == "alice" and v.transport.fields["from_key"] == alice.identity.key_text
    assert v.transport.fields["from_card"] == alice_srv.url
    # The watcher's words for an arrival, with the verdict's sender; the peer's claim after it.
    assert [(e.kind, e.id, e.message) for e in bob_events] == [
        ("imported", bid, f'received {bid[:12]} via A2A from 127.0.0.1 into pending: VERIFIED, sender alice; the peer claims to be "alice"')
    ]

    # bob answers with an ack, sent back to the agent alice's message named.
    reply_src = tmp_path / "ack.txt"
    reply_src.write_text("got it\n")
    ack, ack_out = send.create(bob, [reply_src], kind="ack", parent=bid)
    back = client.send(bob, ack_out, v.transport.fields["from_card"], protocol=protocol)
    assert back.delivered and back.bundle == ack.id
    got = listing.find(alice, ack.id)
    assert got is not None and got.state == "pending" and tree(got.path) == tree(ack_out)
    av = verdict_mod.compute(alice, got)
    assert av.verdict == "verified" and av.sender.name == "bob" and av.kind == "ack"
    assert av.seen is not None and av.seen.parent == bid and av.seen.parent_status == "sent-by-me"
    assert [(e.kind, e.id) for e in alice_events] == [("imported", ack.id)]
    assert alice_events[0].message.startswith(f"received {ack.id[:12]} via A2A from 127.0.0.1 into pending: VERIFIED, sender bob")
    assert no_accepts(alice)

    # The same bundle again: held already, nothing changes, still nothing accepted.
    again = client.send(alice, out, bob_srv.url, protocol=protocol)
    assert again.delivered and again.claims["state"] == "held"
    assert [s.id for s in listing.list_bundles(bob, STATES)] == [bid] and no_accepts(bob)
    assert [(e.kind, e.id) for e in bob_events[1:]] == [("skipped", bid)]
    assert bob_events[1].message == f"{bid[:12]} via A2A from 127.0.0.1: already there (pending)"


def test_card_advertises_the_extension_both_protocols_and_no_streaming(homes, serving) -> None:
    _alice, bob = homes
    srv, _ = serving(bob, limits=SMALL)
    card = httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH, timeout=10).json()
    [ext] = card["capabilities"]["extensions"]
    assert ext["uri"] == EXTENSION_URI and ext["params"]["key"] == bob.identity.key_text
    assert ext["params"]["max_bytes"] == str(SMALL.max_bytes)
    assert card["capabilities"].get("streaming", False) is False
    versions = {(i["protocolVersion"], i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]}
    assert versions == {("1.0", "JSONRPC", srv.url), ("0.3", "JSONRPC", srv.url)}
    assert "securitySchemes" not in card


def test_the_card_is_strict_1_0_and_0_3_clients_get_a_0_3_card(homes, serving) -> None:
    """Issue 19 item 4: no 0.3 field in the 1.0 card asked for with `A2A-Version: 1.0`; a 0.3
    card by path (issue 29: the hybrid card without the header, tests/test_a2a_cards.py)."""
    _alice, bob = homes
    srv, _ = serving(bob, token="s3cret-token-0123")
    base = srv.url.rstrip("/")
    one = httpx.get(base + card_mod.CARD_PATH, headers={"A2A-Version": "1.0"}, timeout=10)
    card = one.json()
    assert not {"url", "protocolVersion", "preferredTransport", "additionalInterfaces", "security"} & set(card)
    assert card["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert one.headers["cache-control"] == "max-age=900" and one.headers["etag"]
    for old in (httpx.get(base + card_mod.CARD_PATH_03, timeout=10),):
        c03 = old.json()
        assert c03["url"] == srv.url and c03["protocolVersion"] == "0.3.0" and c03["preferredTransport"] == "JSONRPC"
        assert "supportedInterfaces" not in c03 and c03["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
        assert c03["capabilities"]["extensions"][0]["uri"] == EXTENSION_URI
    again = httpx.get(base + card_mod.CARD_PATH, headers={"If-None-Match": one.headers["etag"], "A2A-Version": "1.0"}, timeout=10)
    assert again.status_code == 304 and again.content == b""


# --- the SDK's own client -------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_sdk_client_delivers_to_gage_serve(homes, serving, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    bid, out = bundle(alice, tmp_path, b"\x00\xff binary and text \xe2\x82\xac\n")
    msg = ParseDict(artifact.export_message(out, protocol="1.0", message_id="m-sdk", claims={"from_name": "alice"}), Message())
    async with httpx.AsyncClient(timeout=10) as http:
        card = await A2ACardResolver(http, srv.url).get_agent_card()
        if protocol == "0.3":
            # ClientFactory prefers 1.0 whenever the card lists it: offer it only the 0.3 interface.
            keep = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(keep)
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        replies = [r async for r in client.send_message(SendMessageRequest(message=msg))]
    [reply] = replies
    assert reply.HasField("message")
    meta = MessageToDict(reply.message)["metadata"][EXTENSION_URI]
    assert meta == {"status": "delivered", "bundle": bid, "state": "pending", "checks": "ok"}
    assert reply.message.parts[0].text == f"{bid}: delivered to pending; not accepted"
    held = listing.find(bob, bid)
    assert held is not None and held.state == "pending" and tree(held.path) == tree(out)
    [arrival] = [e for e in bob.journal.entries() if e.get("event") == "received"]
    assert arrival["transport"]["protocol"] == protocol  # the SDK really spoke this version
    assert no_accepts(bob)


@pytest.mark.parametrize("version", [None, "0.3"])
def test_0_3_request_with_or_without_a_version_header_lands(homes, serving, tmp_path: Path, version: str | None) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    bid, out = bundle(alice, tmp_path)
    resp = post(srv.url, rpc_body("0.3", artifact.export_message(out, protocol="0.3", message_id="m1", claims=None)), version=version)
    result = resp.json()["result"]
    assert result["kind"] == "message" and result["role"] == "agent"
    assert result["metadata"][EXTENSION_URI]["status"] == "delivered"
    assert listing.find(bob, bid) is not None and listing.find(bob, bid).state == "pending"  # type: ignore[union-attr]


# --- nothing in A2A accepts -----------------------------------------------------------------


def test_claims_of_acceptance_never_accept(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    bid, out = bundle(alice, tmp_path)
    msg = artifact.export_message(out, protocol="1.0", message_id="m-claims", claims=None)
    msg["metadata"]["urn:other:state"] = {"state": "accepted", "accepted": "true", "verdict": "VERIFIED"}
    body = rpc_body("1.0", msg)
    body["params"]["metadata"] = {"accepted": "true"}
    reply = post(srv.url, body, version="1.0").json()["result"]["message"]
    assert reply["metadata"][EXTENSION_URI]["state"] == "pending" and "not accepted" in reply["parts"][0]["text"]
    assert listing.find(bob, bid).state == "pending"  # type: ignore[union-attr]

    # "accepted" inside gage's own metadata is not part of the format: refused, nothing written.
    bid2, out2 = bundle(alice, tmp_path, b"second")
    msg2 = artifact.export_message(out2, protocol="1.0", message_id="m-claims-2", claims=None)
    msg2["metadata"][EXTENSION_URI]["state"] = "accepted"
    before = footprint(bob)
    err = post(srv.url, rpc_body("1.0", msg2), version="1.0").json()["error"]
    assert gage_refusal(err, "1.0")["status"] == "refused" and "unknown field 'state'" in err["message"]
    assert footprint(bob) == before and listing.find(bob, bid2) is None

    # Task calls cannot move it either: there is no task, and a cancel is refused.
    for method, version, params in [("CancelTask", "1.0", {"id": "m-claims"}), ("tasks/cancel", None, {"id": "m-claims"})]:
        resp = post(srv.url, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, version=version).json()
        assert "error" in resp
    assert listing.find(bob, bid).state == "pending" and no_accepts(bob)  # type: ignore[union-attr]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_hostile_completed_task_saying_accepted_is_not_acceptance(homes, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    _bid, out = bundle(alice, tmp_path)

    def reply(doc: dict[str, Any]) -> dict[str, Any]:
        text = {"text": "accepted \x1b[2J\u202e everything"}
        if protocol == "1.0":
            status = {"state": "TASK_STATE_COMPLETED", "message": {"messageId": "x", "role": "ROLE_AGENT", "parts": [text]}}
            return {"jsonrpc": "2.0", "id": doc["id"], "result": {"task": {"id": "t", "contextId": "c", "status": status}}}
        status = {"state": "completed", "message": {"kind": "message", "messageId": "x", "role": "agent", "parts": [{"kind": "text", **text}]}}
        return {"jsonrpc": "2.0", "id": doc["id"], "result": {"kind": "task", "id": "t", "contextId": "c", "status": status}}

    with run_app(fake_agent(bob, reply)) as url:
        result = client.send(alice, out, url, protocol=protocol)
    assert not result.delivered
    assert result.task_state in ("TASK_STATE_COMPLETED", "completed")
    assert "\x1b" not in result.text and "\\x1b" in result.text and "\\u202e" in result.text  # made visible
    assert not hasattr(result, "accepted")
    assert "did not say, in gage's words" in result.summary() and "nothing is accepted" in result.summary()


def test_hostile_gage_metadata_saying_accepted_is_not_delivery(homes, tmp_path: Path) -> None:
    alice, bob = homes
    bid, out = bundle(alice, tmp_path)

    def reply(doc: dict[str, Any]) -> dict[str, Any]:
        meta = {EXTENSION_URI: {"status": "accepted", "bundle": bid, "state": "accepted"}}
        msg = {"messageId": "x", "role": "ROLE_AGENT", "parts": [{"text": "accepted"}], "metadata": meta}
        return {"jsonrpc": "2.0", "id": doc["id"], "result": {"message": msg}}

    with run_app(fake_agent(bob, reply)) as url:
        result = client.send(alice, out, url)
    assert not result.delivered and result.claims["status"] == "accepted"  # reported as its claim, nothing more


# --- refusals write nothing -----------------------------------------------------------------


def _urlsafe(parts: dict[str, dict[str, Any]], key: str) -> None:
    b = parts["payload/odd.bin"]
    assert "+" in b[key] or "/" in b[key]
    b[key] = b[key].replace("+", "-").replace("/", "_")


def _unpadded(parts: dict[str, dict[str, Any]], key: str) -> None:
    b = parts["payload/odd.bin"]
    assert b[key].endswith("=")
    b[key] = b[key].rstrip("=")


def _url_part(parts: dict[str, dict[str, Any]], key: str) -> None:
    b = parts["payload/odd.bin"]
    del b[key]
    b["url" if key == "raw" else "uri"] = "http://127.0.0.1:9/odd.bin"


@pytest.mark.parametrize(
    ("protocol", "spoil", "words"),
    [
        ("0.3", _urlsafe, "URL-safe base64"),  # the SDK's 0.3 path can decode this into other bytes
        ("1.0", _urlsafe, "URL-safe base64"),  # the SDK's 1.0 parser accepts this
        ("1.0", _unpadded, "not standard base64"),  # ... and this
        ("0.3", _url_part, "gage never fetches a url"),
        ("1.0", _url_part, "gage never fetches a url"),
    ],
)
def test_refused_message_writes_nothing(homes, serving, tmp_path: Path, protocol: str, spoil: Callable[..., None], words: str) -> None:
    alice, bob = homes
    srv, events = serving(bob)
    bid, out = bundle(alice, tmp_path, b"\xfb\xff\xbf" * 10 + b"x", name="odd.bin")
    msg = artifact.export_message(out, protocol=protocol, message_id="m-bad", claims=None)
    spoil(file_parts(msg, protocol), b64_key(protocol))
    before = footprint(bob)
    resp = post(srv.url, rpc_body(protocol, msg, rid="r1"), version=protocol)
    err = resp.json()["error"]
    assert resp.json()["id"] == "r1" and err["code"] == -32602 and words in err["message"]
    assert gage_refusal(err, protocol)["status"] == "refused"
    assert footprint(bob) == before and listing.find(bob, bid) is None
    assert [e.kind for e in events] == ["error"]
    assert events[0].message.startswith("refused a request via A2A from 127.0.0.1") and words in events[0].message


def test_duplicate_keys_in_the_body_are_refused(homes, serving, tmp_path: Path) -> None:
    """Python's json (the SDK's) keeps the last of two keys, other parsers the first: gage reads neither."""
    alice, bob = homes
    srv, _ = serving(bob)
    _bid, out = bundle(alice, tmp_path)
    one = json.dumps(artifact.export_message(out, protocol="1.0", message_id="a", claims=None))
    body = f'{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{one},"message":{one}}}}}'.encode()
    before = footprint(bob)
    err = post(srv.url, body, version="1.0").json()["error"]
    assert err["code"] == -32700 and "duplicate key" in err["message"]
    assert footprint(bob) == before


def _raw_exchange(url: str, head: bytes, chunks: list[bytes]) -> tuple[bytes, int]:
    """Send a request by hand, stopping as soon as the server answers: (the answer, chunks sent by then)."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(head)
        sent = 0
        answer = b""
        while not answer and sent < len(chunks):
            s.sendall(chunks[sent])
            sent += 1
            s.settimeout(0.05)
            with contextlib.suppress(TimeoutError, BlockingIOError):
                answer = s.recv(65536)
        s.settimeout(10)
        # The server closes after answering, with body bytes unread: a reset may follow the answer.
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
                more = s.recv(65536)
                if not more:
                    break
                answer += more
        return answer, sent


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_body_over_the_cap_by_content_length_is_refused_unread(homes, serving) -> None:
    _alice, bob = homes
    srv, events = serving(bob, limits=SMALL)
    cap = SMALL.max_request_bytes
    before = footprint(bob)
    head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {cap + 1}\r\n\r\n"
    answer, _ = _raw_exchange(srv.url, head.encode(), [b""])  # not one byte of the body is sent
    assert answer.startswith(b"HTTP/1.1 413")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == -32600
    assert footprint(bob) == before and events[0].kind == "error" and "over" in events[0].message


def test_chunked_body_over_the_cap_is_refused_while_streaming(homes, serving, monkeypatch) -> None:
    _alice, bob = homes
    # Past the cap the server reads on and drops up to DRAIN_BYTES (so its answer is not
    # lost to a reset), then answers while the rest is still streaming in.
    monkeypatch.setattr(server, "DRAIN_BYTES", 1 << 20)
    srv, _ = serving(bob, limits=SMALL)
    cap = SMALL.max_request_bytes
    before = footprint(bob)
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
    size = 256 * 1024
    chunk = f"{size:x}\r\n".encode() + b" " * size + b"\r\n"
    chunks = [chunk] * (cap // size + 40)  # and never the final 0-chunk
    answer, sent = _raw_exchange(srv.url, head, chunks)
    assert answer.startswith(b"HTTP/1.1 413") and b"over this agent's limit" in answer
    assert sent < len(chunks)  # answered while the body was still streaming in
    assert footprint(bob) == before


def test_token_is_required_for_everything_but_the_card(homes, serving, tmp_path: Path) -> None:
    alice, bob = homes
    srv, events = serving(bob, token="s3cret-token")
    card = httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH, timeout=10)
    assert card.status_code == 200 and "bearer" in card.json()["securitySchemes"]
    bid, out = bundle(alice, tmp_path)
    body = rpc_body("1.0", artifact.export_message(out, protocol="1.0", message_id="m-t", claims=None))
    before = footprint(bob)
    for token in (None, "wrong", "s3cret-token-longer"):
        resp = post(srv.url, body, version="1.0", token=token)
        assert resp.status_code == 401 and resp.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(client.A2ARefusedError) as exc:
        client.send(alice, out, srv.url)
    assert exc.value.exit_code == Exit.A2A_REFUSED and "401" in str(exc.value)
    assert footprint(bob) == before and all(e.kind == "error" and "bearer token" in e.message for e in events)
    result = client.send(alice, out, srv.url, token="s3cret-token")
    assert result.delivered and listing.find(bob, bid).state == "pending"  # type: ignore[union-attr]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.org"])
def test_serving_beyond_loopback_without_a_token_refuses_to_start(homes, host: str) -> None:
    _alice, bob = homes
    with pytest.raises(UsageError, match="bearer token"):
        server.serve(bob, host=host, port=0, token=None)
    for ok in ("127.0.0.1", "127.3.4.5", "::1", "localhost"):
        server.check_binding(ok, None)


# --- send's error stages --------------------------------------------------------------------


def test_send_to_no_server_is_a_transport_error(homes, tmp_path: Path) -> None:
    alice, _bob = homes
    _bid, out = bundle(alice, tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the send: nobody listens there
    with pytest.raises(client.A2ATransportError) as exc:
        client.send(alice, out, f"http://127.0.0.1:{port}/", timeout=5)
    assert exc.value.exit_code == Exit.A2A_TRANSPORT


def _drop_0_3(card: dict[str, Any]) -> None:
    card["supportedInterfaces"] = [i for i in card["supportedInterfaces"] if i["protocolVersion"] != "0.3"]


def _drop_extension(card: dict[str, Any]) -> None:
    card["capabilities"]["extensions"] = []


@pytest.mark.parametrize(("edit", "protocol", "words"), [(_drop_0_3, "0.3", "no JSON-RPC interface"), (_drop_extension, "1.0", "gage extension")])
def test_send_discovery_errors(homes, tmp_path: Path, edit: Callable[[dict[str, Any]], None], protocol: str, words: str) -> None:
    alice, bob = homes
    _bid, out = bundle(alice, tmp_path)
    posted: list[object] = []
    with run_app(fake_agent(bob, posted.append, card_edit=edit)) as url:  # type: ignore[arg-type]
        with pytest.raises(client.A2ADiscoveryError, match=words) as exc:
            client.send(alice, out, url, protocol=protocol)
        with pytest.raises(client.A2ADiscoveryError, match="HTTP 404"):
            client.send(alice, out, url + "nowhere/agent.json")
    assert exc.value.exit_code == Exit.A2A_DISCOVERY and posted == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_send_to_an_agent_that_refuses(homes, serving, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    srv, _ = serving(bob, limits=SMALL)
    bid, out = bundle(alice, tmp_path, b"x" * (SMALL.max_bytes + 1))
    before = footprint(bob)
    with pytest.raises(client.A2ARefusedError, match="over the limit") as exc:
        client.send(alice, out, srv.url, protocol=protocol)
    assert exc.value.exit_code == Exit.A2A_REFUSED
    assert footprint(bob) == before and listing.find(bob, bid) is None


def test_no_gage_module_but_live_imports_the_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gage.carriers.a2a, gage.carriers.a2a.artifact, gage.carriers.a2a.card, gage.format.errors;"
        "bad = [m for m in ('a2a', 'starlette', 'uvicorn', 'httpx') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr



def _slow_body(url: str) -> socket.socket:
    """Open a POST that promises a body and sends one byte of it, then stalls."""
    parts = urllib.parse.urlsplit(url)
    s = socket.create_connection((parts.hostname, parts.port), timeout=10)
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 1000\r\n\r\n{")
    return s


def test_a_body_that_trickles_in_is_cut_off(homes, serving, monkeypatch) -> None:
    _alice, bob = homes
    monkeypatch.setattr(server, "BODY_SECONDS", 0.5)
    srv, events = serving(bob)
    before = footprint(bob)
    with _slow_body(srv.url) as s:
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408")
    assert footprint(bob) == before and any(e.kind == "error" and "did not arrive" in e.message for e in events)


def test_too_many_bodies_at_once_are_turned_away(homes, serving, tmp_path: Path, monkeypatch) -> None:
    """A crowd of slow senders cannot make the agent hold more than a few bodies in memory."""
    alice, bob = homes
    monkeypatch.setattr(server, "PEER_SLOTS", server.MAX_BODIES_AT_ONCE)  # all from one address here
    srv, events = serving(bob)
    slow = [_slow_body(srv.url) for _ in range(server.MAX_BODIES_AT_ONCE)]
    try:
        busy = False
        for _ in range(2400):  # wait until the server is reading all of them (a cap of 2 minutes)
            busy = post(srv.url, b"{}", version="1.0").status_code == 503
            if busy:
                break
            time.sleep(0.05)
        assert busy
        assert any(e.kind == "error" and "busy" in e.message for e in events)
    finally:
        for s in slow:
            s.close()
    # Once they are gone, a real delivery goes through.
    bid, out = bundle(alice, tmp_path)
    for _ in range(2400):  # a cap of 2 minutes, for a busy machine
        try:
            result = client.send(alice, out, srv.url)
            break
        except (client.A2ARefusedError, client.A2ATransportError):
            time.sleep(0.05)
    assert result.delivered and result.bundle == bid
