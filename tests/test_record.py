"""gage.format.record behaves as the dataclasses it replaces on the start path, at run time and
for mypy (a frozen record's field cannot be assigned in either)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from gage.bundle.problems import Problem
from gage.format.keys import RetiredKey
from gage.format.record import Frozen, FrozenRecordError, Record, replace, set_field


class Point(Frozen):
    __slots__ = ("x", "y", "cache")
    x: int
    y: int
    cache: object
    _uncompared = ("cache",)
    _unshown = ("cache",)
    _uninit = ("cache",)

    def __init__(self, x: int, y: int = 0) -> None:
        set_field(self, "x", x)
        set_field(self, "y", y)
        set_field(self, "cache", None)


class Point3(Point):
    __slots__ = ("z",)
    z: int

    def __init__(self, x: int, y: int = 0, z: int = 0) -> None:
        super().__init__(x, y)
        set_field(self, "z", z)


class Box(Record):
    __slots__ = ("items", "name")
    items: list[int]
    name: str

    def __init__(self, name: str, items: list[int] | None = None) -> None:
        self.name = name
        self.items = [] if items is None else items


@dataclasses.dataclass(frozen=True)
class DPoint:
    x: int
    y: int = 0
    cache: object = dataclasses.field(
        default=None, init=False, compare=False, repr=False
    )


def test_fields_follow_the_slots_base_first() -> None:
    assert Point._fields == ("x", "y", "cache")
    assert Point3._fields == ("x", "y", "cache", "z")
    assert vars(Point3)["__match_args__"] == ("x", "y", "z")
    match Point3(1, 2, 3):
        case Point3(a, b, c):  # type: ignore[misc]
            assert (a, b, c) == (1, 2, 3)
        case _:
            raise AssertionError("no match")


def test_equality_and_hash_as_a_frozen_dataclass() -> None:
    a, b = Point(1, 2), Point(1, 2)
    set_field(b, "cache", "something")
    assert a == b and hash(a) == hash(b)
    assert Point(1, 2) != Point(2, 1)
    # Only exactly the same class compares equal, as with dataclasses.
    assert Point(1, 2) != Point3(1, 2)
    assert Point(1, 2).__eq__((1, 2)) is NotImplemented
    assert {Point(1, 2), Point(1, 2)} == {Point(1, 2)}
    assert (DPoint(1, 2) == DPoint(1, 2)) == (Point(1, 2) == Point(1, 2))


def test_repr_as_a_dataclass() -> None:
    assert repr(Point(1, 2)) == repr(DPoint(1, 2)).replace("DPoint", "Point")
    assert repr(Box("b", [1])) == "Box(items=[1], name='b')"


def test_frozen_refuses_changes() -> None:
    p = Point(1)
    with pytest.raises(FrozenRecordError, match="'x'"):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(AttributeError):
        p.other = 1  # type: ignore[attr-defined]
    assert p.x == 1


def test_mutable_record_is_unhashable_and_settable() -> None:
    b = Box("b")
    b.items.append(1)
    b.name = "c"
    assert b == Box("c", [1])
    with pytest.raises(TypeError):
        hash(b)
    with pytest.raises(AttributeError):
        b.other = 1  # type: ignore[attr-defined]


def test_replace_goes_through_init() -> None:
    p = Point3(1, 2, 3)
    q = replace(p, y=5)
    assert q == Point3(1, 5, 3) and q.cache is None and p.y == 2
    with pytest.raises(TypeError, match="cache"):
        replace(p, cache=1)
    with pytest.raises(TypeError, match="nope"):
        replace(p, nope=1)


def test_copy_and_pickle_keep_the_fields() -> None:
    p = Point3(1, 2, 3)
    for q in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert q == p and q.z == 3
        with pytest.raises(FrozenRecordError):
            q.z = 4
    b = copy.deepcopy(Box("b", [1]))
    assert b == Box("b", [1])


def test_importing_records_loads_no_dataclasses() -> None:
    probe = "import sys, gage.format.record; print('dataclasses' in sys.modules, 'inspect' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]


SNIPPET = """\
from gage.bundle.problems import Problem
from gage.format.keys import RetiredKey


def change(r: RetiredKey, p: Problem) -> None:
    r.reason = "compromised"
    p.stage = "name"
"""


def test_mypy_refuses_an_assignment_to_a_frozen_records_field_and_allows_a_mutable_ones(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    out, err, code = api.run(["--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"), str(snippet)])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert code == 1, (out, err)
    assert errors == [f'{snippet}:6: error: Property "reason" defined in "RetiredKey" is read-only  [misc]'], out


def test_a_frozen_records_field_is_refused_at_run_time_too() -> None:
    r = RetiredKey(key=b"k" * 32, name="a", secret=None, reason="superseded", retired_at="t", replacement=None, statement="{}", origin="this home")
    with pytest.raises(FrozenRecordError):
        r.reason = "compromised"  # type: ignore[misc]
    p = Problem(stage="malformed", message="m", path=None)
    p.stage = "name"
    assert p.stage == "name"
