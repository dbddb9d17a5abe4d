"""Property tests for the relay's readers (spec/relay.md sections 3 and 5): mutated vectors and
random bytes are taken whole or refused with a typed error, and the envelope reader never
writes outside its scratch folder."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

V = json.loads((Path(__file__).resolve().parents[1] / "spec" / "vectors" / "relay.json").read_text())
PLAIN = base64.b64decode(V["envelope"]["plaintext_b64"])
RECORD = base64.b64decode(V["records"][0]["data_b64"])


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "dup"]))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[i : i + draw(st.integers(1, 64))]
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "dup":
            data[i:i] = data[i : i + draw(st.integers(1, 64))]
    return bytes(data)


@fuzz_settings(150)
@given(mutated(PLAIN) | st.binary(max_size=256))
def test_envelope_reader_takes_or_refuses_and_stays_inside(data: bytes) -> None:
    targets.envelope(data)


@fuzz_settings(150)
@given(mutated(RECORD) | st.binary(max_size=256))
def test_directory_record_is_valid_malformed_or_refused(data: bytes) -> None:
    targets.directory_record(data)


def test_the_targets_accept_their_seeds() -> None:
    for name in ("envelope", "directory_record"):
        seeds = targets.seeds(name)
        assert len(seeds) > 3
        for s in seeds:
            targets.TARGETS[name](s)
