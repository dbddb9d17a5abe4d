"""Conventions people expect of a command line: `--home` anywhere, `python -m gage`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gage.home.layout import Home
from gage.inbox.opening import open_home


def test_home_is_taken_after_the_subcommand_too(make_home, gage, tmp_path: Path) -> None:
    alice = make_home("alice")
    for argv in (["--home", str(alice.root), "id", "--json"], ["id", "--home", str(alice.root), "--json"], ["id", "--json", "--home", str(alice.root)]):
        r = gage(None, *argv)
        assert r.code == 0, (argv, r.err)
        assert json.loads(r.out)["name"] == "alice"


def test_home_after_a_nested_subcommand(make_home, gage) -> None:
    alice = make_home("alice")
    r = gage(None, "a2a", "card", "--home", str(alice.root), "--json")
    assert r.code == 0 and json.loads(r.out)["params"]["name"] == "alice"
    r = gage(None, "journal", "verify", "--home", str(alice.root))
    assert r.code == 0


def test_home_after_the_subcommand_wins_over_the_environment(make_home, gage, monkeypatch, tmp_path: Path) -> None:
    alice = make_home("alice")
    bob = make_home("bob")
    monkeypatch.setenv("GAGE_HOME", str(bob.root))
    r = gage(None, "id", "--json", "--home", str(alice.root))
    assert json.loads(r.out)["name"] == "alice"


def test_python_dash_m_gage_runs_the_cli(tmp_path: Path) -> None:
    Home.init(tmp_path / "h", "carol")
    res = subprocess.run([sys.executable, "-m", "gage", "--home", str(tmp_path / "h"), "id", "--json"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["name"] == "carol"


def test_bare_gage_without_a_terminal_prints_help_and_exits_2(tmp_path: Path) -> None:
    Home.init(tmp_path / "h", "carol")
    res = subprocess.run(
        [sys.executable, "-m", "gage", "--home", str(tmp_path / "h")], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert res.returncode == 2
    assert "\x1b" not in res.stdout + res.stderr, "no escape codes into a pipe"
    assert "usage: gage" in res.stderr and "no terminal" in res.stderr


def test_tui_without_a_terminal_is_a_usage_error(tmp_path: Path) -> None:
    Home.init(tmp_path / "h", "carol")
    res = subprocess.run(
        [sys.executable, "-m", "gage", "--home", str(tmp_path / "h"), "tui"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert res.returncode == 2 and "\x1b" not in res.stdout + res.stderr
    assert "needs a terminal" in res.stderr


def test_demo_without_a_terminal_makes_the_home_and_says_where(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "gage", "demo", "--dir", str(tmp_path / "d")], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert res.returncode == 0 and "\x1b" not in res.stdout + res.stderr
    root = Path(res.stdout.strip())
    assert root.is_relative_to(tmp_path / "d")
    assert open_home(root).exists()


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README says its test command is what CI runs (in parallel, `-n auto`): keep the two in step."""
    root = Path(__file__).resolve().parent.parent
    readme = [ln for ln in (root / "README.md").read_text(encoding="utf-8").splitlines() if "-m pytest" in ln]
    ci = [ln for ln in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines() if "-m pytest" in ln]
    assert len(readme) == 1 and len(ci) == 1, (readme, ci)
    assert ci[0].strip() in readme[0] and "-n auto" in ci[0]
    assert "pytest-xdist" in (root / "pyproject.toml").read_text(encoding="utf-8")
    assert "pytest-xdist==" in (root / "constraints.txt").read_text(encoding="utf-8")
