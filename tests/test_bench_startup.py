"""bench/bench_startup.py builds and installs its wheel, starts, and prints its table at a tiny size (its speed is not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parent.parent


def test_bench_startup_runs_at_a_tiny_size() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_startup.py"), "--rounds", "1", "--pending", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    for row in ("python -c pass", "python -c pass [editable venv]", "gage --version", "gage list (1 pending)", "gage verdict ID", "gage id"):
        assert row in res.stdout, res.stdout
    assert "a wheel of this tree in a throwaway venv" in res.stdout
    assert "slowest small command / python:" in res.stdout.splitlines()[-2]
    assert res.stdout.splitlines()[-1].startswith("bound: id, list, verdict within 6x a clean `python -c pass`: ")
