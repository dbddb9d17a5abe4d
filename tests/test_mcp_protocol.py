"""`gage mcp` as spec/mcp.md says, checked from outside (issue 29 items 4 to 7).

Two clients: the official SDK's own (`mcp.Client`, which also checks each tool's
structured answer against its output schema), and a raw one that writes JSON-RPC lines on
the real stdio transport, so a request the SDK client cannot even send (a lone surrogate
in a string) is sent as an agent's host might send it.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from gagetest import pair
from test_mcp import _deliver, agent, fails

pytest.importorskip("mcp")

from gage.home.layout import Home  # noqa: E402
from gage.inbox import gate  # noqa: E402

GAGE_ERROR = "Error executing tool"  # the text spec/mcp.md section 8 keeps for a fault in gage


class Raw:
    """`gage mcp` on real pipes: lines in, lines out, each answer awaited with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.buf = b""

    def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def send(self, obj: dict[str, Any]) -> None:
        self.send_line(json.dumps(obj))

    def answer(self, timeout: float = 20.0) -> dict[str, Any] | None:
        """The next line the server writes, or None if it writes none within `timeout`."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        out = json.loads(line)
        assert isinstance(out, dict)
        return out


@contextmanager
def raw_server(root: Path) -> Iterator[Raw]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage", "--home", str(root), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    raw = Raw(proc)
    try:
        raw.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        first = raw.answer()
        assert first is not None and first["id"] == 0, first
        raw.init = first  # type: ignore[attr-defined]
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield raw
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def alice_bob(make_home: Callable[[str], Home]) -> tuple[Home, Home]:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    return alice, bob


def test_initialize_advertises_only_what_exists(alice_bob: tuple[Home, Home]) -> None:
    """spec/mcp.md section 1: tools and resources; no prompts (issue 29 item 4)."""
    alice, _bob = alice_bob
    with raw_server(alice.root) as raw:
        caps = raw.init["result"]["capabilities"]  # type: ignore[attr-defined]
        assert set(caps) == {"tools", "resources"}, caps
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"})
        got = raw.answer()
        assert got is not None and got["id"] == 1 and got["error"]["code"] == -32601, got


def test_a_lone_surrogate_gets_an_answer_and_the_next_request_too(alice_bob: tuple[Home, Home], tmp_path: Path) -> None:
    """Every request gets an answer (issue 29 item 6): a string with a lone surrogate is not
    text, so the call is refused in gage's `usage` stage, and the server goes on serving."""
    alice, bob = alice_bob
    bid = _deliver(bob, alice, tmp_path, "notes.txt", "hello\n")
    with raw_server(alice.root) as raw:
        raw.send_line('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"verdict","arguments":{"id":"a\\ud800b"}}}')
        got = raw.answer()
        assert got is not None, "no answer to a request holding a lone surrogate"
        assert got["id"] == 7 and got["result"]["isError"] is True, got
        text = got["result"]["content"][0]["text"]
        assert text.startswith("gage: usage: ") and "surrogate" in text and "`id`" in text, text
        # The same in a reply's text, and in a method that is not a tool call.
        raw.send_line('{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"reply","arguments":{"id":"00","text":"x\\udfffy"}}}')
        got = raw.answer()
        assert got is not None and got["id"] == "r" and got["result"]["content"][0]["text"].startswith("gage: usage: ")
        raw.send_line('{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"gage://bundle/\\ud800"}}')
        got = raw.answer()
        assert got is not None and got["id"] == 8 and got["error"]["code"] == -32602 and "gage: usage: " in got["error"]["message"]
        # A line that is not JSON at all is a parse error with a null id (JSON-RPC 2.0).
        raw.send_line("{not json")
        got = raw.answer()
        assert got is not None and got["id"] is None and got["error"]["code"] == -32700
        raw.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "verdict", "arguments": {"id": bid}}})
        got = raw.answer()
        assert got is not None and got["id"] == 9 and not got["result"].get("isError"), got
        assert json.loads(got["result"]["content"][0]["text"])["id"] == bid


