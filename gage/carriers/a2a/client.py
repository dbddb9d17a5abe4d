"""Live A2A, the sending side: `gage a2a send` posts a bundle to a gage agent.

The request is gage's own JSON (artifact.export_message), posted with httpx, so no SDK
object re-encodes the bundle on its way out. Whatever the receiver answers is its
claim: a task in state completed, or a reply that says "accepted", is reported as what
the receiver said, never as acceptance. Errors have a stage each, so a script can tell a
wrong URL from a refusal from a network failure.
"""

from __future__ import annotations

import json
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gage.carriers.a2a import artifact, fetching
from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.artifact import EXTENSION_URI, Limits
from gage.format.errors import Exit, GageError
from gage.format.sanitize import clip, visible
from gage.home.layout import Home

REPLY_LIMIT = 1 << 20  # a receiver's answer is a few lines of text; more is not an answer
INTERNAL_ERROR = -32603  # JSON-RPC: the agent failed; it neither refused nor confirmed


class A2ADiscoveryError(GageError):
    """The URL does not lead to a gage A2A agent: no card, a bad card, no interface for the protocol."""

    stage = "a2a-discovery"
    exit_code = Exit.A2A_DISCOVERY


class A2ARefusedError(GageError):
    """The agent was reached and said no (a JSON-RPC error, HTTP 401/413, or a gage "refused")."""

    stage = "a2a-refused"
    exit_code = Exit.A2A_REFUSED


class A2ATransportError(GageError):
    """The network failed us: no connection, a timeout, an answer that is not JSON-RPC."""

    stage = "a2a-transport"
    exit_code = Exit.A2A_TRANSPORT
    retryable = True


class A2AUnconfirmedError(GageError):
    """The agent answered, but not with gage's delivery result for this bundle: it neither
    refused nor confirmed (its own words, a task, an internal error), so the bundle may or
    may not be there. Not a refusal and not a delivery: a code of its own, so a script can tell it from both."""

    stage = "a2a-unconfirmed"
    exit_code = Exit.A2A_UNCONFIRMED


@dataclass(frozen=True)
class SendResult:
    """What happened to one bundle sent over A2A. Everything from the receiver is its claim, made visible."""

    bundle: str
    endpoint: str
    protocol: str
    delivered: bool  # the receiver said, in gage's metadata, that it holds this bundle (in pending, or already)
    text: str  # the receiver's reply text
    claims: dict[str, str] = field(default_factory=dict)  # the receiver's gage metadata
    task_state: str | None = None  # when the receiver answered with a Task: the state it claims

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "endpoint": self.endpoint,
            "protocol": self.protocol,
            "delivered": self.delivered,
            "accepted": False,  # never known from a transport: only a signed ack says so
            "receiver_says": self.text,
            "receiver_claims": self.claims,
            "task_state": self.task_state,
        }

    def summary(self) -> str:
        head = f"{self.bundle[:12]} sent over A2A {self.protocol} to {visible(self.endpoint)}"
        if self.delivered:
            state = self.claims.get("state")
            where = {"pending": "its pending inbox", "held": "its inbox (it already held it)"}.get(state or "", f"its inbox (state {state!r}, its claim)")
            out = f"{head}: the receiver says it is delivered to {where}"
        else:
            out = f"{head}: the receiver did not say, in gage's words, that it holds the bundle"
        if self.task_state:
            out += f"; it answered with a task in state {self.task_state!r}"
        if self.text:
            out += f"; it says: {self.text}"
        return out + ". Replies are claims: nothing is accepted until the receiver's person accepts it."


def discover(home: Home, url: str, *, refresh: bool = False) -> tuple[str, dict[str, Any]]:
    """(the card's URL, the card) for an agent base URL or a card URL.

    Through the home's card cache, as `pair --card` (15 minutes, then revalidated with its
    ETag), and `fetching`'s bounds: 256 KiB, 10 seconds in all, redirects within the origin.
    """
    at = card_mod.card_url(url)
    try:
        data = card_mod.fetch_cached(home, at, refresh=refresh)
    except card_mod.CardUnavailable as exc:
        if exc.reason in ("network", "timeout"):
            raise A2ATransportError(exc.message, path=at) from exc
        raise A2ADiscoveryError(exc.message, path=at) from exc
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise A2ADiscoveryError("the agent card is not JSON", path=at) from exc
    if not isinstance(doc, dict):
        raise A2ADiscoveryError("the agent card is not a JSON object", path=at)
    return at, doc


