"""bench/bench_list.py starts and prints its table at a tiny size (its speed is not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parent.parent


def test_bench_list_runs_at_a_tiny_size(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_list.py"), "--pending", "4", "--small-pending", "2", "--rounds", "1", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    for row in ("floor (read + parse manifests)", "list cli (second run)", "verdict ID, big home", "read ID, small home"):
        assert row in res.stdout, res.stdout
    for ratio in ("list body / floor:", "list cli / floor:", "verdict big / small:", "read big / small:"):
        assert ratio in res.stdout, res.stdout
    assert list(tmp_path.iterdir()) == []  # its homes are removed
