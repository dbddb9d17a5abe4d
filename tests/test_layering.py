"""The core must not depend on any interface: the CLI and the TUI sit on top of it.

Checked by parsing every core module's imports (not by importing them), so a lazy
import inside a function is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gage

ROOT = Path(gage.__file__).parent
UI_PACKAGES = ("textual", "rich", "gage.tui", "gage.cli")
# `python -m gage` (gage/__main__.py) is an entry point like the `gage` script, not core;
# gage/mcp is an interface too (for agents), and answers from what the CLI prints.
CORE = [p for p in ROOT.rglob("*.py") if not {"tui", "cli", "mcp"} & set(p.relative_to(ROOT).parts) and p.name != "__main__.py"]


def _imports(path: Path, pkg: str | None = None) -> list[str]:
    """Absolute names of everything `path` imports; `pkg` is the package it belongs to."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    if pkg is None:
        pkg = ".".join(["gage", *path.relative_to(ROOT).parts[:-1]])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.rstrip(".").split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
                names.append(mod)
                names += [f"{mod}.{a.name}" for a in node.names]
            else:
                names.append(node.module or "")
    return names


def test_core_modules_exist() -> None:
    names = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in CORE}
    assert {"bundle.__init__", "format.manifest", "format.keys", "format.words", "trust.verdict", "home.journal.log", "inbox.store", "trust.ceremony"} <= names


def test_no_core_module_imports_a_ui() -> None:
    offenders = []
    for path in CORE:
        for name in _imports(path):
            if any(name == ui or name.startswith(ui + ".") for ui in UI_PACKAGES):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "core modules must not import UI code:\n" + "\n".join(offenders)


def test_the_check_catches_a_ui_import(tmp_path: Path) -> None:
    """The rule above must be able to fail: a lazy textual import and a relative gage.tui import."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from textual.app import App\n    from .tui import app\n    return App, app\n")
    names = _imports(probe, pkg="gage")
    assert "textual.app" in names
    assert "gage.tui" in names


def test_nothing_but_the_ceremony_confirms_a_key() -> None:
    """Never break #3: only gage/trust/ceremony.py may call Contacts._confirm."""
    callers = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "._confirm(" in text and path.name != "ceremony.py":
            callers.append(str(path.relative_to(ROOT)))
    assert not callers, f"only the ceremony may confirm a key; also found in {callers}"


SDK_PACKAGES = ("a2a", "starlette", "uvicorn", "httpx", "sse_starlette", "google.protobuf", "pydantic")
# The modules that may load the optional A2A extra; the CLI imports them only inside serve and send.
SDK_USERS = {ROOT / "carriers" / "a2a" / n for n in ("server.py", "client.py", "fetching.py", "connections.py")}
# pydantic comes with the MCP extra too: the MCP server's schemas (spec/mcp.md section 2) use it, loaded only by `gage mcp`.
MCP_PYDANTIC = {ROOT / "mcp" / "server.py", ROOT / "mcp" / "shapes.py"}


def test_only_the_live_transport_imports_the_a2a_sdk() -> None:
    """The SDK is an optional extra: every module but the live server and client must work without it."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        if path in SDK_USERS:
            continue
        for name in _imports(path):
            if path in MCP_PYDANTIC and (name == "pydantic" or name.startswith("pydantic.")):
                continue
            if any(name == sdk or name.startswith(sdk + ".") for sdk in SDK_PACKAGES):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "only gage/carriers/a2a/server.py and client.py may import the A2A SDK or its server:\n" + "\n".join(offenders)


def test_the_cli_loads_without_the_sdk() -> None:
    """`gage --help` and every other command start without the extra: nothing imports live at load time."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('a2a', 'starlette', 'uvicorn', 'httpx'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from gage.cli.main import build_parser\n"
        "import gage.carriers.a2a.artifact, gage.carriers.a2a.card, gage.tui.app\n"
        "build_parser()\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