def _version_is(value: object, want: str) -> bool:
    return isinstance(value, str) and value.split(".")[:2] == want.split(".")


def endpoint_for(card: dict[str, Any], protocol: str, *, source: str) -> str:
    """The JSON-RPC URL a card offers for `protocol`; the card must declare the gage extension."""
    return interface_for(card, protocol, source=source)[0]


def interface_for(card: dict[str, Any], protocol: str, *, source: str) -> tuple[str, str | None]:
    """(the JSON-RPC URL, its `tenant` or None) of the first interface a card lists for `protocol`.

    A2A 1.0 section 8.3.2: a client takes the first matching entry of `supportedInterfaces`
    and sets `tenant` in every request to exactly that entry's value (omitted when unset).
    """
    caps = card.get("capabilities")
    exts = caps.get("extensions") if isinstance(caps, dict) else None
    if not isinstance(exts, list) or not any(isinstance(e, dict) and e.get("uri") == EXTENSION_URI for e in exts):
        raise A2ADiscoveryError(f"the agent does not declare the gage extension ({EXTENSION_URI}): it is not a gage receiver", path=source)
    found: list[tuple[object, object]] = []
    interfaces = card.get("supportedInterfaces")
    for i in interfaces if isinstance(interfaces, list) else []:
        if isinstance(i, dict) and i.get("protocolBinding") == "JSONRPC" and _version_is(i.get("protocolVersion"), protocol):
            found.append((i.get("url"), i.get("tenant")))
    if not found and protocol == "0.3" and _version_is(card.get("protocolVersion"), "0.3"):
        # A card written for 0.3 only: the top-level url, and its additionalInterfaces.
        if card.get("preferredTransport", "JSONRPC") == "JSONRPC":
            found.append((card.get("url"), None))
        extra = card.get("additionalInterfaces")
        for i in extra if isinstance(extra, list) else []:
            if isinstance(i, dict) and i.get("transport") == "JSONRPC":
                found.append((i.get("url"), None))
    for url, tenant in found:
        if isinstance(url, str) and len(url) <= 2048 and urllib.parse.urlsplit(url).scheme in ("http", "https"):
            if tenant is not None and not (isinstance(tenant, str) and 0 < len(tenant) <= 256):
                raise A2ADiscoveryError("the card's interface has a tenant that is not a short string", path=source)
            return url, tenant if protocol == "1.0" else None
    raise A2ADiscoveryError(f"the agent card offers no JSON-RPC interface for A2A protocol {protocol}", path=source)


_origin = fetching.origin


