"""The gatekeeper of `gage a2a serve`: an ASGI layer that reads every request before the SDK does.

The SDK re-encodes what it parses: its 1.0 parser accepts URL-safe and unpadded base64,
and its 0.3 conversion has decoded such text into other bytes. So this layer, in front
of the SDK, reads the raw body under a size cap and a time limit, checks the bearer
token, and runs gage's own strict parser (`reader`) over the JSON-RPC `params.message`.
A refusal is answered here and the SDK never sees it; an accepted read rides in the
ASGI scope (under INTAKE) to the executor in `server`, which lands exactly those bytes.

Split out of server.py, so what meets a peer first is read on its own. It speaks plain ASGI (dicts and callables, typed
below as starlette types them), so it imports no SDK, starlette or uvicorn: only
server.py and client.py load the optional extra (tests/test_layering.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.bodies import (
    BODY_SECONDS,
    ASGIApp,
    Gone,
    Message,
    Receive,
    Scope,
    Send,
    Slow,
    TooLarge,
    bearer_ok,
    drain,
    header_values,
    read_capped,
    replay_body,
)
from gage.carriers.a2a.reader import Carried, parse
from gage.carriers.a2a.reports import Events
from gage.carriers.a2a.wire import EXTENSION_URI, Limits
from gage.format.errors import GageError, MalformedError
from gage.format.strictjson import loads as strict_loads
from gage.format.strictjson import utf8_text

# JSON-RPC methods that carry a message, and the protocol version each belongs to.
SEND_METHODS = {"SendMessage": "1.0", "SendStreamingMessage": "1.0", "message/send": "0.3", "message/stream": "0.3"}
INTAKE = "gage.carriers.a2a.intake"  # the ASGI scope key, and the call-context state key, of gage's reading
_INVALID_PARAMS = -32602
_INVALID_REQUEST = -32600
_PARSE_ERROR = -32700
MAX_BODIES_AT_ONCE = 4  # requests in flight at once (read, parsed, landing); more are answered 503
PEER_SLOTS = 2  # of those, at most this many from one address: one slow peer cannot take them all
BODY_GRACE = 10.0  # after this many seconds a body must have kept arriving at BODY_RATE on average
BODY_RATE = 64 * 1024  # bytes a second
# A body refused unread (no token, over the cap) is read and thrown away, up to this many
# seconds, before the answer, so the answer is not lost to the reset a close with unread
# bytes causes: the sender sees 401 or 413, never a dropped connection.
DRAIN_SECONDS = 10.0
CARD_MAX_AGE = 900  # Cache-Control on the card: the 15 minutes a gage client keeps one
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


@dataclass(frozen=True)
class Intake:
    """Gage's own reading of one request's message, made from the raw body before the SDK parsed it."""

    protocol: str
    message_id: object
    carried: list[Carried]
    peer: str


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown peer"


def _rpc_error(request_id: object, code: int, message: str, data: object = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def refusal_data(protocol: str, stage: str, error: str) -> object:
    """`error.data` of a gage refusal, in the shape each protocol version requires.

    1.0 (A2A section 9.5) requires a list of ProtoJSON `Any` objects, each with `@type`:
    one `google.rpc.ErrorInfo` whose metadata (strings only) is gage's refusal. 0.3 has no
    rule for `data`, and gage's 0.3 clients read the object under the extension URI.
    """
    gage = {"status": "refused", "stage": stage, "error": error}
    if protocol == "1.0":
        reason = "GAGE_" + stage.upper().replace("-", "_")
        return [{"@type": ERROR_INFO, "reason": reason, "domain": EXTENSION_URI, "metadata": gage}]
    return {EXTENSION_URI: gage}


def _request_protocol(scope: Scope) -> str:
    """The protocol a request claims by its header alone (no header is 0.3, as the A2A spec says)."""
    values = header_values(scope, b"a2a-version")
    return "1.0" if values and values[0].strip().split(b".")[:2] == [b"1", b"0"] else "0.3"


def _request_id(doc: dict[str, Any]) -> object:
    rid = doc.get("id")
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


async def _respond(send: Send, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if status >= 400:
        # The body may be unread: the connection cannot carry another request.
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": data})


class Gatekeeper:
    """ASGI layer in front of the SDK: bearer token, body cap, and gage's own parse of the message."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: Limits,
        token: str | None,
        events: Events,
        bodies_at_once: int = MAX_BODIES_AT_ONCE,
        body_seconds: float = BODY_SECONDS,
        body_grace: float = BODY_GRACE,
        body_rate: int = BODY_RATE,
        peer_slots: int = PEER_SLOTS,
        cards: dict[str, dict[str, Any]] | None = None,
        drain_bytes: int | None = None,
        drain_seconds: float = DRAIN_SECONDS,
    ) -> None:
        self.app = app
        self.limits = limits
        self.token = token
        self.events = events
        # The card in each protocol version's own shape ("1.0", "0.3"): served here, not by the
        # SDK, whose card mixes the two and which a strict 1.0 reader refuses.
        self.cards = {v: _card_response(c) for v, c in (cards or {}).items()}
        self.drain_bytes = limits.max_request_bytes if drain_bytes is None else drain_bytes
        self.drain_seconds = drain_seconds
        # Each body in flight may hold up to max_request_bytes: a few at once bound the memory a
        # crowd of (or a slow) sender can take, and a body that trickles in is cut off.
        self._bodies = asyncio.Semaphore(bodies_at_once)
        self._per_peer: dict[str, int] = {}
        self.peer_slots = peer_slots
        self.body_seconds = body_seconds
        self.body_grace = body_grace
        self.body_rate = body_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer = _peer(scope)
        is_card = scope["method"] in ("GET", "HEAD") and scope["path"] in (card_mod.CARD_PATH, card_mod.CARD_PATH_03)
        if is_card and self.cards:
            await self._card(scope, send)
            return
        if self.token is not None and not is_card and not bearer_ok(scope, self.token):
            self.events.refused(peer, "no valid bearer token")
            body = _rpc_error(None, _INVALID_REQUEST, "this gage agent needs Authorization: Bearer <token>")
            await self._drain_refused(scope, receive)
            await _respond(send, 401, body, [(b"www-authenticate", b'Bearer realm="gage"')])
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self._bodies.locked() or self._per_peer.get(peer, 0) >= self.peer_slots:
            mine = self._per_peer.get(peer, 0) >= self.peer_slots
            self.events.refused(peer, "busy: this peer already has its share of requests in flight" if mine else "busy: too many requests in flight at once")
            await self._drain_refused(scope, receive)  # read and dropped, so the 503 arrives whole
            await _respond(send, 503, _rpc_error(None, _INVALID_REQUEST, "this gage agent is busy; try again"), [(b"retry-after", b"5")])
            return
        # The slot is held for the whole request (read, gage's parse, the SDK, landing), not
        # only while the body is read: memory is bounded by the slots times what one request
        # holds, however long landing waits for the home lock, so many requests at once cannot exhaust memory.
        async with self._bodies:
            self._per_peer[peer] = self._per_peer.get(peer, 0) + 1
            try:
                await self._request(scope, receive, send, peer)
            finally:
                self._per_peer[peer] -= 1
                if not self._per_peer[peer]:
                    del self._per_peer[peer]

    async def _request(self, scope: Scope, receive: Receive, send: Send, peer: str) -> None:
        cap = self.limits.max_request_bytes
        try:
            raw = await read_capped(scope, receive, cap, total=self.body_seconds, grace=self.body_grace, rate=self.body_rate)
        except Slow as exc:
            self.events.refused(peer, f"the request body did not arrive {exc.why}")
            await _respond(send, 408, _rpc_error(None, _INVALID_REQUEST, "the request body took too long"))
            return
        except TooLarge as exc:
            self.events.refused(peer, f"the request body is over {cap} bytes")
            # Within the bound, read the rest and drop it, so the 413 arrives whole.
            await self._drain_refused(scope, receive, streamed=exc.declared is None)
            await _respond(send, 413, _rpc_error(None, _INVALID_REQUEST, f"the request body is over this agent's limit of {cap} bytes"))
            return
        except Gone:
            return
        # Decoding up to max_bytes of base64 is real work: off the event loop, so other requests go on.
        # The body is handed over in a list the reader empties, so it is let go of as soon as it is read.
        held = [raw]
        del raw
        refusal, why, intake, body = await asyncio.to_thread(self._read, held, peer, _request_protocol(scope))
        if refusal is not None:
            self.events.refused(peer, why)
            await _respond(send, 200, refusal)
            return
        if intake is not None:
            scope = {**scope, INTAKE: intake}
            send = _echo_extensions(scope, send)
        replay = replay_body(body, receive)
        del body  # the replay hands it to the SDK once and lets go of it
        await self.app(scope, replay, send)

    async def _drain_refused(self, scope: Scope, receive: Receive, *, streamed: bool = False) -> None:
        """Drop the rest of a refused body: a declared one whole if it is within a cap and
        `drain_bytes` (else none of it), a streamed one for up to `drain_bytes` more."""
        if streamed:
            await drain(receive, self.drain_bytes, self.drain_seconds)
            return
        declared = header_values(scope, b"content-length")
        try:
            length = int(declared[0]) if declared else 0
        except ValueError:
            return
        if 0 < length <= self.limits.max_request_bytes + self.drain_bytes:
            await drain(receive, length, self.drain_seconds)
        elif not declared and header_values(scope, b"transfer-encoding"):
            await drain(receive, self.drain_bytes, self.drain_seconds)

    async def _card(self, scope: Scope, send: Send) -> None:
        """The card in the shape the request can read: the strict 1.0 card to `A2A-Version:
        1.0`; the hybrid card to any other request at CARD_PATH, since A2A 1.0 takes one
        without the header for a 0.3 request (section 3.6.2); 0.3's own at CARD_PATH_03."""
        if scope["path"] == card_mod.CARD_PATH_03:
            version = "0.3"
        else:
            version = "1.0" if _request_protocol(scope) == "1.0" else "hybrid"
        body, etag = self.cards.get(version) or self.cards["1.0"]
        headers = [
            (b"content-type", b"application/json"),
            (b"etag", etag),
            (b"cache-control", f"max-age={CARD_MAX_AGE}".encode()),
            (b"vary", b"A2A-Version"),
        ]
        if etag in [t.strip() for v in header_values(scope, b"if-none-match") for t in v.split(b",")]:
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    def _read(self, held: list[bytearray], peer: str, claimed: str) -> tuple[dict[str, Any] | None, str, Intake | None, bytes]:
        """(a JSON-RPC error to answer with, and why; or gage's reading of the message, None for
        other methods; and the body the SDK is given).

        The envelope is read as `reader.parse_bytes` reads it, fractional numbers allowed
        (another extension's metadata, written by protobuf): one reader, one rule, for
        `serve` and `a2a import` alike, so a peer cannot pass one and not the other. For a message gage read, the SDK is given
        the request without its bundle bytes (`_for_the_sdk`): the executor lands gage's
        reading, never the SDK's, so the SDK's copies of a large request were only memory
        (a large request held several times over). `held` is emptied as soon as the body is parsed.
        """
        raw = held.pop()
        try:
            text = utf8_text(raw, limit=self.limits.max_request_bytes, what="the request body")
            # A body that names no send method is small work for the SDK: it gets the bytes as they came.
            kept = None if _is_send(text) else bytes(raw)
            del raw  # from here a message is held as text, then as parsed JSON, never twice over
            doc = strict_loads(text, limit=self.limits.max_request_bytes, what="the request body", floats=True)
            del text
        except MalformedError as exc:
            data = refusal_data(claimed, exc.stage, str(exc))
            return _rpc_error(None, _PARSE_ERROR, f"gage refused the request: {exc}", data), str(exc), None, b""
        method = doc.get("method") if isinstance(doc, dict) else None
        protocol = SEND_METHODS.get(method) if isinstance(method, str) else None
        if protocol is None or not isinstance(doc, dict):
            # A batch (the SDK refuses those itself), tasks/get, cancel, ...: nothing to land,
            # and none of them can accept. Given to the SDK as they came.
            return None, "", None, kept if kept is not None else json.dumps(doc).encode("utf-8")
        params = doc.get("params")
        message = params.get("message") if isinstance(params, dict) else None
        try:
            carried = parse(message, protocol=protocol, limits=self.limits)
        except GageError as exc:
            data = refusal_data(protocol, exc.stage, str(exc))
            return _rpc_error(_request_id(doc), _INVALID_PARAMS, f"gage refused the message: {exc}", data), str(exc), None, b""
        assert isinstance(message, dict) and isinstance(params, dict)  # parse accepted it
        intake = Intake(protocol=protocol, message_id=message.get("messageId"), carried=carried, peer=peer)
        return None, "", intake, _for_the_sdk(doc, params, message)


