"""The fast readings (issue 13) decide nothing on their own: strict JSON's C-speed reading and
the manifest's whole-list file check either give exactly what the rule-by-rule readings give,
or step aside. Each input is read twice, with and without the fast path, and both outcomes
(the value, or the error's message and field) must be the same."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings

from gage.format import manifest_files as manifest_mod
from gage.format import strictjson
from gage.format.errors import MalformedError

MAX = strictjson.MAX_INTEGER
H = "ab" * 32


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", fn(*args)
    except MalformedError as exc:
        return "error", (exc.message, exc.field)


def _json_both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[str, Any], tuple[str, Any]]:
    fast = _outcome(lambda d: strictjson.loads(d, limit=1 << 20), data)

    def no_fast(text: str) -> Any:
        raise strictjson._Unsure

    with monkeypatch.context() as m:
        m.setattr(strictjson, "_fast", no_fast)
        exact = _outcome(lambda d: strictjson.loads(d, limit=1 << 20), data)
    return fast, exact


JSON_CASES = [
    b'{"a":1,"b":[1,2,{"c":null}]}',
    b'{"a":1,"a":2}',
    b'[{"x":1},{"x":1,"x":1}]',
    b"-0",
    b"[-0]",
    b'{"a": -0}',
    b'{"a":"-0"}',
    b'["x-0", 0, -1]',
    str(MAX).encode(),
    str(MAX + 1).encode(),
    f"[{-MAX}, {-MAX - 1}]".encode(),
    b"[12345678901234567]",
    b'"1234567890123456789"',
    b"1" * 5000,
    b"[1.5]",
    b"[1e3]",
    b"[NaN]",
    b"[-Infinity]",
    b'"\\ud800"',
    b'"\\ud83d\\ude00"',
    b"[" * 32 + b"]" * 32,
    b"[" * 33 + b"]" * 33,
    b"{}",
    b"[]",
    b"true",
    b"[1,]",
    b'{"a":1,"a":2,"b":1.5}',
]


@pytest.mark.parametrize("data", JSON_CASES)
def test_strict_json_fast_and_exact_agree(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, exact = _json_both(data, monkeypatch)
    assert fast == exact


def test_the_fast_reading_refuses_nothing_the_rules_allow_and_allows_nothing_they_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cases above hold both kinds: the check is not vacuous.
    kinds = {_json_both(d, monkeypatch)[0][0] for d in JSON_CASES}
    assert kinds == {"value", "error"}


scalars = st.none() | st.booleans() | st.integers(-(MAX + 3), MAX + 3) | st.sampled_from([0, -1, 1]) | st.text(max_size=6)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=3), c, max_size=4), max_leaves=16)


@fuzz_settings(200)
@given(values, st.sampled_from([None, 1]), st.booleans())
def test_generated_documents_read_the_same_both_ways(value: Any, indent: int | None, minus_zero: bool) -> None:
    text = json.dumps(value, indent=indent)
    if minus_zero:
        text = text.replace("0", "-0", 1)  # sometimes a -0, sometimes inside a string, sometimes invalid
    with pytest.MonkeyPatch.context() as mp:
        fast, exact = _json_both(text.encode(), mp)
    assert fast == exact


def _files_both(value: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[str, Any], tuple[str, Any]]:
    fast = _outcome(manifest_mod.parse_files, value)
    with monkeypatch.context() as m:
        m.setattr(manifest_mod, "plain_files", lambda v: None)
        exact = _outcome(manifest_mod.parse_files, value)
    return fast, exact


def _entry(path: Any, size: Any = 1, sha256: Any = H) -> dict[str, Any]:
    return {"path": path, "size": size, "sha256": sha256}


FILE_CASES: list[list[Any]] = [
    [_entry("a.txt"), _entry("dir/b.txt", 0), _entry("dir/sub/c", 2**53 - 1)],
    [],
    [_entry("a"), _entry("A")],
    [_entry("a"), _entry("a/b")],
    [_entry("x/a"), _entry("x/a/b/c")],
    [_entry("a/b"), _entry("a")],
    [_entry("a\nb")],
    [_entry("a"), _entry("b\nc")],
    [_entry("a", True)],
    [_entry("a", -1)],
    [_entry("a", 2**53)],
    [_entry("a", 1.0)],
    [_entry("a", 1, H.upper())],
    [_entry("a", 1, H[:-1])],
    [_entry("a", 1, H + "\n" + H)],
    [_entry("a", 1, 5)],
    [_entry(5)],
    [_entry("")],
    [_entry("a/../b")],
    [_entry("a/./b")],
    [_entry("a//b")],
    [_entry("/a")],
    [_entry("a/")],
    [_entry("a:b")],
    [_entry("a\\b")],
    [_entry("a ")],
    [_entry("a.")],
    [_entry("x" * 256)],
    [_entry("/".join(["x" * 200] * 6))],
    [_entry("caf\u00e9"), _entry("CAF\u00c9")],
    [_entry("e\u0301")],
    [{"path": "a", "size": 1}],
    [{"path": "a", "size": 1, "sha256": H, "extra": 1}],
    [{"path": "a", "size": 1, "hash": H}],
    [["a", 1, H]],
    ["a"],
    [_entry("a"), _entry("b", 1, "0" * 64), {"path": "c"}],
]


@pytest.mark.parametrize("value", FILE_CASES)
def test_the_file_list_fast_and_exact_agree(value: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    fast, exact = _files_both(value, monkeypatch)
    assert fast == exact


def test_the_file_list_fast_path_is_taken_for_plain_lists() -> None:
    value = [_entry(f"d{i % 7}/f{i}.txt", i) for i in range(50)]
    plain = manifest_mod.plain_files(value)
    assert plain is not None and [f.path for f in plain] == [v["path"] for v in value]
    assert all(type(f) is manifest_mod.FileEntry for f in plain)
    assert manifest_mod.plain_files([_entry("a"), _entry("a/b")]) is None


path_parts = st.sampled_from(["a", "A", "b", "a.txt", "A.TXT", "d", "D", "x y", "e\u0301", "\u00e9", ".", "..", "", "a:", "a "])


@fuzz_settings(200)
@given(st.lists(st.lists(path_parts, min_size=1, max_size=3).map("/".join), max_size=6), st.data())
def test_generated_file_lists_read_the_same_both_ways(paths: list[str], data: st.DataObject) -> None:
    sizes = data.draw(st.lists(st.sampled_from([0, 1, 2**53 - 1, 2**53, -1, True]), min_size=len(paths), max_size=len(paths)))
    value = [_entry(p, s) for p, s in zip(paths, sizes, strict=True)]
    with pytest.MonkeyPatch.context() as mp:
        fast, exact = _files_both(value, mp)
    assert fast == exact


path_chars = st.sampled_from(["a", "Z", "0", " ", ".", "/", "\n", ":", "\\", "-", "~", "\u00e9", "\x7f", "\t"])


@fuzz_settings(400)
@given(st.lists(path_chars, max_size=12).map("".join), st.sampled_from([0, 1, 254, 255, 256]))
def test_the_plain_path_shortcut_agrees_with_the_pattern(text: str, pad: int) -> None:
    # The byte-table and substring reading of a joined path list accepts exactly what the
    # pattern does (the shortcut answers only when every path is at most one component long).
    for joined in (text, "x" * pad + text, text + "x" * pad, text.replace("/", "/" + "y" * pad, 1)):
        longest = max(map(len, joined.split("\n")))
        want = manifest_mod._plain_ascii_paths_pattern().fullmatch(joined) is not None
        assert manifest_mod._plain_ascii_paths(joined, longest) is want, repr(joined)
