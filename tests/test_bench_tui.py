"""The interface benchmark starts and reports at a tiny size (its speed is measured by running it, not here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parents[1]


def test_bench_tui_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_tui.py"), "--pending", "6", "--journal", "40", "--small", "2", "--rounds", "1", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    for label in ("first rows", "all verdicts", "new bundle", "tick", "restart rows", "restart fill", "big/small"):
        assert label in out.stdout
