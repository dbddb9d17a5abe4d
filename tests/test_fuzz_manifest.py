"""Property tests for the manifest parser (spec/bundle.md section 2): generated manifests, valid
and not, in any layout; what is read is what a writer can write, and paths that fold together
or nest are never both taken."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

from gage.format import strictjson
from gage.format.errors import MalformedError
from gage.format.manifest import KINDS, Manifest

HEX = "0123456789abcdef"
ids = st.text(HEX, min_size=64, max_size=64)
keys = st.text(HEX, min_size=64, max_size=64).map(lambda h: f"ed25519:{h}")
# Letters that fold together (s, S, long s, sharp s, combining acute, e acute), and the separator.
path_alphabet = st.sampled_from(["a", "A", "s", "S", "\u017f", "\u00df", "\u0301", "\u00e9", "e", "/", ".", " ", "\u1e9e", "k", "\u212a"])
paths = st.text(path_alphabet, min_size=1, max_size=8)
times = st.sampled_from(["2026-01-31T12:00:00Z", "2026-02-30T12:00:00Z", "2026-01-31T24:00:00Z", "2026-01-31T12:00:00z", "\u0662026-01-31T12:00:00Z"])


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    def party() -> dict[str, Any]:
        return {"key": draw(keys), "name": draw(st.text(max_size=5))}

    threaded = draw(st.booleans())
    obj: dict[str, Any] = {
        "gage": draw(st.sampled_from([1, 1, 1, 2, True, "1"])),
        "kind": draw(st.sampled_from([*KINDS, "Share"])),
        "created": draw(times),
        "nonce": draw(st.text(HEX, min_size=32, max_size=32)),
        "sender": party(),
        "thread": draw(ids) if threaded else None,
        "parent": draw(ids) if threaded else None,
        "to": [party() for _ in range(draw(st.integers(0, 2)))],
        "subject": draw(st.none() | st.text(max_size=10)),
        "files": [
            {"path": draw(paths), "size": draw(st.integers(0, 2**53 - 1)), "sha256": draw(st.text(HEX, min_size=64, max_size=64))}
            for _ in range(draw(st.integers(0, 4)))
        ],
        "chain": [],
    }
    # Now and then, one rule broken on purpose.
    what = draw(st.integers(0, 9))
    if what == 0:
        obj["extra"] = 1
    elif what == 1:
        del obj[draw(st.sampled_from(sorted(obj)))]
    elif what == 2 and obj["files"]:
        obj["files"][0]["size"] = draw(st.sampled_from([-1, True, 2**53, "1"]))
    return obj


def _layout(obj: dict[str, Any], draw: st.DrawFn) -> bytes:
    style = draw(st.integers(0, 2))
    if style == 0:
        return strictjson.dumps(obj)
    items = list(obj.items())
    draw(st.randoms()).shuffle(items)
    return json.dumps(dict(items), indent=draw(st.sampled_from([None, 1])), ensure_ascii=draw(st.booleans())).encode()


@fuzz_settings(200)
@given(manifests(), st.data())
def test_generated_manifests(obj: dict[str, Any], data: st.DataObject) -> None:
    raw = _layout(obj, data.draw)
    targets.manifest(raw)


@fuzz_settings(150)
@given(manifests(), st.data())
def test_a_manifest_is_read_the_same_in_any_layout(obj: dict[str, Any], data: st.DataObject) -> None:
    a, b = strictjson.dumps(obj), _layout(obj, data.draw)
    try:
        ma = Manifest.parse(a)
    except MalformedError as exc:
        try:
            Manifest.parse(b)
        except MalformedError as exc2:
            assert (exc.field, exc.message) == (exc2.field, exc2.message) or exc.field is None or exc2.field is None
            return
        raise AssertionError(f"refused in one layout ({exc}), taken in another") from None
    mb = Manifest.parse(b)
    assert (ma.kind, ma.sender, ma.files, ma.to, ma.subject, ma.thread) == (mb.kind, mb.sender, mb.files, mb.to, mb.subject, mb.thread)
    assert ma.id != mb.id or a == b  # the id is of the bytes, never of the meaning


@fuzz_settings(200)
@given(st.binary(max_size=300))
def test_any_bytes(data: bytes) -> None:
    targets.manifest(data)


@fuzz_settings(200)
@given(st.data())
def test_a_real_manifest_with_bytes_changed(data: st.DataObject) -> None:
    raw = bytearray(targets.seeds("manifest")[0])
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    targets.manifest(bytes(raw))
