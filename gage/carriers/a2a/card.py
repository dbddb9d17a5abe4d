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
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gage import __version__
from gage.carriers.a2a.wire import (
    EXTENSION_URI,
    OBJECT_KINDS,
    PROTOCOLS,
    VERSIONS,
    Limits,
)
from gage.format.errors import GageIOError, MalformedError, RefusedError, UsageError
from gage.format.keys import MAX_CLAIMED_NAME, key_text, parse_key
from gage.format.manifest import MANIFEST_LIMIT
from gage.format.strictjson import loads as strict_loads
from gage.home import homefile
from gage.home.layout import Home

CARD_PATH = "/.well-known/agent-card.json"
# The same card in protocol 0.3's own shape alone, for 0.3 clients that ask for it by path.
# At CARD_PATH, `A2A-Version: 1.0` gets the strict 1.0 card (a strict 1.0 reader refuses
# the 0.3 fields) and any other request the hybrid one (spec/a2a.md section 9).
CARD_PATH_03 = "/.well-known/agent-card-0.3.json"
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
    from gage.home import sealing, settings

    key = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
    if key is None:
        return {}
    out = {"sealing_binding": key.binding.raw.decode("utf-8"), "sealing_signature": key.binding.signature.hex()}
    relay = settings.load(home).relay_url
    if relay:
        from gage.format import relayurl

        out["relay"] = relayurl.public(relay)  # served to anyone: never the relay's user or password
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


