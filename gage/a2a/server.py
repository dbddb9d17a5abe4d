"""Live A2A, the serving side: a gage home as an A2A agent (`gage a2a serve`).

With gage/a2a/client.py, the only gage modules that import the SDK, starlette, uvicorn
or httpx (the optional extra `gage[a2a]`). The SDK speaks the protocol (1.0 and 0.3 on one JSON-RPC endpoint,
the card, tasks); gage decides what arrived. The SDK re-encodes what it parses: its 1.0
parser accepts URL-safe and unpadded base64, and its 0.3 conversion has decoded such text
into other bytes. So `_Gatekeeper`, an ASGI layer in front of the SDK, reads the raw
body under a size cap, checks the bearer token, and runs gage's own strict parser over
the JSON-RPC `params.message`. A refusal is answered there and the SDK never sees it;
an accepted read rides in the ASGI scope to the executor, which lands exactly those
bytes in `inbox/pending` and never reads a bundle from the SDK's objects.

Nothing here accepts a bundle. A task state, a cancel, or metadata that says
"accepted" changes nothing; the reply says "delivered to pending; not accepted", and
`send` reports what a receiver says as its claims, never as acceptance.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
)
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCard, Message, Part, Role
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf.json_format import ParseDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import retirement
from ..errors import GageError, GageIOError, MalformedError, UsageError
from ..home import Home
from ..sanitize import clip, quoted, visible
from ..strictjson import loads as strict_loads
from . import artifact
from . import card as card_mod
from .artifact import EXTENSION_URI, Carried, Landed, Limits

log = logging.getLogger(__name__)

# JSON-RPC methods that carry a message, and the protocol version each belongs to.
SEND_METHODS = {"SendMessage": "1.0", "SendStreamingMessage": "1.0", "message/send": "0.3", "message/stream": "0.3"}
_INTAKE = "gage.a2a.intake"  # the ASGI scope key, and the call-context state key, of gage's reading
_INVALID_PARAMS = -32602
_INVALID_REQUEST = -32600
_PARSE_ERROR = -32700
MAX_BODIES_AT_ONCE = 4  # request bodies read at the same time; more are answered 503
BODY_SECONDS = 120.0  # the longest a request body may take to arrive


# --- serving: the gatekeeper ----------------------------------------------------------------


@dataclass(frozen=True)
class _Intake:
    """Gage's own reading of one request's message, made from the raw body before the SDK parsed it."""

    protocol: str
    message_id: object
    carried: list[Carried]
    peer: str


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown peer"


def _rpc_error(request_id: object, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


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


def _header(scope: Scope, name: bytes) -> list[bytes]:
    return [v for k, v in scope.get("headers", []) if k.lower() == name]


def _bearer_ok(scope: Scope, token: str) -> bool:
    values = _header(scope, b"authorization")
    if len(values) != 1:
        return False
    scheme, _, given = values[0].partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token.encode("utf-8"))


class _TooLarge(Exception):
    pass


class _Gone(Exception):
    pass


async def _read_capped(scope: Scope, receive: Receive, cap: int) -> bytes:
    """The whole body, or `_TooLarge` as soon as the declared or counted size passes `cap`."""
    declared = _header(scope, b"content-length")
    if declared:
        try:
            if int(declared[0]) > cap:
                raise _TooLarge
        except ValueError:
            raise _TooLarge from None
    chunks: list[bytes] = []
    total = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise _Gone
        chunk = msg.get("body", b"")
        total += len(chunk)
        if total > cap:
            raise _TooLarge  # chunked (or lying) bodies are counted as they stream
        chunks.append(chunk)
        if not msg.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the SDK the body gage already read, then the client's own events."""
    done = False

    async def replay() -> dict[str, Any]:
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return replay


