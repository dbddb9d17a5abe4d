"""Which package may import what: import-linter's contracts in pyproject.toml (the layers, the
libraries each extra brings, the carriers' independence, the caches' parts kept inside the cache package), checked by `lint-imports` on every
import, lazy ones and those under TYPE_CHECKING included. These run it, show that each contract
can fail on a probe package, and check what no import contract says.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import gage

ROOT = Path(gage.__file__).parent
LINT = Path(sys.executable).with_name("lint-imports")


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    found: list[dict[str, object]] = config["contracts"]
    return found


def lint(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "HOME": str(cwd)}
    return subprocess.run([str(LINT), "--no-cache", *argv], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_every_contract_is_kept() -> None:
    done = lint(ROOT.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout, done.stdout
    kinds = sorted(str(c["type"]) for c in contracts())
    assert kinds == ["forbidden"] * 7 + ["independence"] * 2 + ["layers"]


# A package named gage, beside the tree, that breaks each contract once: a lazy import, an import
# under TYPE_CHECKING, a sideways one between carriers or between commands, a human act reached
# from the MCP server.
PROBE = {
    "__init__.py": "",
    "format/__init__.py": "",
    "format/bad.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    import rich\n\n\ndef f():\n    import textual\n",
    "bundle/__init__.py": "",
    "home/__init__.py": "",
    "home/contacts.py": "from gage.home.cache import rowkept\n",
    "home/cache/__init__.py": "",
    "home/cache/rowkept.py": "",
    "home/cache/rowindex.py": "from gage.home.cache import rowkept\n",
    "home/cache/journalindexdb.py": "",
    "home/cache/sqlitefile.py": "",
    "trust/__init__.py": "",
    "trust/ceremony.py": "",
    "trust/retirement.py": "",
    "inbox/__init__.py": "def f():\n    import nats\n    from mcp import server\n    import uvicorn\n",
    "inbox/gate.py": "",
    "inbox/ownkey.py": "",
    "carriers/__init__.py": "",
    "carriers/watch.py": "def f():\n    from gage.carriers.a2a import server\n",
    "carriers/a2a/__init__.py": "",
    "carriers/a2a/server.py": "import uvicorn\nimport a2a\nimport pydantic\nimport starlette\nimport httpx\nimport sse_starlette\nimport google.protobuf\n",
    "carriers/a2a/client.py": "import httpx\n",
    "carriers/a2a/fetching.py": "import httpx\n",
    "carriers/a2a/connections.py": "import uvicorn\n",
    "carriers/relay/__init__.py": "",
    "carriers/relay/follow.py": "import nats\nimport pyrage\nfrom gage.carriers.watch import f\n",
    "mcp/__init__.py": "",
    "mcp/seams.py": "from gage.inbox import gate\n",
    "mcp/server.py": "import mcp\nimport pydantic\n",
    "mcp/shapes.py": "import pydantic\n",
    "mcp/answers.py": "from gage.format import bad\n",
    "cli/__init__.py": "",
    "cli/commands/__init__.py": "",
    "cli/commands/one.py": "def run():\n    from gage.cli.commands import two\n",
    "cli/commands/two.py": "",
    "tui/__init__.py": "",
}


def test_each_contract_can_fail(tmp_path: Path) -> None:
    for name, text in PROBE.items():
        path = tmp_path / "gage" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    import tomli_w

    wanted = [c for c in contracts() if c["type"] != "layers"]
    (tmp_path / ".importlinter.toml").write_bytes(
        tomli_w.dumps({"tool": {"importlinter": {"root_package": "gage", "include_external_packages": True, "contracts": wanted}}}).encode()
    )
    done = lint(tmp_path, "--config", ".importlinter.toml")
    said = done.stdout
    assert done.returncode == 1, said + done.stderr
    assert f"Contracts: 0 kept, {len(wanted)} broken." in said, said
    for edge in (
        "gage.format.bad -> textual",
        "gage.format.bad -> rich",
        "gage.inbox -> nats",
        "gage.inbox -> mcp",
        "gage.inbox -> uvicorn",
        "gage.mcp.answers -> gage.format.bad",
        "gage.mcp.seams -> gage.inbox.gate",
        "gage.carriers.watch -> gage.carriers.a2a.server",
        "gage.carriers.relay.follow -> gage.carriers.watch",
        "gage.home.contacts -> gage.home.cache.rowkept",
        "gage.cli.commands.one -> gage.cli.commands.two",
    ):
        assert edge in said, (edge, said)


def test_nothing_but_the_ceremony_confirms_a_key() -> None:
    """Never break #3: only gage/trust/ceremony.py may call Contacts._confirm."""
    callers = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "._confirm(" in text and path.name != "ceremony.py":
            callers.append(str(path.relative_to(ROOT)))
    assert not callers, f"only the ceremony may confirm a key; also found in {callers}"


def test_the_cli_loads_without_the_sdk() -> None:
    """`gage --help` and every other command start without the extra: nothing imports live at load time."""
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
