"""Property tests for strict JSON (spec/bundle.md section 3): any bytes are read or refused with
MalformedError, what is read is what a lenient reader sees and writes back the same, and the
rules (floats, depth, integers, duplicates, surrogates) hold for generated values."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

from gage.format import strictjson
from gage.format.errors import MalformedError

MAX = strictjson.MAX_INTEGER

scalars = st.none() | st.booleans() | st.integers(-MAX, MAX) | st.text(max_size=8)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=4), max_leaves=12)
loose_scalars = scalars | st.floats(allow_nan=True) | st.integers() | st.text(alphabet=st.characters(codec=None), max_size=4)
loose = st.recursive(loose_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3), max_leaves=10)


def _nest(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


@fuzz_settings(300)
@given(st.binary(max_size=200))
@example(b"[" * 100000)
@example(b'{"a":1,"a":2}')
@example(b'"\\ud800"')
@example(b"-0")
@example(b"1e400")
def test_any_bytes_are_read_or_refused(data: bytes) -> None:
    targets.strict_json(data)


@fuzz_settings(150)
@given(values, st.sampled_from([(",", ":"), (", ", ": "), ("\n,", "\t:\r")]), st.booleans())
def test_every_strict_value_round_trips_in_any_layout(value: object, seps: tuple[str, str], ascii_only: bool) -> None:
    text = json.dumps(value, separators=seps, ensure_ascii=ascii_only)
    assert strictjson.loads(text.encode(), limit=1 << 20) == value
    assert strictjson.loads(strictjson.dumps(value), limit=1 << 20) == value


@fuzz_settings(300)
@given(loose)
def test_lenient_json_is_taken_exactly_when_it_keeps_the_rules(value: object) -> None:
    try:
        text = json.dumps(value, allow_nan=True, ensure_ascii=False)
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, written raw: not UTF-8 at all
        data = json.dumps(value, allow_nan=True).encode()  # as a \\uXXXX escape instead

    def strict(v: object) -> bool:
        if isinstance(v, float):
            return False
        if isinstance(v, int) and not isinstance(v, bool):
            return abs(v) <= MAX
        if isinstance(v, str):
            return not any(0xD800 <= ord(c) <= 0xDFFF for c in v)
        if isinstance(v, list):
            return all(strict(x) for x in v)
        if isinstance(v, dict):
            return all(strict(k) and strict(x) for k, x in v.items())
        return True

    try:
        got = strictjson.loads(data, limit=1 << 20)
    except MalformedError:
        assert not strict(value), f"refused a strict value: {data[:200]!r}"
        return
    assert strict(value) and got == value


@fuzz_settings(100)
@given(st.integers(0, 40), st.booleans())
def test_depth_is_counted_as_specified(depth: int, inner: bool) -> None:
    value = _nest(0 if inner else [], depth) if not inner else _nest(0, depth)
    data = strictjson.dumps(value)
    real = depth + (0 if inner else 1)
    try:
        strictjson.loads(data, limit=1 << 20)
        assert real <= strictjson.MAX_DEPTH
    except MalformedError:
        assert real > strictjson.MAX_DEPTH


@fuzz_settings(150)
@given(values, st.data())
def test_one_changed_byte_never_crashes(value: object, data: st.DataObject) -> None:
    raw = bytearray(strictjson.dumps(value))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] = data.draw(st.integers(0, 255))
    targets.strict_json(bytes(raw))
