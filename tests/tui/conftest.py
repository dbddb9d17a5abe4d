"""Fixtures for the interface tests: a deterministic world per test (see tuikit)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tuikit import World, build_world  # noqa: E402


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)
