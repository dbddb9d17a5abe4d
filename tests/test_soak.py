"""Issue 10, proof: a short run of bench/soak.py (25 rounds of kill -9 during accept, reject,
import and bundle of multi-MiB bundles, with concurrent readers). The full run is
`python bench/soak.py` (1000 rounds); set GAGE_TEST_SEED to replay a failing seed."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a soak: CI runs it, the edit loop may skip it (-m "not slow")


SOAK = Path(__file__).resolve().parent.parent / "bench" / "soak.py"


def test_a_short_soak_keeps_every_bundle_whole_in_one_state(tmp_path: Path) -> None:
    seed = int(os.environ.get("GAGE_TEST_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 31)
    proc = subprocess.run(
        [sys.executable, str(SOAK), "--rounds", "25", "--size-mib", "2", "--seed", str(seed), "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"seed {seed}:\n{out[-3000:]}"
    assert out.startswith(f"seed {seed}\n")
    assert "rounds 25 in" in out, out
    assert "killed" in out, out  # kills happened, not just finished commands
