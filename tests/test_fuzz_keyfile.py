"""Property tests for the key file (spec/bundle.md section 7): a reference reading of the spec
decides every generated file the same way gage does."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

from gage.format.errors import MalformedError
from gage.format.keys import KEYFILE_LIMIT
from gage.format.keys.file import KeyFile

HEX = "0123456789abcdef"
keys = st.text(HEX, min_size=64, max_size=64).map(lambda h: f"ed25519:{h}") | st.sampled_from(
    ["ed25519:" + "A" * 64, "ed25519:" + "0" * 63, "x25519:" + "0" * 64, "", 7]
)


@st.composite
def key_files(draw: st.DrawFn) -> tuple[dict[str, Any], bytes]:
    obj: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        obj["gage-key"] = draw(st.sampled_from([1, 1, 1, True, "1", 2, 0, None]))
    if draw(st.integers(0, 9)):
        obj["key"] = draw(keys)
    if draw(st.booleans()):
        obj["name"] = draw(st.text(max_size=3) | st.text(min_size=195, max_size=205) | st.integers(0, 3))
    if not draw(st.integers(0, 9)):
        obj[draw(st.sampled_from(["Name", "gage", "extra"]))] = 1
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
    tail = draw(st.sampled_from(["", "\n", "\r\n", " ", "\n" * 4096]))
    return obj, (draw(st.sampled_from(["", " ", "\n"])) + text + tail).encode()


def _valid(obj: dict[str, Any], data: bytes) -> bool:
    v = obj.get("gage-key")
    key = obj.get("key")
    name = obj.get("name", "")
    return (
        len(data) <= KEYFILE_LIMIT
        and type(v) is int
        and v == 1
        and isinstance(key, str)
        and key.startswith("ed25519:")
        and len(key) == 72
        and all(c in HEX for c in key[8:])
        and isinstance(name, str)
        and len(name) <= 200
        and set(obj) <= {"gage-key", "key", "name"}
    )


@fuzz_settings(300)
@given(key_files())
def test_gage_agrees_with_the_spec(case: tuple[dict[str, Any], bytes]) -> None:
    obj, data = case
    try:
        kf = KeyFile.parse(data)
    except MalformedError:
        assert not _valid(obj, data), f"refused a valid key file: {data[:120]!r}"
        return
    assert _valid(obj, data), f"took an invalid key file: {data[:120]!r}"
    assert kf.name == obj.get("name", "") and kf.to_bytes().endswith(b"\n")
    targets.key_file(data)


@fuzz_settings(300)
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    targets.key_file(data)
