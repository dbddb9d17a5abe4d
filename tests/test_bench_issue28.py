"""bench/bench_decide.py and bench/bench_mcp.py start and print their tables at a tiny size (their speed is not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> str:
    res = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_bench_decide_runs_at_a_tiny_size() -> None:
    out = _run(str(ROOT / "bench" / "bench_decide.py"), "--pending", "4", "--rounds", "1")
    for row in ("floor", "one by one", "batch", "cli", "accept: batch / one by one", "reject: batch / one by one"):
        assert row in out, out


def test_bench_mcp_runs_at_a_tiny_size() -> None:
    out = _run(str(ROOT / "bench" / "bench_mcp.py"), "--pending", "5", "--rounds", "1")
    assert "[gage] initialize / sdk import:" in out and "list_bundles / parse floor:" in out, out
