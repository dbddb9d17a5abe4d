"""Run spec/vectors/outbox.json against gage's delivery files (gage.home.sendqueue) and back-off (spec/relay.md section 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gage.carriers import outbox
from gage.format.errors import MalformedError
from gage.home import sendqueue

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors"
V: dict[str, Any] = json.loads((SPEC / "outbox.json").read_text())


def test_the_vectors_are_current() -> None:
    res = subprocess.run([sys.executable, str(SPEC / "generate_outbox.py"), "--check"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("case", V["cases"], ids=[c["name"] for c in V["cases"]])
def test_a_delivery_file_is_taken_or_refused_by_the_field_named(case: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / case["folder"] / sendqueue.FILE
    if case["ok"]:
        d = sendqueue.Delivery.from_json(case["delivery"], path)
        assert d.to_json() == {**case["delivery"], **{k: v for k, v in d.to_json().items() if k not in case["delivery"]}}
        return
    with pytest.raises(MalformedError) as refused:
        sendqueue.Delivery.from_json(case["delivery"], path)
    assert refused.value.field == case["field"] and refused.value.path == str(path)


def test_the_back_off_is_the_specs() -> None:
    assert {str(n): outbox.backoff(n) for n in range(1, len(V["backoff_after_tries"]) + 1)} == V["backoff_after_tries"]
