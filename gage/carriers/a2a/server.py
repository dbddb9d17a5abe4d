"""Live A2A, the serving side: a gage home as an A2A agent (`gage a2a serve`).

With gage/carriers/a2a/client.py, the only gage modules that import the SDK, starlette, uvicorn
or httpx (the optional extra `gage[a2a]`). The SDK speaks the protocol (1.0 and 0.3 on one JSON-RPC endpoint,
the card, tasks); gage decides what arrived. The SDK re-encodes what it parses, so
every request first passes `gatekeeper.Gatekeeper`, an ASGI layer in front of the SDK
that reads the raw body under a size cap, checks the bearer token, and runs gage's own
strict parser over the JSON-RPC `params.message`. A refusal is answered there and the
SDK never sees it; an accepted read rides in the ASGI scope to the executor here, which
lands exactly those bytes in `inbox/pending` and never reads a bundle from the SDK's objects.

What it lands and refuses it reports as `gage watch`'s carriers do, as watch events
(gage.carriers.a2a.reports), for the same printer.

Nothing here accepts a bundle. A task state, a cancel, or metadata that says
"accepted" changes nothing; the reply says "delivered to pending; not accepted", and
`send` reports what a receiver says as its claims, never as acceptance.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCard, Message, Part, Role
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf.json_format import ParseDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import ASGIApp

from gage.carriers.a2a import artifact, connections
from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.artifact import EXTENSION_URI, Landed, Limits
from gage.carriers.a2a.bodies import BODY_SECONDS
from gage.carriers.a2a.gatekeeper import (
    BODY_GRACE,
    BODY_RATE,
    DRAIN_SECONDS,
    INTAKE,
    MAX_BODIES_AT_ONCE,
    PEER_SLOTS,
    SEND_METHODS,
    Gatekeeper,
    Intake,
)
from gage.carriers.a2a.reports import Events
from gage.carriers.events import WatchEvent
from gage.format.errors import GageError, GageIOError, UsageError
from gage.format.sanitize import clip, visible
from gage.home.layout import Home
from gage.trust import retirement

__all__ = [
    "BODY_GRACE",
    "BODY_RATE",
    "BODY_SECONDS",
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "LOCK_SECONDS",
    "MAX_BODIES_AT_ONCE",
    "PEER_SLOTS",
    "SEND_METHODS",
    "Server",
    "build_app",
    "check_binding",
    "is_loopback",
    "serve",
    "show_logs_visibly",
]


DRAIN_BYTES: int | None = None  # how much of a refused body is read and dropped; None: one request cap
# Landing waits for the home lock at most this long (another gage process may hold it), on an
# executor of its own: a held lock turns deliveries away ("refused", stage io) instead of
# piling requests, with everything they hold, onto the shared thread pool. Counted
# from when the delivery reaches the executor (a wait for a landing thread counts too), and
# well inside a sender's reply deadline (client.REPLY_SECONDS, 30 s), so the refusal reaches it.
LOCK_SECONDS = 20.0
LANDING_THREADS = 2
log = logging.getLogger("gage.carriers.a2a.serve")


def _land_by(deadline: float, home: Home, carried: Any, transport: dict[str, str]) -> tuple[list[Landed], list[retirement.Outcome]]:
    """Land, and apply the key statements the new bundles carry, under one hold of the home lock
    waited for only until `deadline`: the time queued for a landing thread is taken from the
    wait, and nothing after it waits again (remembering the signer, applying a statement), so
    a busy home is a refusal within LOCK_SECONDS, never a reply after the sender gave up."""
    with home.lock(timeout=max(0.0, deadline - time.monotonic())):
        landed = artifact.land(home, carried, transport=transport, lock_timeout=0.0)
        return landed, retirement.apply_arrivals(home, [one.id for one in landed if one.new])


class _ContextBuilder(DefaultServerCallContextBuilder):
    """Carries the gatekeeper's reading from the ASGI scope into the executor's call context."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        intake = request.scope.get(INTAKE)
        if intake is not None:
            context.state[INTAKE] = intake
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

    def __init__(self, home: Home, events: Events) -> None:
        self.home = home
        self.events = events
        self.pool = ThreadPoolExecutor(max_workers=LANDING_THREADS, thread_name_prefix="gage-land")

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        intake = context.call_context.state.get(INTAKE)
        sdk_id = context.message.message_id if context.message is not None else None
        if not isinstance(intake, Intake) or intake.message_id != sdk_id:
            # Only reachable if the SDK routed a message the gatekeeper did not read: land nothing.
            why = "this message did not pass gage's reading of the request; nothing was written"
            await event_queue.enqueue_event(_reply(context, why, {"status": "refused", "stage": "refused", "error": why}))
            return
        transport = {"carrier": "a2a", "protocol": intake.protocol, "peer": intake.peer}
        try:
            loop = asyncio.get_running_loop()
            land = functools.partial(_land_by, time.monotonic() + LOCK_SECONDS, self.home, intake.carried, transport)
            landed, statements = await loop.run_in_executor(self.pool, land)
        except GageError as exc:
            self.events.refused(intake.peer, str(exc))
            meta = {"status": "refused", "stage": exc.stage, "error": str(exc)}
            await event_queue.enqueue_event(_reply(context, f"refused: {exc}", meta))
            return
        lines, metas = [], []
        if self.events.on_event is not None:
            # Said before the reply, on a landing thread: the line's verdict reads the home.
            await loop.run_in_executor(self.pool, functools.partial(self._report, intake, landed, statements))
        for one in landed:
            line, meta = _outcome(one)
            lines.append(line)
            metas.append(meta)
        meta_out: dict[str, Any] = dict(metas[0]) if len(metas) == 1 else {"status": "delivered", "bundles": metas}
        await event_queue.enqueue_event(_reply(context, "\n".join(lines), meta_out))

    def _report(self, intake: Intake, landed: list[Landed], statements: list[retirement.Outcome]) -> None:
        try:
            for c, one in zip(intake.carried, landed, strict=True):
                self.events.landed(self.home, intake.peer, c, one)
            for outcome in statements:
                self.events.statement(outcome)
        except Exception:  # what landed stays landed: a report that fails must not turn the reply into an error
            log.exception("reporting a delivery failed")

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
    home: Home, *, url: str, token: str | None = None, limits: Limits | None = None, on_event: Callable[[WatchEvent], None] | None = None
) -> ASGIApp:
    """The ASGI app of `serve`, for embedding it in another server. `on_event` gets what it
    reports (gage.carriers.a2a.reports): watch events, whose messages hold a peer's words raw."""
    limits = limits or Limits.of(home)
    events = Events(on_event)
    card_json = card_mod.agent_card(home, url, limits, bearer=token is not None)
    card = ParseDict(card_json, AgentCard())
    receiver = _Receiver(home, events)
    handler = DefaultRequestHandler(agent_executor=receiver, task_store=InMemoryTaskStore(), agent_card=card)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        connections.quiet_loop_errors(asyncio.get_running_loop())
        if on_event is not None:
            connections.on_event(events.error)
        yield
        await handler.aclose()
        receiver.pool.shutdown(wait=False, cancel_futures=True)

    # The card is served by the gatekeeper, in the shape each request can read: the strict 1.0
    # card to `A2A-Version: 1.0` (a strict 1.0 reader refuses 0.3 fields), the
    # hybrid one otherwise (a 0.3 client sends no header and needs them).
    routes = [*create_jsonrpc_routes(handler, "/", context_builder=_ContextBuilder(), enable_v0_3_compat=True)]
    app = Starlette(routes=routes, lifespan=lifespan)
    # The gatekeeper's knobs are read from this module now, so a test (or an embedder) sets
    # them here, where the server is, as before the gatekeeper had a module of its own.
    cards = {"1.0": card_json, "0.3": card_mod.agent_card_03(card_json), "hybrid": card_mod.agent_card_hybrid(card_json)}
    return Gatekeeper(
        app, limits=limits, token=token, events=events, bodies_at_once=MAX_BODIES_AT_ONCE, body_seconds=BODY_SECONDS, cards=cards,
        drain_bytes=DRAIN_BYTES, drain_seconds=DRAIN_SECONDS, body_grace=BODY_GRACE, body_rate=BODY_RATE, peer_slots=PEER_SLOTS,
    )


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
        on_event: Callable[[WatchEvent], None] | None = None,
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
        # The guarded protocol caps connections, dropping the oldest idle first, and times out
        # request heads (connections.py); a head is held to HEAD_BYTES while it arrives.
        config = uvicorn.Config(
            app, interface="asgi3", lifespan="on", log_level="warning", access_log=False, log_config=None,
            http=connections.guarded_protocol(), h11_max_incomplete_event_size=connections.HEAD_BYTES,
        )
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
        # Cut too: a peer's words in a log line are never longer than this.
        return visible(clip(super().format(record), 2000), oneline=False)


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
    on_event: Callable[[WatchEvent], None] | None = None,
    public_url: str | None = None,
) -> None:
    """Serve `home` as an A2A agent until interrupted. `public_url` is what the card advertises, if not host:port."""
    show_logs_visibly()
    Server(home, host=host, port=port, token=token, limits=limits, on_event=on_event, public_url=public_url).run()