def agent_card_03(card: dict[str, Any]) -> dict[str, Any]:
    """The protocol 0.3 AgentCard of the 1.0 card `card` (from `agent_card`): same agent, 0.3 fields.

    0.3 has no `supportedInterfaces`: the JSON-RPC URL is the top-level `url` with
    `preferredTransport` and `protocolVersion`; a security scheme is `{"type": "http",
    "scheme": "bearer"}` and a requirement a map of scheme names to scopes.
    """
    url = next(i["url"] for i in card["supportedInterfaces"] if i["protocolVersion"] == "0.3")
    out: dict[str, Any] = {
        "protocolVersion": "0.3.0",
        "name": card["name"],
        "description": card["description"],
        "url": url,
        "preferredTransport": "JSONRPC",
        "version": card["version"],
        "capabilities": card["capabilities"],
        "defaultInputModes": card["defaultInputModes"],
        "defaultOutputModes": card["defaultOutputModes"],
        "skills": card["skills"],
    }
    if "securitySchemes" in card:
        out["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        out["security"] = [{"bearer": []}]
    return out


def agent_card_hybrid(card: dict[str, Any]) -> dict[str, Any]:
    """The card for a request without `A2A-Version` (or with 0.3): the 1.0 card `card`, and
    beside its `supportedInterfaces` the 0.3 fields a 0.3 client needs (`url`,
    `protocolVersion`, `preferredTransport`; with a token, `security` and each scheme's 0.3
    `type` and `scheme` inside the 1.0 one), as the reference SDKs serve it.

    A2A 1.0 section 3.6.2 takes a header-less request for a 0.3 one, so a 0.3-era client,
    which sends none, must be able to read the card; a 1.0 reader that sent none still
    finds `supportedInterfaces` first and ignores the rest. A strict 1.0 reader asks with
    `A2A-Version: 1.0` and gets `card` itself (spec/a2a.md section 9).
    """
    old = agent_card_03(card)
    out: dict[str, Any] = {**card, "url": old["url"], "protocolVersion": old["protocolVersion"], "preferredTransport": old["preferredTransport"]}
    if "securitySchemes" in card:
        out["securitySchemes"] = {k: {**v, **old["securitySchemes"][k]} for k, v in card["securitySchemes"].items()}
        out["security"] = old["security"]
    return out


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
        from gage.home import sealing

        carried = {"binding": params.get("sealing_binding"), "signature": params.get("sealing_signature")}
        at = "capabilities.extensions.params"
        b = sealing.parse_carried(carried, field=at, members=(f"{at}.sealing_binding", f"{at}.sealing_signature"))
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


def _cache_rel(url: str) -> str:
    return "cache/cards/" + hashlib.sha256(url.encode("utf-8")).hexdigest()


class CardUnavailable(GageIOError):
    """The card could not be fetched whole: `reason` is "http" (an answer other than 200),
    "network", "timeout", "too-large" or "redirect", so `a2a send` can tell a wrong URL
    (discovery) from a failing network (transport)."""

    def __init__(self, message: str, *, reason: str, path: str | None = None) -> None:
        super().__init__(message, path=path)
        self.reason = reason


def fetch(url: str, *, timeout: float | None = None, etag: str | None = None) -> tuple[bytes | None, str | None]:
    """GET a card: (its bytes, or None for "not modified" since `etag`; its ETag).

    Through `fetching.request` (httpx): at most CARD_LIMIT bytes and `timeout` seconds in
    all, redirects only within the origin. Needs the optional extra `gage[a2a]`; without it
    the error says how to give the card as a file instead.
    """
    try:
        from gage.carriers.a2a import fetching
    except ImportError as exc:
        raise UsageError(
            "fetching a card from a URL needs the A2A extra (pip install 'gage-bundles[a2a]'); "
            "or save the card and give its file"
        ) from exc
    timeout = FETCH_TIMEOUT if timeout is None else timeout
    # gage reads 1.0 cards: the header asks for the strict one (a server without it answers
    # the hybrid card, which gage reads as well; spec/a2a.md section 9).
    headers = {"Accept": "application/json", "A2A-Version": "1.0"}
    if etag:
        headers["If-None-Match"] = etag
    try:
        got = fetching.request("GET", url, cap=CARD_LIMIT, deadline=timeout, headers=headers)
    except fetching.FetchError as exc:
        if exc.kind == "too-large":
            raise CardUnavailable(f"the agent card is over {CARD_LIMIT} bytes", reason=exc.kind, path=url) from exc
        raise CardUnavailable(f"cannot fetch the agent card: {exc}", reason=exc.kind, path=url) from exc
    if got.status == 304 and etag:
        return None, etag
    if got.status != 200:
        raise CardUnavailable(f"the agent answered HTTP {got.status} for its card", reason="http", path=url)
    tag = got.headers.get("etag")
    return got.body, tag if tag and len(tag) <= 200 and tag.isascii() and tag.isprintable() else None


def fetch_cached(home: Home, url: str, *, refresh: bool = False, ttl: float = CARD_TTL_SECONDS) -> bytes:
    """The card at `url`, from the home's card cache when it is younger than `ttl`.

    An older copy is revalidated with its ETag (a 304 keeps it for another `ttl`). The
    cache is read like a stranger's file (`homefile.read_derived`): a link, FIFO or folder
    in its place is said once, ignored and replaced. It is a copy of a claim, nothing more.
    """
    rel = _cache_rel(url)
    data = None if refresh else homefile.read_derived(home.root, rel + ".json", CARD_LIMIT)
    etag_raw = None if data is None else homefile.read_derived(home.root, rel + ".etag", 256)
    etag = etag_raw.decode("ascii", "replace").strip() if etag_raw else None
    if data is not None:
        try:
            age = time.time() - os.lstat(home.root / (rel + ".json")).st_mtime
        except OSError:
            age = ttl
        if 0 <= age < ttl:
            return data
    fresh, tag = fetch(url, etag=etag if data is not None else None)
    if fresh is None and data is not None:
        fresh = data  # not modified: the copy is good for another ttl
    assert fresh is not None
    # Beneath real folders only, replacing whatever name is there; a cache that cannot be
    # written only costs a fetch next time.
    homefile.write_derived(home.root, rel + ".json", fresh)
    if tag:
        homefile.write_derived(home.root, rel + ".etag", tag.encode("ascii"))
    return fresh


def load(home: Home, source: str, *, refresh: bool = False, ttl: float = CARD_TTL_SECONDS) -> CardClaim:
    """A card from a file, or from a URL through the cache (`refresh` skips the cache)."""
    if source.startswith(("http://", "https://")):
        url = card_url(source)
        return parse_card(fetch_cached(home, url, refresh=refresh, ttl=ttl), url)
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
