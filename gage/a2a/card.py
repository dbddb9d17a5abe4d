"""Agent cards: how this home advertises the gage extension, and what another card claims.

A card is whatever the agent at a URL (or a file) says about itself. The key and name in
its gage extension can start a pairing (a candidate), never finish one: only the
word-pair ceremony confirms a key. Fetched cards are cached for a short while to spare
the network, and the cache confers nothing either.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__, atomic
from ..errors import GageIOError, MalformedError, RefusedError, UsageError
from ..home import Home
from ..keys import MAX_CLAIMED_NAME, key_text, parse_key
from ..manifest import MANIFEST_LIMIT
from ..strictjson import loads as strict_loads
from .wire import EXTENSION_URI, OBJECT_KINDS, PROTOCOLS, VERSIONS, Limits

CARD_PATH = "/.well-known/agent-card.json"
CARD_LIMIT = 256 * 1024
CARD_TTL_SECONDS = 15 * 60
FETCH_TIMEOUT = 10.0
MAX_CARD_NAME = 200


def card_extension(home: Home, limits: Limits | None = None) -> dict[str, Any]:
    """The `capabilities.extensions` entry: what this home takes, and its key as a claim.

    Every value in `params` is a string or a list of strings: A2A carries params as a
    protobuf Struct, where numbers become doubles.
    """
    limits = limits or Limits.of(home)
    ident = home.identity
    retired = ident.current_retirement
    if retired is not None:
        # A card would hand out a key its own statement retired: a pairing must not start from it.
        raise RefusedError(
            f"this home's key is retired ({retired.reason}) with no successor here; make a new one with "
            "`gage key retire --new` before advertising a card"
        )
    params: dict[str, Any] = {
        "versions": list(VERSIONS),
        "kinds": list(OBJECT_KINDS),
        "protocols": list(PROTOCOLS),
        "max_bytes": str(limits.max_bytes),
        "max_manifest_bytes": str(MANIFEST_LIMIT),
        "key": ident.key_text,
        "name": ident.name,
    }
    params.update(_mailbox_params(home))
    return {
        "uri": EXTENSION_URI,
        "description": (
            "Receives signed gage bundles as bytes parts into a pending inbox; nothing is accepted by arriving. "
            "The key and name below are claims: confirm them with gage's word-pair ceremony."
        ),
        "required": False,
        "params": params,
    }


def _mailbox_params(home: Home) -> dict[str, str]:
    """The home's relay mailbox, when it has one (spec/relay.md section 2): the sealing-key
    binding as carried, and the relay's URL. Claims, like the key beside them."""
    from .. import sealing, settings

    key = sealing.load(home.root, home.identity.signing_key)
    if key is None:
        return {}
    out = {"sealing_binding": key.binding.raw.decode("utf-8"), "sealing_signature": key.binding.signature.hex()}
    relay = settings.load(home).relay_url
    if relay:
        out["relay"] = relay
    return out


def agent_card(home: Home, url: str, limits: Limits | None = None, *, bearer: bool = False) -> dict[str, Any]:
    """A whole AgentCard (protocol 1.0 JSON) for `gage a2a serve` at `url`, with JSON-RPC
    interfaces for both protocol versions so 0.3 clients can use it too."""
    check_url(url)
    card: dict[str, Any] = {
        "name": f"gage: {home.identity.name}",
        "description": (
            "A gage home's A2A endpoint. Send it a message carrying a gage bundle; the bundle lands in the "
            "receiver's pending inbox, unread. Arrival is not consent: only the receiver's person accepts."
        ),
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "version": __version__,
        "capabilities": {"streaming": False, "pushNotifications": False, "extensions": [card_extension(home, limits)]},
        "defaultInputModes": ["application/octet-stream"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {
                "id": "gage-receive",
                "name": "Receive a gage bundle",
                "description": "Lands a signed gage bundle in the pending inbox and says so; never accepts it.",
                "tags": ["gage", "bundle", "signed"],
                "inputModes": ["application/octet-stream"],
                "outputModes": ["text/plain"],
            }
        ],
    }
    if bearer:
        card["securitySchemes"] = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
        card["securityRequirements"] = [{"schemes": {"bearer": {"list": []}}}]
    return card


@dataclass(frozen=True)
class CardClaim:
    """What a card says: its agent's name, and the key and name in its gage extension."""

    agent_name: str
    key: bytes
    claimed_name: str
    source: str  # where the card came from: a file name or a URL
    sealing: dict[str, str] | None = None  # the sealing-key binding as carried, if the card has one
    relay: str | None = None

    @property
    def description(self) -> str:
        return f'agent card "{self.agent_name}" from {self.source}'

    def to_json(self) -> dict[str, Any]:
        return {
            "agent_name": self.agent_name,
            "key": key_text(self.key),
            "claimed_name": self.claimed_name,
            "source": self.source,
            "confirmed": False,
        }


