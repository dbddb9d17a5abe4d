"""What the property tests share: the fuzz targets (fuzz/fuzz_targets.py) and hypothesis settings.

Every test prints, on failure, the example and a `@reproduce_failure` blob (and pytest's
hypothesis plugin the seed: rerun with `--hypothesis-seed=N`). `GAGE_FUZZ_EXAMPLES=N` runs each
property N times instead of its modest default.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

import fuzz_targets as targets  # noqa: E402

__all__ = ["targets", "fuzz_settings"]


def fuzz_settings(default: int) -> settings:
    return settings(
        max_examples=targets.budget(default),
        deadline=None,
        print_blob=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
