"""bench/bench_journal.py starts and prints its table at a tiny size (its speed is not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parent.parent


def test_bench_journal_runs_at_a_tiny_size(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "bench_journal.py"),
            *("--small", "20", "--big", "60", "--rounds", "1", "--command-rounds", "1", "--dir", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    for row in ("append", "import", "accept", "reject", "verdict", "gage verdict ID"):
        assert f"\n{row} " in res.stdout, res.stdout
    assert "worst big/small:" in res.stdout, res.stdout
    assert list(tmp_path.iterdir()) == []  # its homes are removed
