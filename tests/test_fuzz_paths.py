"""Property tests for payload paths and their fold (spec/bundle.md sections 2 and 4): every string
is taken or refused with MalformedError, what is taken keeps every rule, the fold is a fixed
point, and the list check agrees with the fold for any two paths."""

from __future__ import annotations

import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

from gage.format.errors import MalformedError
from gage.format.manifest import MAX_PATH, check_path, fold_path

tricky = st.sampled_from(
    ["a", "A", "s", "S", "\u017f", "\u00df", "SS", "\u0301", "\u015b", "\u00e9", "e\u0301", "/", ".", "..", " ", ":", "\\",
     "\u212a", "k", "\u0130", "i\u0307", "\u03a3", "\u03c3", "\u03c2", "\ufb00", "ff", "\u200b", "\u202e", "\x00", "\U0001f600",
     "\U000e0001", "\ud7ff", "\uffff", "\u0345", "\u03b9", "\u1fbe"]
)
paths = st.lists(tricky, min_size=1, max_size=10).map("".join)
any_text = st.text(st.characters(codec="utf-8"), max_size=20)


@fuzz_settings(400)
@given(paths | any_text, paths | any_text)
@example("Stra\u00dfe", "STRASSE")
@example("\u017f\u0301", "\u015b")
@example("a", "A/b")
@example("\u212a", "k")
def test_two_paths(a: str, b: str) -> None:
    targets.path(f"{a}\x00{b}".encode("utf-8", "surrogatepass"))


@fuzz_settings(200)
@given(paths | any_text)
def test_a_taken_path_is_nfc_and_plain_and_short(p: str) -> None:
    try:
        assert check_path(p, "files[0].path") == p
    except MalformedError as exc:
        assert exc.field == "files[0].path"
        return
    assert len(p.encode()) <= MAX_PATH and unicodedata.is_normalized("NFC", p)
    f = fold_path(p)
    assert fold_path(f) == f and f.count("/") == p.count("/")


@fuzz_settings(100)
@given(st.integers(1, 1100), st.sampled_from(["a", "\u00e9", "\u4e00", "\U0001f600"]))
def test_the_length_limit_is_in_bytes(n: int, ch: str) -> None:
    p = "/".join(ch * min(n, 200 // len(ch.encode()) * 1) for _ in range(max(1, n // 200)))[:n]
    p = p.strip("/") or "a"
    try:
        check_path(p, "x")
        assert len(p.encode()) <= MAX_PATH
    except MalformedError:
        assert len(p.encode()) > MAX_PATH or "//" in p or p.endswith("/")
