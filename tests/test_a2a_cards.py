"""Which card each A2A client is given (issue 29 item 1; spec/a2a.md section 9).

A2A 1.0 (section 3.6.2) takes a request without `A2A-Version` for a 0.3 request, and a
0.3-era client reads the card with 0.3's types: it needs the top-level `url`,
`protocolVersion` and `preferredTransport`. So a header-less request (or `A2A-Version:
0.3`) gets the hybrid card (the 1.0 card with those 0.3 fields beside
`supportedInterfaces`), `A2A-Version: 1.0` the strict 1.0 card, each with `Vary:
A2A-Version`. Checked with the official definitions (tests/a2a_official/) and with the
a2a-sdk's 0.3 types (a2a.compat.v0_3) and 1.0 card reader, then end to end: a bare 0.3
client (0.3 types over plain HTTP, no header) reads the card and delivers.
"""

from __future__ import annotations

import copy
from pathlib import Path

import httpx
import pytest
import test_a2a_live as live
from a2a_official import parse_10, valid_03
from test_a2a_live import bundle, rpc_body

from gage.carriers.a2a import artifact
from gage.carriers.a2a import card as card_mod
from gage.carriers.a2a.artifact import EXTENSION_URI
from gage.home import listing

homes, serving = live.homes, live.serving
compat = pytest.importorskip("a2a.compat.v0_3.types")
FIELDS_03 = {"url", "protocolVersion", "preferredTransport"}


@pytest.mark.parametrize("token", [None, "a-token-of-sixteen+"])
@pytest.mark.parametrize("header", [None, "0.3", "0.3.0"])
def test_a_0_3_or_header_less_request_gets_a_card_a_0_3_client_reads(homes, serving, token: str | None, header: str | None) -> None:
    from a2a.client.card_resolver import parse_agent_card

    _alice, bob = homes
    srv, _ = serving(bob, token=token)
    got = httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH, headers={"A2A-Version": header} if header else {}, timeout=10)
    assert got.status_code == 200 and got.headers["vary"] == "A2A-Version"
    card = got.json()
    valid_03("AgentCard", card)  # the official 0.3 schema
    c03 = compat.AgentCard.model_validate(card)  # the SDK's 0.3 types, as a 0.3 client parses it
    assert c03.url == srv.url and c03.protocol_version == "0.3.0" and c03.preferred_transport == "JSONRPC"
    assert c03.capabilities.extensions and c03.capabilities.extensions[0].uri == EXTENSION_URI
    # and a 1.0 reader that sent no header still finds the 1.0 interface (the SDK's own card reader).
    one = parse_agent_card(copy.deepcopy(card))  # it edits what it is given
    assert {(i.protocol_version, i.url) for i in one.supported_interfaces} == {("1.0", srv.url), ("0.3", srv.url)}
    if token:
        assert card["security"] == [{"bearer": []}] and card["securitySchemes"]["bearer"]["type"] == "http"
        assert one.security_schemes["bearer"].http_auth_security_scheme.scheme.lower() == "bearer"


@pytest.mark.parametrize("token", [None, "a-token-of-sixteen+"])
def test_a_1_0_request_gets_the_strict_1_0_card(homes, serving, token: str | None) -> None:
    _alice, bob = homes
    srv, _ = serving(bob, token=token)
    got = httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH, headers={"A2A-Version": "1.0"}, timeout=10)
    assert got.headers["vary"] == "A2A-Version"
    card = got.json()
    parse_10("AgentCard", card)  # the official 1.0 proto, unknown fields refused
    assert not (FIELDS_03 | {"security"}) & set(card)
    # The 0.3 card's own path stays, in 0.3's shape alone.
    old = httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH_03, timeout=10).json()
    valid_03("AgentCard", old)
    assert FIELDS_03 <= set(old) and "supportedInterfaces" not in old
    # The versions' cards are different bytes, so their ETags differ and a cache keeps both.
    bare = httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH, timeout=10)
    assert bare.headers["etag"] != got.headers["etag"]


def test_a_bare_0_3_client_reads_the_card_and_delivers(homes, serving, tmp_path: Path) -> None:
    """A 0.3-era client: 0.3 types over plain HTTP, no version header anywhere."""
    alice, bob = homes
    srv, _ = serving(bob)
    bid, out = bundle(alice, tmp_path)
    card = compat.AgentCard.model_validate(httpx.get(srv.url.rstrip("/") + card_mod.CARD_PATH, timeout=10).json())
    message = compat.Message.model_validate(artifact.export_message(out, protocol="0.3", message_id="m-bare", claims=None))
    body = rpc_body("0.3", message.model_dump(mode="json", by_alias=True, exclude_none=True))
    compat.SendMessageRequest.model_validate(body)
    answer = httpx.post(card.url, json=body, timeout=30).json()
    assert answer["result"]["metadata"][EXTENSION_URI]["status"] == "delivered", answer
    held = listing.find(bob, bid)
    assert held is not None and held.state == "pending"
