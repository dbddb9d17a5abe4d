"""The MCP SDK is an optional extra: only gage/mcp/server.py imports it (spec/mcp.md).

Checked by parsing every module's imports (tests/test_layering.py's `_imports`), so a lazy
import inside a function is caught too; and by loading the CLI and the SDK-free halves of
gage/mcp with the SDK blocked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_layering import ROOT, _imports

SDK_USER = ROOT / "mcp" / "server.py"
# What a tool may reach: reading, and making a bundle in the outbox. Never the gate's
# decisions, the ceremony, contacts' writers, key retirement or the authority file's writer.
HUMAN_ACTS = ("gage.inbox.gate", "gage.trust.ceremony", "gage.inbox.ownkey", "gage.trust.retirement", "gage.cli.cmd_gate", "gage.cli.cmd_trust", "gage.cli.cmd_keys")


def _sdk(name: str) -> bool:
    return name == "mcp" or name.startswith("mcp.")


def test_only_gage_mcp_server_imports_the_mcp_sdk() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in ROOT.rglob("*.py")
        if path != SDK_USER
        for name in _imports(path)
        if _sdk(name)
    ]
    assert not offenders, "only gage/mcp/server.py may import the MCP SDK:\n" + "\n".join(offenders)
    assert any(_sdk(n) for n in _imports(SDK_USER)), "the check must see the server's own import"


def test_the_check_sees_a_lazy_sdk_import_and_not_gage_mcp(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from mcp.server.mcpserver import MCPServer\n    from . import mcp as ours\n    return MCPServer, ours\n")
    names = _imports(probe, pkg="gage")
    assert any(_sdk(n) for n in names)
    assert "gage.mcp" in names and not _sdk("gage.mcp")


def test_gage_mcp_reaches_no_human_act() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / "mcp").rglob("*.py")
        for name in _imports(path)
        if any(name == h or name.startswith(h + ".") for h in HUMAN_ACTS)
    ]
    assert not offenders, "\n".join(offenders)


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


def test_only_seams_reaches_into_the_rest_of_gage() -> None:
    """One module to change when the core moves (gage/mcp/seams.py): the others take gage's names from it."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / "mcp").glob("*.py")
        if path.name != "seams.py"
        for name in _imports(path)
        if (name == "gage" or name.startswith("gage.")) and not name.startswith("gage.mcp")
    ]
    assert not offenders, "\n".join(offenders)


def test_no_interface_reaches_sideways_into_another() -> None:
    """The JSON shapes both interfaces print live below them (issue 29 item 11): gage/mcp and
    gage/tui import nothing of gage.cli or of each other, and the import-linter contract says
    so (the command line sits above the two it starts; the two are independent)."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for pkg, banned in (("mcp", ("gage.cli", "gage.tui")), ("tui", ("gage.cli", "gage.mcp")))
        for path in (ROOT / pkg).rglob("*.py")
        for name in _imports(path)
        if any(name == b or name.startswith(b + ".") for b in banned)
    ]
    assert not offenders, "\n".join(offenders)
    import tomllib

    contract = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"][0]
    assert contract["layers"][:2] == ["gage.cli", "gage.tui | gage.mcp"]
