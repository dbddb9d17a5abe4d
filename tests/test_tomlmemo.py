"""gage.home.cache.tomlparsed gives exactly what tomllib gives, and only for the very text it parsed (issue 28)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gage.home.cache import tomlparsed

TEXTS = [
    "",
    '[[contact]]\nname = "alice"\nkey = "ed25519:AAAA"\n',
    'a = 1.5\nb = -0.0\nc = inf\nd = nan\ne = 9223372036854775807\nf = "\\u00e9 \\t"\n[t.u]\nv = [1, [2, "x"]]\n',
    "when = 1979-05-27T07:32:00Z\n",  # a date: never kept
    "x = 1\nx = 2\n",  # not TOML: never kept
    'k = "\U0001f600"\n[[grant]]\nmay = """multi\nline"""\n',
]


def home_like(tmp_path: Path) -> Path:
    (tmp_path / "cache").mkdir(mode=0o700)
    return tmp_path / "contacts.toml"


def same(a: object, b: object) -> bool:
    """Equal as values and as types, in order, NaN and -0.0 included: repr shows each (1 and 1.0,
    True and 1, nan, -0.0 all differ in it)."""
    return repr(a) == repr(b)


@pytest.mark.parametrize("text", TEXTS)
def test_the_memo_gives_what_tomllib_gives(tmp_path: Path, text: str) -> None:
    path = home_like(tmp_path)
    try:
        want = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        for _ in range(2):
            with pytest.raises(tomllib.TOMLDecodeError) as got:
                tomlparsed.loads(text, path, 1 << 20)
            assert str(got.value) == str(exc)
        assert not (tmp_path / "cache" / "contacts.toml.parsed.json").exists()
        return
    first = tomlparsed.loads(text, path, 1 << 20)
    second = tomlparsed.loads(text, path, 1 << 20)
    assert same(first, want) and same(second, want)
    kept = (tmp_path / "cache" / "contacts.toml.parsed.json").exists()
    assert kept == ("when" not in text)


def test_a_memo_is_used_only_for_its_exact_text(tmp_path: Path) -> None:
    path = home_like(tmp_path)
    assert tomlparsed.loads('a = "one"\n', path, 1 << 20) == {"a": "one"}
    memo = tmp_path / "cache" / "contacts.toml.parsed.json"
    kept = json.loads(memo.read_text())
    assert kept["text"] == 'a = "one"\n'
    # A memo whose document was changed in place is a miss (its seal no longer holds)...
    kept["doc"] = {"a": "forged"}
    memo.write_text(json.dumps(kept))
    assert tomlparsed.loads('a = "one"\n', path, 1 << 20) == {"a": "one"}
    # ...and one planted with its seal (by whoever can write the home) serves only its own text...
    kept = dict(kept, doc={"a": "forged"}, seal=tomlparsed._seal('a = "one"\n', {"a": "forged"}))
    memo.write_text(json.dumps(kept))
    assert tomlparsed.loads('a = "one"\n', path, 1 << 20) == {"a": "forged"}
    # ...never a text that differs by one character, which is parsed (and kept) afresh.
    assert tomlparsed.loads('a = "one" \n', path, 1 << 20) == {"a": "one"}
    assert json.loads(memo.read_text())["text"] == 'a = "one" \n'
    # Another parser's or format's memo, or a damaged one, is a miss.
    for bad in (dict(kept, parser="tomllib/0.0"), dict(kept, format="x"), "not json"):
        memo.write_text(bad if isinstance(bad, str) else json.dumps(dict(bad, text='a = "one"\n')))
        assert tomlparsed.loads('a = "one"\n', path, 1 << 20) == {"a": "one"}


def test_nothing_is_written_where_there_is_no_cache_folder(tmp_path: Path) -> None:
    path = tmp_path / "contacts.toml"
    assert tomlparsed.loads("a = 1\n", path, 1 << 20) == {"a": 1}
    assert os.listdir(tmp_path) == []
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "elsewhere")
    assert tomlparsed.loads("a = 1\n", path, 1 << 20) == {"a": 1}
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_memo_hit_imports_no_tomllib(tmp_path: Path) -> None:
    path = home_like(tmp_path)
    tomlparsed.loads('a = "one"\n', path, 1 << 20)
    probe = (
        "import sys; from pathlib import Path; from gage.home.cache import tomlparsed;"
        f"assert tomlparsed.loads('a = \"one\"\\n', Path({str(path)!r}), 1 << 20) == {{'a': 'one'}};"
        "print('tomllib' in sys.modules, 'typing' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == "False"


toml_values = st.recursive(
    st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False), st.booleans()),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), toml_values, max_size=5))
def test_generated_documents_come_back_exactly(tmp_path_factory: pytest.TempPathFactory, doc: dict[str, object]) -> None:
    import tomli_w

    text = tomli_w.dumps(doc)
    path = home_like(tmp_path_factory.mktemp("h"))
    want = tomllib.loads(text)
    assert same(tomlparsed.loads(text, path, 1 << 20), want)
    assert same(tomlparsed.loads(text, path, 1 << 20), want)
