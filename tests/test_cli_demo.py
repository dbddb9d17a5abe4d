"""`gage demo` (issue 18): a demo in a temporary folder is removed on quit, one kept says where and
how to remove it, and the words of the demo's other people are shown so pairing can be finished."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gage.cli import demo
from gage.cli.main import main
from gage.format.words import derive, format_pairs


def _as_if_on_a_terminal(monkeypatch: pytest.MonkeyPatch, opened: list[Path], given: dict | None = None) -> None:
    import gage.tui.app as app

    def run(home, demo_people=None) -> int:
        opened.append(home.root)
        if given is not None:
            given.update(demo_people or {})
        return 0

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(app, "run", run)


def test_a_temporary_demo_is_removed_on_quit(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    opened: list[Path] = []
    _as_if_on_a_terminal(monkeypatch, opened)
    assert main(["demo"]) == 0
    assert len(opened) == 1 and not opened[0].parent.exists()
    assert f"removed the demo home ({opened[0].parent})" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_demo_in_a_chosen_folder_is_kept_and_says_how_to_remove_it(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    opened: list[Path] = []
    _as_if_on_a_terminal(monkeypatch, opened)
    assert main(["demo", "--dir", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "you").is_dir()
    assert f"rm -rf {tmp_path / 'd'}" in capsys.readouterr().err


def test_the_demo_gives_the_interface_the_other_sides_words(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The interface shows them in its ceremonies (tests/tui/test_mutual_tui.py): the demo must hand them over."""
    opened: list[Path] = []
    given: dict = {}
    _as_if_on_a_terminal(monkeypatch, opened, given)
    assert main(["demo", "--dir", str(tmp_path / "d")]) == 0
    assert set(given) == {"alice", "stranger", "carol"}
    assert given == demo.other_side(opened[0])


def test_the_demo_shows_the_other_sides_words(capsys, tmp_path: Path) -> None:
    assert main(["demo", "--no-tui", "--dir", str(tmp_path / "d")]) == 0
    root = Path(capsys.readouterr().out.strip().splitlines()[-1])
    people = demo.other_side(root)
    assert set(people) == {"alice", "stranger", "carol"}
    key, words = people["stranger"]
    assert words == derive(key)
    captured = (tmp_path / "d" / "README.txt").read_text()
    assert f"stranger: {format_pairs(words)}" in captured


def test_the_other_sides_words_are_only_for_a_demo_home(make_home, tmp_path: Path) -> None:
    me = make_home("me")
    (me.root.parent / demo.DEMO_FILE).write_text('{"gage-demo": 1, "home": "/elsewhere", "people": {}}')
    assert demo.other_side(me.root) == {}
