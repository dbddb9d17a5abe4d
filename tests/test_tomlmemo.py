"""gage.home.cache.tomlparsed gives exactly what tomllib gives, and only for the very text it parsed;
the parse is kept in the row index's file (`cache/rows.sqlite`, table `parsed`), sealed under the
home's cache key."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tomllib
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gage.format import sha256
from gage.home.cache import sealkey, tomlparsed

TEXTS = [
    "",
    '[[contact]]\nname = "alice"\nkey = "ed25519:AAAA"\n',
    'a = 1.5\nb = -0.0\nc = inf\nd = nan\ne = 9223372036854775807\nf = "\\u00e9 \\t"\n[t.u]\nv = [1, [2, "x"]]\n',
    "when = 1979-05-27T07:32:00Z\n",  # a date: never kept
    "x = 1\nx = 2\n",  # not TOML: never kept
    'k = "\U0001f600"\n[[grant]]\nmay = """multi\nline"""\n',
]


def kept(home: Path, name: str = "contacts.toml") -> dict[str, Any] | None:
    """The parse kept for `name` in the home at `home`, as its row (None: none kept)."""
    if not (home / "cache" / "rows.sqlite").exists():
        return None
    with contextlib.closing(sqlite3.connect(home / "cache" / "rows.sqlite")) as db:
        got = db.execute("SELECT text_sha, parser, doc, seal FROM parsed WHERE name = ?", (name,)).fetchone()
    return None if got is None else dict(zip(("text_sha", "parser", "doc", "seal"), got, strict=True))


def plant(home: Path, row: dict[str, Any], name: str = "contacts.toml") -> None:
    with contextlib.closing(sqlite3.connect(home / "cache" / "rows.sqlite")) as db, db:
        db.execute("UPDATE parsed SET text_sha = ?, parser = ?, doc = ?, seal = ? WHERE name = ?", (*row.values(), name))


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
                tomlparsed.loads(text, path)
            assert str(got.value) == str(exc)
        assert not (tmp_path / "cache" / "rows.sqlite").exists() or kept(tmp_path) is None
        return
    first = tomlparsed.loads(text, path)
    second = tomlparsed.loads(text, path)
    assert same(first, want) and same(second, want)
    assert (kept(tmp_path) is not None) == ("when" not in text)


def test_a_parse_is_used_only_for_its_exact_text_and_only_under_its_seal(tmp_path: Path) -> None:
    path = home_like(tmp_path)
    assert tomlparsed.loads('a = "one"\n', path) == {"a": "one"}
    row = kept(tmp_path)
    assert row is not None and row["text_sha"] == sha256.hexdigest(b'a = "one"\n') and json.loads(row["doc"]) == {"a": "one"}
    forged = json.dumps({"a": "forged"}, separators=(",", ":"))
    # A parse whose document was changed in place is a miss (its seal no longer holds)...
    plant(tmp_path, {**row, "doc": forged})
    assert tomlparsed.loads('a = "one"\n', path) == {"a": "one"}
    # ...and so is one planted with a seal made without this home's key: another home's, or a checksum...
    other = os.urandom(sealkey.KEY_BYTES)
    for seal in (sealkey.seal(other, tomlparsed.sealed_text("contacts.toml", row["text_sha"], row["parser"], forged)), zlib.crc32(forged.encode())):
        plant(tmp_path, {**row, "doc": forged, "seal": seal})
        assert tomlparsed.loads('a = "one"\n', path) == {"a": "one"}
    # ...while one sealed with the home's own key (whoever can read it) serves its own text only...
    key = (tmp_path / sealkey.KEY_FILE).read_bytes()
    plant(tmp_path, {**row, "doc": forged, "seal": sealkey.seal(key, tomlparsed.sealed_text("contacts.toml", row["text_sha"], row["parser"], forged))})
    assert tomlparsed.loads('a = "one"\n', path) == {"a": "forged"}
    # ...never a text that differs by one character, which is parsed (and kept) afresh.
    assert tomlparsed.loads('a = "one" \n', path) == {"a": "one"}
    assert kept(tmp_path)["text_sha"] == sha256.hexdigest(b'a = "one" \n')  # type: ignore[index]
    # Another parser's parse, a damaged one or another file's is a miss.
    row = kept(tmp_path)
    assert row is not None
    for bad in ({**row, "parser": "tomllib/0.0"}, {**row, "doc": "not json"}, {**row, "seal": b"x" * 16}):
        plant(tmp_path, bad)
        assert tomlparsed.loads('a = "one" \n', path) == {"a": "one"}
    assert tomlparsed.loads('a = "one" \n', tmp_path / "authority.toml") == {"a": "one"}


def test_an_earlier_versions_memo_file_is_never_read_and_goes(tmp_path: Path) -> None:
    path = home_like(tmp_path)
    memo = tmp_path / "cache" / "contacts.toml.parsed.json"
    memo.write_text(json.dumps({"format": "gage-tomlmemo-2", "parser": tomlparsed.PARSER, "text": 'a = "one"\n', "doc": {"a": "forged"}, "seal": 0}))
    assert tomlparsed.loads('a = "one"\n', path) == {"a": "one"}
    assert not memo.exists()


def test_nothing_is_written_where_there_is_no_cache_folder(tmp_path: Path) -> None:
    path = tmp_path / "contacts.toml"
    assert tomlparsed.loads("a = 1\n", path) == {"a": 1}
    assert os.listdir(tmp_path) == []
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "elsewhere")
    assert tomlparsed.loads("a = 1\n", path) == {"a": 1}
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_memo_hit_imports_no_tomllib(tmp_path: Path) -> None:
    path = home_like(tmp_path)
    tomlparsed.loads('a = "one"\n', path)
    probe = (
        "import sys; from pathlib import Path; from gage.home.cache import tomlparsed;"
        f"assert tomlparsed.loads('a = \"one\"\\n', Path({str(path)!r})) == {{'a': 'one'}};"
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
    assert same(tomlparsed.loads(text, path), want)
    assert same(tomlparsed.loads(text, path), want)