_SEND_HINT = tuple(f'"{m}"' for m in SEND_METHODS)


def _is_send(text: str) -> bool:
    """Whether the body may be a message to land (a send method is named in it): else its bytes are kept for the SDK."""
    return any(m in text for m in _SEND_HINT)


def _for_the_sdk(doc: dict[str, Any], params: dict[str, Any], message: dict[str, Any]) -> bytes:
    """The request as the SDK is given it once gage has read the message: the same method, id,
    message id, roles, part names and gage's own metadata, with every part's bytes empty and
    other extensions' metadata (the message's and the request's) left out. The SDK answers
    the protocol (the task, the reply); what lands is gage's reading (spec/a2a.md section 10)."""
    parts = []
    for part in message.get("parts") or []:
        part = dict(part)
        if isinstance(part.get("raw"), str):
            part["raw"] = ""
        if isinstance(part.get("file"), dict) and isinstance(part["file"].get("bytes"), str):
            part["file"] = {**part["file"], "bytes": ""}
        part.pop("metadata", None)
        parts.append(part)
    meta = message.get("metadata")
    slim: dict[str, Any] = {**message, "parts": parts}
    if isinstance(meta, dict) and EXTENSION_URI in meta:
        slim["metadata"] = {EXTENSION_URI: meta[EXTENSION_URI]}
    else:
        slim.pop("metadata", None)
    rest = {k: v for k, v in params.items() if k not in ("message", "metadata")}
    return json.dumps({**doc, "params": {**rest, "message": slim}}).encode("utf-8")


def _card_response(card: dict[str, Any]) -> tuple[bytes, bytes]:
    """A card's bytes and its ETag (a hash of the bytes, so it changes exactly when they do)."""
    body = json.dumps(card, separators=(",", ":")).encode("utf-8")
    return body, b'"' + hashlib.sha256(body).hexdigest()[:32].encode() + b'"'


def _echo_extensions(scope: Scope, send: Send) -> Send:
    """A `send` that names the gage extension in the reply's header when the request activated it.

    A2A: an agent SHOULD echo the extensions it used in `A2A-Extensions` (0.3:
    `X-A2A-Extensions`). Only gage's own URI, and only when the request listed it.
    """
    name = b"a2a-extensions" if header_values(scope, b"a2a-extensions") else b"x-a2a-extensions"
    asked = {u.strip() for v in header_values(scope, name) for u in v.decode("latin-1").split(",")}
    if EXTENSION_URI not in asked:
        return send

    async def echoing(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (name, EXTENSION_URI.encode())]}
        await send(message)

    return echoing
