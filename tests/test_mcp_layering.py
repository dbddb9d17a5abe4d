"""The MCP SDK is an optional extra: only gage/mcp/server.py imports it (spec/mcp.md); the
server reaches gage through gage.mcp.seams alone, and no human act.

What imports what is import-linter's contracts in pyproject.toml (tests/test_layering.py runs
them and shows each can fail); here, the CLI and the SDK-free halves of gage/mcp load with the
SDK blocked, and the contracts say what this file's rules need.
"""

from __future__ import annotations

import subprocess
import sys

from test_layering import contracts

# What a tool may reach: reading, and making a bundle in the outbox. Never the gate's
# decisions, the ceremony or key retirement (and nothing of the command line: the layers).
HUMAN_ACTS = {"gage.inbox.gate", "gage.trust.ceremony", "gage.inbox.ownkey", "gage.trust.retirement"}


def _contract(starts: str) -> dict[str, object]:
    return next(c for c in contracts() if str(c["name"]).startswith(starts))


def test_the_contracts_say_only_the_server_imports_the_sdk_and_the_seams_reach_no_human_act() -> None:
    sdk = _contract("Only the MCP server imports the MCP SDK")
    assert sdk["type"] == "forbidden" and sdk["source_modules"] == ["gage"] and sdk["forbidden_modules"] == ["mcp"]
    assert sdk["ignore_imports"] == ["gage.mcp.server -> mcp"]
    acts = _contract("What the MCP server's seams reach")
    assert acts["source_modules"] == ["gage.mcp"] and set(acts["forbidden_modules"]) == HUMAN_ACTS  # type: ignore[arg-type]
    seams = _contract("The MCP server reaches the rest of gage through gage.mcp.seams alone")
    assert seams["source_modules"] == ["gage.mcp"] and seams["ignore_imports"] == ["gage.mcp.seams -> gage.**"]


def test_gage_and_its_mcp_answers_load_without_the_sdk() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'mcp':\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from gage.cli.main import build_parser\n"
        "import gage.mcp.answers, gage.mcp.reply, gage.tui.app\n"
        "build_parser().parse_args(['mcp'])\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_no_interface_reaches_sideways_into_another() -> None:
    """The JSON shapes both interfaces print live below them: gage/mcp and gage/tui import nothing
    of gage.cli or of each other, which the layers contract says (the command line sits above
    the two it starts; the two are independent)."""
    layers = next(c for c in contracts() if c["type"] == "layers")
    assert layers["layers"][:2] == ["gage.cli", "gage.tui | gage.mcp"]  # type: ignore[index]
