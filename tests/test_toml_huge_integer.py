"""A TOML file holding an integer of more digits than Python converts (4,300) is bad input: a
clear error naming the file, exit 3, never a traceback. tomllib raises a bare ValueError for it,
not its TOMLDecodeError, and every reader of a TOML file caught only the latter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gage.carriers.relay.relayconf import parse_people
from gage.format.errors import MalformedError
from gage.home import authority, settings
from gage.home.contacts import Contacts
from gage.home.health import check_files
from gage.home.layout import Home

HUGE = "x = " + "1" * 5000 + "\n"


def gage(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gage", "--home", str(home), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("name", "command"), [("contacts.toml", ["contacts"]), ("authority.toml", ["authority", "check"])])
def test_each_home_file_with_a_huge_integer_is_a_clear_error(make_home, name: str, command: list[str]) -> None:  # type: ignore[no-untyped-def]
    home: Home = make_home("me")
    (home.root / name).write_text(HUGE)
    for _ in range(2):  # the second read may come from a kept parse: the same error
        res = gage(home.root, *command)
        assert res.returncode == 3, (res.returncode, res.stderr)
        assert "Traceback" not in res.stderr and name in res.stderr and "4300" in res.stderr


def test_the_readers_raise_malformed(make_home, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home: Home = make_home("me")
    home.contacts_path.write_text(HUGE)
    with pytest.raises(MalformedError):
        Contacts.load(home.contacts_path)
    with pytest.raises(MalformedError):
        authority.parse(HUGE, None)
    (home.root / "settings.toml").write_text(HUGE)
    with pytest.raises(MalformedError):
        settings.load(home)
    with pytest.raises(MalformedError):
        parse_people(HUGE.encode(), "people.toml")
    # The interface's first look at a home names each damaged file instead of failing.
    home.authority_path.write_text(HUGE)
    named = sorted(str(e.path).rsplit("/", 1)[-1] for e in check_files(home) if isinstance(e, MalformedError))
    assert named == ["authority.toml", "contacts.toml", "settings.toml"]