class _Events:
    """The one-line reports `on_event` gets: every untrusted piece made visible first."""

    def __init__(self, on_event: Callable[[str], None] | None) -> None:
        self.on_event = on_event

    def emit(self, line: str) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(line)
        except Exception:  # a broken printer must not turn a delivery into an error reply
            log.exception("on_event failed")

    def refused(self, peer: str, why: str) -> None:
        self.emit(f"refused a request via A2A from {visible(peer)}: {visible(clip(why, 500))}; nothing was written")

    def landed(self, peer: str, c: Carried, landed: Landed) -> None:
        short = landed.id[:12]
        who = f" claiming to be {quoted(clip(c.claims['from_name'], 200))}" if c.claims.get("from_name") else ""
        if not landed.new:
            line = f"{short}: arrived again via A2A from {visible(peer)}{who}; already held, nothing changed"
        else:
            line = f"{short}: delivered to pending via A2A from {visible(peer)}{who} (unread; nothing is accepted until you say so)"
            if not landed.ok:
                line += f"; it does NOT verify: {visible(clip(landed.problem or 'see its verdict', 300))}"
        for note in landed.notes:
            line += f"; {visible(clip(note, 300))}"
        self.emit(line)


class _Gatekeeper:
    """ASGI layer in front of the SDK: bearer token, body cap, and gage's own parse of the message."""

    def __init__(self, app: ASGIApp, *, limits: Limits, token: str | None, events: _Events) -> None:
        self.app = app
        self.limits = limits
        self.token = token
        self.events = events
        # Each body in flight may hold up to max_request_bytes: a few at once bound the memory a
        # crowd of (or a slow) sender can take, and a body that trickles in is cut off.
        self._bodies = asyncio.Semaphore(MAX_BODIES_AT_ONCE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer = _peer(scope)
        is_card = scope["method"] in ("GET", "HEAD") and scope["path"] == card_mod.CARD_PATH
        if self.token is not None and not is_card and not _bearer_ok(scope, self.token):
            self.events.refused(peer, "no valid bearer token")
            body = _rpc_error(None, _INVALID_REQUEST, "this gage agent needs Authorization: Bearer <token>")
            await _respond(send, 401, body, [(b"www-authenticate", b'Bearer realm="gage"')])
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        cap = self.limits.max_request_bytes
        if self._bodies.locked():
            self.events.refused(peer, "busy: too many requests being read at once")
            await _respond(send, 503, _rpc_error(None, _INVALID_REQUEST, "this gage agent is busy; try again"), [(b"retry-after", b"5")])
            return
        try:
            async with self._bodies:
                raw = await asyncio.wait_for(_read_capped(scope, receive, cap), BODY_SECONDS)
        except TimeoutError:
            self.events.refused(peer, f"the request body did not arrive within {BODY_SECONDS:.0f} s")
            await _respond(send, 408, _rpc_error(None, _INVALID_REQUEST, "the request body took too long"))
            return
        except _TooLarge:
            self.events.refused(peer, f"the request body is over {cap} bytes")
            await _respond(send, 413, _rpc_error(None, _INVALID_REQUEST, f"the request body is over this agent's limit of {cap} bytes"))
            return
        except _Gone:
            return
        # Decoding up to max_bytes of base64 is real work: off the event loop, so other requests go on.
        refusal, why, intake = await asyncio.to_thread(self._read, raw, peer)
        if refusal is not None:
            self.events.refused(peer, why)
            await _respond(send, 200, refusal)
            return
        if intake is not None:
            scope = {**scope, _INTAKE: intake}
        await self.app(scope, _replay(raw, receive), send)

    def _read(self, raw: bytes, peer: str) -> tuple[dict[str, Any] | None, str, _Intake | None]:
        """(a JSON-RPC error to answer with, and why; or gage's reading of the message, None for other methods)."""
        try:
            doc = strict_loads(raw, limit=self.limits.max_request_bytes, what="the request body")
        except MalformedError as exc:
            return _rpc_error(None, _PARSE_ERROR, f"gage refused the request: {exc}"), str(exc), None
        if not isinstance(doc, dict):
            return None, "", None  # a batch: the SDK refuses those itself
        method = doc.get("method")
        protocol = SEND_METHODS.get(method) if isinstance(method, str) else None
        if protocol is None:
            return None, "", None  # tasks/get, cancel, ...: nothing to land, and none of them can accept
        params = doc.get("params")
        message = params.get("message") if isinstance(params, dict) else None
        try:
            carried = artifact.parse(message, protocol=protocol, limits=self.limits)
        except GageError as exc:
            data = {EXTENSION_URI: {"status": "refused", "stage": exc.stage, "error": str(exc)}}
            return _rpc_error(_request_id(doc), _INVALID_PARAMS, f"gage refused the message: {exc}", data), str(exc), None
        assert isinstance(message, dict)  # parse accepted it
        return None, "", _Intake(protocol=protocol, message_id=message.get("messageId"), carried=carried, peer=peer)


class _ContextBuilder(DefaultServerCallContextBuilder):
    """Carries the gatekeeper's reading from the ASGI scope into the executor's call context."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        intake = request.scope.get(_INTAKE)
        if intake is not None:
            context.state[_INTAKE] = intake
        return context


# --- serving: the executor ------------------------------------------------------------------


def _reply(context: RequestContext, text: str, meta: dict[str, Any]) -> Message:
    msg = Message(
        role=Role.ROLE_AGENT,
        message_id=uuid.uuid4().hex,
        context_id=context.context_id or "",
        parts=[Part(text=text)],
        extensions=[EXTENSION_URI],
    )
    msg.metadata.update({EXTENSION_URI: meta})
    return msg


def _outcome(landed: Landed) -> tuple[str, dict[str, str]]:
    """The reply line and metadata for one bundle: where it is, never that it is accepted."""
    meta = {"status": "delivered", "bundle": landed.id, "state": "pending" if landed.new else "held", "checks": "ok" if landed.ok else "failed"}
    if not landed.new:
        return f"{landed.id}: already held here; nothing changed; not accepted", meta
    if landed.ok:
        return f"{landed.id}: delivered to pending; not accepted", meta
    meta["problem"] = landed.problem or ""
    return f"{landed.id}: delivered to pending, but it does not verify ({landed.problem}); not accepted", meta


class _Receiver(AgentExecutor):
    """Lands what the gatekeeper read, and answers in gage's words."""

    def __init__(self, home: Home, events: _Events) -> None:
        self.home = home
        self.events = events

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        intake = context.call_context.state.get(_INTAKE)
        sdk_id = context.message.message_id if context.message is not None else None
        if not isinstance(intake, _Intake) or intake.message_id != sdk_id:
            # Only reachable if the SDK routed a message the gatekeeper did not read: land nothing.
            why = "this message did not pass gage's reading of the request; nothing was written"
            await event_queue.enqueue_event(_reply(context, why, {"status": "refused", "stage": "refused", "error": why}))
            return
        transport = {"carrier": "a2a", "protocol": intake.protocol, "peer": intake.peer}
        try:
            landed = await asyncio.to_thread(artifact.land, self.home, intake.carried, transport=transport)
        except GageError as exc:
            self.events.refused(intake.peer, str(exc))
            meta = {"status": "refused", "stage": exc.stage, "error": str(exc)}
            await event_queue.enqueue_event(_reply(context, f"refused: {exc}", meta))
            return
        statements = await asyncio.to_thread(retirement.apply_arrivals, self.home, [one.id for one in landed if one.new])
        lines, metas = [], []
        for c, one in zip(intake.carried, landed, strict=True):
            self.events.landed(intake.peer, c, one)
            line, meta = _outcome(one)
            lines.append(line)
            metas.append(meta)
        for outcome in statements:
            what = "key statement applied" if outcome.applied else "key statement"
            self.events.emit(f"{(outcome.carrier or '')[:12]}: {what}: {visible(outcome.message)}")
        meta_out: dict[str, Any] = dict(metas[0]) if len(metas) == 1 else {"status": "delivered", "bundles": metas}
        await event_queue.enqueue_event(_reply(context, "\n".join(lines), meta_out))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # A delivery is finished when its reply is sent; and no A2A call moves a bundle.
        raise UnsupportedOperationError(message="gage deliveries cannot be cancelled; a bundle in pending stays there until its person decides")


# --- serving: the app and the server --------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Anyone who can reach the port can drop bundles in pending: off this machine, only with a token."""
    if token is not None and (not token or any(c.isspace() or not c.isprintable() for c in token)):
        raise UsageError("the bearer token must be non-empty printable text without spaces")
    if token is None and not is_loopback(host):
        raise UsageError(
            f"serving on {host} would let anyone who can reach it fill your pending inbox: "
            "give a bearer token (--token), or bind to 127.0.0.1"
        )


def _default_url(host: str, port: int) -> str:
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def build_app(
    home: Home, *, url: str, token: str | None = None, limits: Limits | None = None, on_event: Callable[[str], None] | None = None
) -> ASGIApp:
    """The ASGI app of `serve`, for embedding it in another server."""
    limits = limits or Limits.of(home)
    events = _Events(on_event)
    card = ParseDict(card_mod.agent_card(home, url, limits, bearer=token is not None), AgentCard())
    handler = DefaultRequestHandler(agent_executor=_Receiver(home, events), task_store=InMemoryTaskStore(), agent_card=card)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()

    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", context_builder=_ContextBuilder(), enable_v0_3_compat=True),
    ]
    return _Gatekeeper(Starlette(routes=routes, lifespan=lifespan), limits=limits, token=token, events=events)


