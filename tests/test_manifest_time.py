"""A manifest's time is judged by its fields, checked by datetime (issue 28: no strptime at
start-up); it accepts exactly what strptime with gage's format did."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings

from gage.format.manifest import time_problem

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _by_strptime(value: str) -> bool:
    try:
        datetime.strptime(value, FORMAT)
    except ValueError:
        return False
    return True


EDGES = [
    "2026-01-31T12:00:00Z", "2024-02-29T00:00:00Z", "2025-02-29T00:00:00Z", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z", "2026-00-10T00:00:00Z", "2026-13-10T00:00:00Z", "2026-01-00T00:00:00Z", "2026-04-31T00:00:00Z",
    "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z", "2026-01-01T23:59:61Z", "2026-01-01T23:59:62Z",
]


def test_edges_agree_with_strptime() -> None:
    for value in EDGES:
        assert (time_problem(value) is None) is _by_strptime(value), value


digits = st.text("0123456789", min_size=2, max_size=2)


@fuzz_settings(300)
@given(st.text("0123456789", min_size=4, max_size=4), digits, digits, digits, digits, digits)
def test_generated_times_agree_with_strptime(y: str, mo: str, d: str, h: str, mi: str, s: str) -> None:
    value = f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"
    assert (time_problem(value) is None) is _by_strptime(value), value
