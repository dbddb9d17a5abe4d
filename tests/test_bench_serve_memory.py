"""bench/bench_serve_memory.py starts and prints its table at a tiny size (issue 19 item 9; the
bound itself is read from its output at full size, bench/README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a benchmark at a small size: CI runs it, the edit loop may skip it (-m "not slow")


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is read from /proc (Linux)")
def test_bench_serve_memory_runs_at_a_tiny_size() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_serve_memory.py"), "--counts", "1,5", "--max-bytes", "65536", "--no-pad", "--lock-seconds", "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("request:") and "home lock held" in lines[0]
    five = next(line for line in lines if line.split()[:1] == ["5"])
    assert "503: 1" in five  # the fifth request found every slot taken
    assert "bounded" in lines[-1]