def parse_card(data: bytes, source: str) -> CardClaim:
    """The gage key a card claims. Any card version: both keep extensions in `capabilities`."""
    card = strict_loads(data, limit=CARD_LIMIT, what="the agent card")
    if not isinstance(card, dict):
        raise MalformedError("is not a JSON object", path=source)
    name = card.get("name")
    if not isinstance(name, str):
        raise MalformedError("has no name", path=source, field="name")
    caps = card.get("capabilities")
    exts = caps.get("extensions") if isinstance(caps, dict) else None
    if not isinstance(exts, list):
        exts = []
    ours = [e for e in exts if isinstance(e, dict) and e.get("uri") == EXTENSION_URI]
    if not ours:
        raise MalformedError(f"does not advertise the gage extension ({EXTENSION_URI}), so it names no gage key", path=source)
    if len(ours) > 1:
        raise MalformedError("lists the gage extension more than once", path=source, field="capabilities.extensions")
    params = ours[0].get("params")
    if not isinstance(params, dict):
        raise MalformedError("the gage extension has no params", path=source, field="capabilities.extensions.params")
    key = parse_key(params.get("key"), field="capabilities.extensions.params.key")
    claimed = params.get("name", "")
    if not isinstance(claimed, str) or len(claimed) > MAX_CLAIMED_NAME:
        raise MalformedError(
            f"must be a string of at most {MAX_CLAIMED_NAME} characters", path=source, field="capabilities.extensions.params.name"
        )
    sealing_obj = None
    if "sealing_binding" in params or "sealing_signature" in params:
        from .. import sealing

        carried = {"binding": params.get("sealing_binding"), "signature": params.get("sealing_signature")}
        b = sealing.parse_carried(carried, field="capabilities.extensions.params.sealing")
        sealing_obj = b.to_carried()
    relay = params.get("relay")
    if relay is not None and (not isinstance(relay, str) or len(relay) > 2000):
        raise MalformedError("must be a URL", path=source, field="capabilities.extensions.params.relay")
    return CardClaim(agent_name=name[:MAX_CARD_NAME], key=key, claimed_name=claimed, source=source, sealing=sealing_obj, relay=relay)


def check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{url!r} is not an http or https URL")
    return url


def card_url(url: str) -> str:
    """Where the card of the agent at `url` lives: `url` itself if it names a .json file."""
    check_url(url)
    parts = urllib.parse.urlsplit(url)
    if parts.path.endswith(".json"):
        return url
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + CARD_PATH, "", ""))


def _cache_path(home: Home, url: str) -> Path:
    return home.cache / "cards" / (hashlib.sha256(url.encode("utf-8")).hexdigest() + ".json")


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to another http(s) URL: urllib would also go to ftp or file."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.URLError(f"refused a redirect to {newurl!r}: only http and https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpOnlyRedirects)


def fetch(url: str, *, timeout: float = FETCH_TIMEOUT) -> bytes:
    """GET a card, reading at most CARD_LIMIT bytes and following no redirect off http(s)."""
    req = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": f"gage/{__version__}"})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            data: bytes = resp.read(CARD_LIMIT + 1)
    except urllib.error.HTTPError as exc:
        raise GageIOError(f"the agent answered HTTP {exc.code} for its card", path=url) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise GageIOError(f"cannot fetch the agent card: {reason}", path=url) from exc
    if len(data) > CARD_LIMIT:
        raise RefusedError(f"the agent card is over {CARD_LIMIT} bytes", path=url)
    return data


def load(home: Home, source: str, *, refresh: bool = False, ttl: float = CARD_TTL_SECONDS) -> CardClaim:
    """A card from a file, or from a URL through the cache (`refresh` skips the cache)."""
    if source.startswith(("http://", "https://")):
        url = card_url(source)
        cached = _cache_path(home, url)
        data = None
        if not refresh:
            try:
                if time.time() - cached.stat().st_mtime < ttl:
                    data = cached.read_bytes()
            except OSError:
                data = None
        if data is None:
            data = fetch(url)
            try:
                cached.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                atomic.write_bytes(cached, data, 0o600)
            except (OSError, GageIOError):
                pass  # a cache that cannot be written only costs a fetch next time
        return parse_card(data, url)
    path = Path(source)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise GageIOError(f"cannot open the card file: {exc.strerror}", path=source) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RefusedError("is not a regular file", path=source)
        chunks: list[bytes] = []
        while sum(map(len, chunks)) <= CARD_LIMIT:
            chunk = os.read(fd, CARD_LIMIT + 1)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > CARD_LIMIT:
        raise RefusedError(f"is over {CARD_LIMIT} bytes", path=source)
    return parse_card(data, path.name)
