"""Issue 19 item 16: `gage authority check --json` always prints its object, and every authority error names a line."""

from __future__ import annotations

import json

import pytest

from gage.home import authority


def test_check_json_prints_the_object_when_the_file_is_not_toml(make_home, gage) -> None:
    home = make_home("alice")
    home.authority_path.write_text("[[grant]\ncontact = \n")
    r = gage(home, "authority", "check", "--json")
    assert r.code == 3
    doc = json.loads(r.out)
    assert doc["ok"] is False and doc["exists"] is True and doc["grants"] == []
    [error] = doc["errors"]
    assert "not valid TOML" in error and "line 1" in error


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('# a comment\nnote = "x"\n', 2, "unknown table or key 'note'"),
        ("# one\n# two\n[grant]\ncontact = \"bob\"\n", 3, "[[grant]] tables"),
        ('[[grant]]\ncontact = "a"\nkind = "share"\nmay = "x"\n\n[extra]\nk = 1\n', 6, "'extra'"),
    ],
)
def test_every_authority_error_names_its_line(text: str, line: int, words: str) -> None:
    af = authority.parse(text, None)
    [error] = [e for e in af.errors if words in e]
    assert error.startswith(f"authority.toml:{line}: "), error