def _message_of(result: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(the reply message, the task state if the reply was a Task), in either protocol's shape."""
    if isinstance(result.get("message"), dict):
        return result["message"], None
    task: dict[str, Any] | None = result.get("task") if isinstance(result.get("task"), dict) else result if result.get("kind") == "task" else None
    if task is not None:
        raw_status = task.get("status")
        status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
        state = status.get("state")
        msg = status.get("message")
        return (msg if isinstance(msg, dict) else None), str(state) if state is not None else "unknown"
    if result.get("kind") == "message" or "messageId" in result:
        return result, None
    return None, None


def _text_and_claims(msg: dict[str, Any] | None) -> tuple[str, dict[str, str]]:
    if msg is None:
        return "", {}
    raw_parts = msg.get("parts")
    parts: list[Any] = raw_parts if isinstance(raw_parts, list) else []
    texts = [p["text"] for p in parts[:50] if isinstance(p, dict) and isinstance(p.get("text"), str)]
    metadata = msg.get("metadata")
    meta = metadata.get(EXTENSION_URI) if isinstance(metadata, dict) else None
    claims = {}
    if isinstance(meta, dict):
        for k, v in list(meta.items())[:50]:
            if isinstance(k, str) and isinstance(v, str):
                claims[visible(clip(k, 100))] = visible(clip(v, 1000))
    return visible(clip(" / ".join(texts), 2000)), claims


# How long `send` waits for the whole exchange. A receiving `gage a2a serve` gives up waiting for
# its home lock well before this (server.LOCK_SECONDS), so a busy receiver's "refused: busy"
# reaches the sender (exit 11) instead of the sender timing out first (exit 12).
REPLY_SECONDS = 30.0


def send(
    home: Home,
    bundle_dir: Path,
    url: str,
    *,
    protocol: str = "1.0",
    token: str | None = None,
    timeout: float | None = None,
    from_card: str | None = None,
    limits: Limits | None = None,
) -> SendResult:
    """Send one bundle to the gage agent at `url` (its base URL or card URL) and report its answer.

    The JSON-RPC request is gage's own bytes (artifact.export_message), posted with httpx:
    no SDK object re-encodes the bundle on the way out. `from_card` is the URL of an agent
    (your own `serve`) the receiver may answer to; with the home's name and key it travels
    as a claim. `timeout`: the reply deadline, REPLY_SECONDS unless given.
    """
    timeout = REPLY_SECONDS if timeout is None else timeout
    artifact.check_protocol(protocol)
    claims = {"from_name": home.identity.name, "from_key": home.identity.key_text}
    if from_card:
        claims["from_card"] = card_mod.check_url(from_card)
    message = artifact.export_message(
        Path(bundle_dir), protocol=protocol, message_id=uuid.uuid4().hex, claims=claims, limits=limits or Limits.of(home)
    )
    bundle_id = str(message["metadata"][EXTENSION_URI]["bundle"])
    rid = uuid.uuid4().hex
    method = "SendMessage" if protocol == "1.0" else "message/send"
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "A2A-Version": protocol,
        ("A2A-Extensions" if protocol == "1.0" else "X-A2A-Extensions"): EXTENSION_URI,
    }
    card_at, card = discover(home, url)
    endpoint, tenant = interface_for(card, protocol, source=card_at)
    params: dict[str, Any] = {"message": message}
    if tenant is not None:
        params["tenant"] = tenant
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, separators=(",", ":")).encode("utf-8")
    del message, params
    if token is not None:
        if _origin(endpoint) != _origin(card_at):
            raise A2ADiscoveryError(
                f"the card sends requests to {visible(endpoint)}, another origin than the card's; "
                "gage sends the bearer token only where it fetched the card",
                path=card_at,
            )
        headers["Authorization"] = f"Bearer {token}"
    try:
        got = fetching.request("POST", endpoint, cap=REPLY_LIMIT, deadline=timeout, headers=headers, content=body)
    except fetching.FetchError as exc:
        raise A2ATransportError(f"the request failed: {exc}", path=visible(endpoint)) from exc
    status, data = got.status, got.body
    try:
        doc: Any = json.loads(data)
    except (ValueError, RecursionError):
        doc = None
    error = doc.get("error") if isinstance(doc, dict) else None
    said = visible(clip(str(error.get("message", "")), 1000)) if isinstance(error, dict) else ""
    if 400 <= status < 500:
        raise A2ARefusedError(f"the agent refused the request (HTTP {status}){': ' + said if said else ''}", path=visible(endpoint))
    if status != 200 or not isinstance(doc, dict):
        raise A2ATransportError(f"the agent answered HTTP {status} without a JSON-RPC reply", path=visible(endpoint))
    if error is not None:
        code = error.get("code") if isinstance(error, dict) else None
        if code == INTERNAL_ERROR:
            raise A2AUnconfirmedError(
                f"the agent failed while handling the message (JSON-RPC {INTERNAL_ERROR}, internal error): it neither "
                f"refused nor confirmed it, so the bundle may or may not be there{': ' + said if said else ''}",
                path=visible(endpoint),
            )
        raise A2ARefusedError(f"the agent refused the message: {said or 'no reason given'}", path=visible(endpoint))
    result = doc.get("result")
    if doc.get("id") != rid or not isinstance(result, dict):
        raise A2ATransportError("the agent's answer is not a JSON-RPC reply to this request", path=visible(endpoint))
    msg, task_state = _message_of(result)
    text, said_meta = _text_and_claims(msg)
    if said_meta.get("status") == "refused":
        raise A2ARefusedError(f"the agent refused the bundle: {said_meta.get('error') or text or 'no reason given'}", path=visible(endpoint))
    delivered = said_meta.get("status") == "delivered" and said_meta.get("bundle") == bundle_id
    return SendResult(
        bundle=bundle_id,
        endpoint=endpoint,
        protocol=protocol,
        delivered=delivered,
        text=text,
        claims=said_meta,
        task_state=visible(clip(task_state, 100)) if task_state else None,
    )
