"""Issue 19 item 7: every A2A object gage writes or serves, in both versions, checked against the
official definitions (tests/a2a_official/SOURCE.md): the 0.3 JSON schema with jsonschema, the
1.0 a2a.proto compiled here and parsed strictly with protobuf's json_format (no unknown field).

The SDK accepts much that the definitions do not (snake_case names, unknown fields, an object
in `error.data`), so a peer that takes what gage sends proves nothing: these tests do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import test_a2a_live as live
from a2a_official import parse_10, parse_any_10, valid_03
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from test_a2a_live import bundle, post, rpc_body, run_app

from gage.carriers.a2a import artifact, client
from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.artifact import EXTENSION_URI

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "a2a.json"
VECTORS = json.loads(SPEC.read_text("utf-8"))
homes, serving = live.homes, live.serving


def _same_10(message: str, obj: dict[str, Any]) -> None:
    """Parsed strictly, and printed back field for field (nothing dropped, nothing renamed)."""
    assert parse_10(message, obj) == obj


def test_the_checks_can_fail() -> None:
    """The validators refuse what the SDK would take: a 0.3 field in a 1.0 card, an object in error.data."""
    with pytest.raises(json_format.ParseError, match="url"):
        parse_10("AgentCard", {"name": "x", "url": "http://x/"})
    with pytest.raises(json_format.ParseError):
        parse_10("Part", {"raw": "AA==", "file_name": "x"})  # snake_case is not ProtoJSON's name
    with pytest.raises(json_format.ParseError):
        parse_any_10({"urn:gage:a2a:bundle:v1": {"status": "refused"}})  # no @type
    with pytest.raises(jsonschema.ValidationError):
        valid_03("Message", {"kind": "message", "messageId": "m", "role": "ROLE_USER", "parts": []})


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_the_vectors_are_valid_objects(protocol: str) -> None:
    art, msg = VECTORS["artifact"][protocol], VECTORS["message"][protocol]
    if protocol == "1.0":
        _same_10("Artifact", art)
        _same_10("Message", msg)
    else:
        valid_03("Artifact", art)
        valid_03("Message", msg)


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_exports_are_valid_objects(homes, tmp_path: Path, protocol: str) -> None:
    alice, _bob = homes
    _bid, out = bundle(alice, tmp_path, b"\x00\x01 bytes\n", name="data.bin")
    art = artifact.export_artifact(out, protocol=protocol)
    msg = artifact.export_message(out, protocol=protocol, message_id="m1", claims={"from_name": "alice", "from_key": alice.identity.key_text})
    if protocol == "1.0":
        _same_10("Artifact", art)
        _same_10("Message", msg)
    else:
        valid_03("Artifact", art)
        valid_03("Message", msg)


@pytest.mark.parametrize("token", [None, "a-token-of-sixteen+"])
def test_the_served_cards_are_valid_in_their_versions(homes, serving, token: str | None) -> None:
    _alice, bob = homes
    srv, _ = serving(bob, token=token)
    base = srv.url.rstrip("/")
    one = httpx.get(base + card_mod.CARD_PATH, headers={"A2A-Version": "1.0"}, timeout=10).json()
    parse_10("AgentCard", one)
    valid_03("AgentCard", httpx.get(base + card_mod.CARD_PATH_03, timeout=10).json())
    # Without the header (a 0.3 request, A2A 1.0 section 3.6.2) or with 0.3: the hybrid card (tests/test_a2a_cards.py).
    valid_03("AgentCard", httpx.get(base + card_mod.CARD_PATH, headers={"A2A-Version": "0.3"}, timeout=10).json())
    valid_03("AgentCard", httpx.get(base + card_mod.CARD_PATH, timeout=10).json())
    # `gage a2a card --url URL --json` prints the same 1.0 card; `--json` alone the extension entry.
    parse_10("AgentCard", card_mod.agent_card(bob, srv.url, bearer=token is not None))
    parse_10("AgentExtension", card_mod.card_extension(bob))


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_what_send_posts_is_a_valid_request(homes, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    _bid, out = bundle(alice, tmp_path)
    posted: list[dict[str, Any]] = []

    async def card(request: Request) -> JSONResponse:
        c = card_mod.agent_card(bob, str(request.base_url))
        c["supportedInterfaces"][0]["tenant"] = "t1"
        return JSONResponse(c)

    async def rpc(request: Request) -> JSONResponse:
        doc = await request.json()
        posted.append(doc)
        return JSONResponse({"jsonrpc": "2.0", "id": doc["id"], "error": {"code": -32602, "message": "no"}})

    with run_app(Starlette(routes=[Route(card_mod.CARD_PATH, card), Route("/", rpc, methods=["POST"])])) as url:
        with pytest.raises(client.A2ARefusedError):
            client.send(alice, out, url, protocol=protocol)
    [doc] = posted
    if protocol == "1.0":
        assert doc["method"] == "SendMessage" and doc["params"]["tenant"] == "t1"
        _same_10("SendMessageRequest", doc["params"])
    else:
        valid_03("SendMessageRequest", doc)


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_serves_replies_and_refusals_are_valid(homes, serving, tmp_path: Path, protocol: str) -> None:
    alice, bob = homes
    srv, _ = serving(bob)
    _bid, out = bundle(alice, tmp_path)
    good = artifact.export_message(out, protocol=protocol, message_id="m-ok", claims=None)
    reply = post(srv.url, rpc_body(protocol, good, rid="r1"), version=protocol).json()
    bad = artifact.export_message(out, protocol=protocol, message_id="m-bad", claims=None)
    bad["metadata"][EXTENSION_URI]["version"] = "9"
    refusal = post(srv.url, rpc_body(protocol, bad, rid="r2"), version=protocol).json()
    not_json = httpx.post(srv.url, content=b'{"jsonrpc": "2.0", "id": 1, "id": 1}', headers={"A2A-Version": protocol}, timeout=10).json()
    if protocol == "1.0":
        parse_10("SendMessageResponse", reply["result"])
        for err in (refusal["error"], not_json["error"]):
            assert isinstance(err["code"], int) and isinstance(err["message"], str)
            assert isinstance(err["data"], list) and err["data"]
            for detail in err["data"]:
                parse_any_10(detail)
    else:
        valid_03("SendMessageSuccessResponse", reply)
        valid_03("JSONRPCErrorResponse", refusal)
        valid_03("JSONRPCErrorResponse", not_json)