async def test_every_refusal_has_one_shape(alice_bob: tuple[Home, Home], tmp_path: Path) -> None:
    """gage's own refusals and the arguments the SDK checks first come back alike, as
    `gage: STAGE: message`, never as the fault text nor a pydantic message (issue 29 item 5)."""
    alice, bob = alice_bob
    pending = _deliver(bob, alice, tmp_path, "p.txt", "pending\n")
    accepted = _deliver(bob, alice, tmp_path, "a.txt", "accepted\n")
    gate.accept(alice, accepted)
    async with agent(alice) as c:
        cases = {
            "not-found": [("read_file", {"id": "0" * 64, "path": "x"}), ("read_file", {"id": accepted, "path": "nope.txt"}), ("verdict", {"id": "0" * 64})],
            "refused": [("reply", {"id": pending, "text": "hi"})],
            "usage": [
                ("reply", {"id": accepted, "text": "hi", "kind": "question"}),
                ("list_bundles", {"state": "bogus"}),
                ("list_bundles", {"limit": 0}),
                ("list_bundles", {"limit": 1001}),
                ("read_file", {"id": accepted, "path": "a.txt", "offset": -1}),
                ("verdict", {}),
                ("no_such_tool", {}),
            ],
        }
        for stage, calls in cases.items():
            for tool, args in calls:
                text = await fails(c, tool, **args)
                assert text.startswith(f"gage: {stage}: "), (tool, args, text)
                assert GAGE_ERROR not in text and "pydantic" not in text and "\n" not in text, text


async def test_schemas_describe_and_bound_every_field_and_answers_are_typed(alice_bob: tuple[Home, Home], tmp_path: Path) -> None:
    """Issue 29 item 7: each input field described and bounded; each tool an output schema,
    and its `structuredContent` the same value as its text (the SDK client checks the one
    against the other)."""
    alice, bob = alice_bob
    bid = _deliver(bob, alice, tmp_path, "notes.txt", "hello\n")
    async with agent(alice) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        for t in tools.values():
            for name, prop in t.input_schema.get("properties", {}).items():
                assert prop.get("description"), (t.name, name)
            assert t.output_schema and t.output_schema.get("type") == "object", t.name
        limit = tools["list_bundles"].input_schema["properties"]["limit"]
        assert json.dumps(limit).count('"minimum": 1') == 1 and '"maximum": 1000' in json.dumps(limit), limit
        state = json.dumps(tools["list_bundles"].input_schema["properties"]["state"])
        assert '"enum": ["pending", "accepted", "rejected", "outbox"]' in state, state
        assert '"minimum": 0' in json.dumps(tools["read_file"].input_schema["properties"]["offset"])
        assert '"enum": ["answer", "ack"]' in json.dumps(tools["reply"].input_schema["properties"]["kind"])

        got = await c.call_tool("list_bundles", {})
        assert got.structured_content == json.loads(got.content[0].text) and got.structured_content["more"] == 0  # type: ignore[union-attr,index]
        got = await c.call_tool("verdict", {"id": bid})
        assert got.structured_content == json.loads(got.content[0].text)  # type: ignore[union-attr]
        got = await c.call_tool("list_files", {"id": bid, "pending": True})
        assert got.structured_content == json.loads(got.content[0].text)  # type: ignore[union-attr]
        got = await c.call_tool("contacts", {})
        assert got.structured_content == json.loads(got.content[0].text) and "contacts" in got.structured_content  # type: ignore[union-attr,operator]
        for tool, args in (("read", {"id": bid, "pending": True}), ("read_file", {"id": bid, "path": "notes.txt", "pending": True})):
            got = await c.call_tool(tool, args)
            assert got.structured_content == {"text": got.content[0].text}, tool  # type: ignore[union-attr]
            assert "| hello" in got.content[0].text  # type: ignore[union-attr]
