"""Fixtures for every test. The code lives in gagetest.py, whose module name, unlike `conftest`, is unique.

Random choices are seeded and the seed printed (issue 11: tests deterministic under load). One seed
per run, from GAGE_TEST_SEED or chosen afresh, is shown in the header; it is put in the environment
before pytest-xdist starts its workers, so every worker (and every test that reads GAGE_TEST_SEED,
such as the kill and soak tests) uses the same one. Each test's `random` is seeded from it and the
test's own id, so a test draws the same numbers whichever worker runs it, in whatever order.
Replay a run with `GAGE_TEST_SEED=N python -m pytest ...`; hypothesis prints its own seed on failure.
"""

from __future__ import annotations

import os
import random

import pytest
from gagetest import gage, make_home  # noqa: F401 - fixtures, found by pytest through this module

SEED_ENV = "GAGE_TEST_SEED"


def _seed() -> int:
    return int(os.environ[SEED_ENV])


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get(SEED_ENV, "").strip().isdigit() or int(os.environ[SEED_ENV]) == 0:
        os.environ[SEED_ENV] = str(random.SystemRandom().randrange(1, 1 << 31))


def pytest_report_header(config: pytest.Config) -> str:
    return f"{SEED_ENV}={_seed()} (set it to replay this run's random choices)"


@pytest.fixture(autouse=True)
def _seeded_random(request: pytest.FixtureRequest) -> None:
    random.seed(f"{_seed()}:{request.node.nodeid}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and report.when == "call":
        report.sections.append(("seed", f"{SEED_ENV}={_seed()}"))
