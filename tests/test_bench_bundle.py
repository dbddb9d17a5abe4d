"""bench/bench_bundle.py and bench/bench_verify.py start and print their tables at a tiny size
(their speed is not asserted: bench/README.md has the measured ratios)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str, cwd: Path) -> str:
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_bench_bundle_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = _run(
        "bench_bundle.py", "--big-mib", "2", "--big-files", "3", "--small-files", "20", "--rounds", "1", "--cli", "--dir", str(tmp_path), cwd=ROOT
    )
    for row in ("sha256 only", "copy+hash, fsync each", "gage bundle (in process)", "gage bundle (command)"):
        assert row in out, out
    assert "big: gage/copy-and-hash = " in out and "small: gage/copy-and-hash = " in out, out
    assert list(tmp_path.iterdir()) == []  # its sources, homes and copies are removed


def test_bench_verify_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = _run(
        "bench_verify.py",
        *("--many-mib", "2", "--many-files", "3", "--small-files", "20", "--one-mib", "1", "--rounds", "1", "--cli", "--dir", str(tmp_path)),
        cwd=ROOT,
    )
    for row in ("sha256, one thread", "gage check", "gage verify (command)"):
        assert row in out, out
    for label in ("many", "small", "one"):
        assert f"{label}: gage/floor = " in out, out
    for tool in ("minisign", "signify"):  # each either runs as a row or says it is not installed
        assert f"{tool}: not installed" in out or f"{tool} -" in out, out
    assert list(tmp_path.iterdir()) == []