class Server:
    """A gage A2A agent on a socket bound at construction, so its URL (and port 0's real port) is known first."""

    def __init__(
        self,
        home: Home,
        *,
        host: str = "127.0.0.1",
        port: int,
        token: str | None = None,
        limits: Limits | None = None,
        on_event: Callable[[str], None] | None = None,
        public_url: str | None = None,
    ) -> None:
        check_binding(host, token)
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host.strip("[]"), port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        try:
            self.port = int(sock.getsockname()[1])
            self.url = public_url or _default_url(host, self.port)
            app = build_app(home, url=self.url, token=token, limits=limits, on_event=on_event)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        # log_config=None: uvicorn installs no handlers of its own; `serve` adds one that makes text visible.
        config = uvicorn.Config(app, interface="asgi3", lifespan="on", log_level="warning", access_log=False, log_config=None)
        self._uvicorn = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C in the main thread) or `stop()`."""
        try:
            self._uvicorn.run(sockets=[self.sock])
        finally:
            self.sock.close()

    def start(self, timeout: float = 10.0) -> Server:
        """Serve from a background thread; returns once the agent answers."""
        self._thread = threading.Thread(target=self.run, name=f"gage-a2a-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise GageIOError(f"the A2A server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._uvicorn.force_exit = True
                self._thread.join(timeout)

    def __enter__(self) -> Server:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _VisibleFormatter(logging.Formatter):
    """The SDK and uvicorn log request text (a version header, a peer's error message): never raw to a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record), oneline=False)


def show_logs_visibly() -> None:
    """Route the SDK's and uvicorn's warnings to stderr through `visible`, once per process."""
    for name in ("a2a", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if any(isinstance(h.formatter, _VisibleFormatter) for h in logger.handlers):
            continue
        handler = logging.StreamHandler()
        handler.setFormatter(_VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def serve(
    home: Home,
    *,
    host: str = "127.0.0.1",
    port: int,
    token: str | None = None,
    limits: Limits | None = None,
    on_event: Callable[[str], None] | None = None,
    public_url: str | None = None,
) -> None:
    """Serve `home` as an A2A agent until interrupted. `public_url` is what the card advertises, if not host:port."""
    show_logs_visibly()
    Server(home, host=host, port=port, token=token, limits=limits, on_event=on_event, public_url=public_url).run()
