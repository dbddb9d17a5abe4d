"""The smaller interface items of issue 18, each as it was seen."""

from __future__ import annotations

from pathlib import Path

from tuikit import TestApp, World, make_home, name_them, screen_text, spoken

from gage.format.keys import key_text, short_fingerprint
from gage.format.words import derive, pair_text
from gage.home.identity import load_key_file
from gage.trust import ceremony
from gage.tui import files
from gage.tui.bundle_view import BundleScreen
from gage.tui.ceremony import pair_marks
from gage.tui.dialogs import KeyFileDialog
from gage.tui.inbox_cells import cells
from gage.tui.me import MeDialog

SIZE = (80, 24)


async def test_help_wraps_under_its_own_column_at_80(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        [first] = [i for i, line in enumerate(lines) if "My own four word-pairs" in line]
        start = lines[first].index("My own")
        following = lines[first + 1]
        assert following[:start].strip("│ ") == "" and following[start] != " "  # hangs under the text


async def test_the_key_file_dialog_is_centred(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, KeyFileDialog)
        box = app.screen.query_one("#dialog-box").region
        assert abs(box.x + box.width / 2 - SIZE[0] / 2) <= 2 and box.y > 0


async def test_a_missing_key_file_is_not_called_not_a_key_file(world: World, tmp_path: Path) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        app.screen.query_one("#keyfile").value = str(tmp_path / "nowhere.key")
        await pilot.press("enter")
        await pilot.pause()
        assert [n.title for n in app._notifications] == ["No such file"]
        (tmp_path / "junk.key").write_text("not a key\n")
        await pilot.press("f")
        await pilot.pause()
        app.screen.query_one("#keyfile").value = str(tmp_path / "junk.key")
        await pilot.press("enter")
        await pilot.pause()
        assert [n.title for n in app._notifications][-1] == "Not a key file"


async def test_messages_on_a_bundle_do_not_cover_its_payload(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.open_bundle(world.ids["review"])
        await pilot.pause()
        before = screen_text(app)
        assert "Please review before Friday." in before
        app.notify("Saved 2 file(s) somewhere", title="Saved", markup=False)
        await pilot.pause()
        text = screen_text(app)
        assert "Saved: Saved 2 file(s) somewhere" in text  # on the status line
        assert text.count("Saved 2 file(s) somewhere") == 1  # not also as a toast over the payload
        assert "Please review before Friday." in text
        assert isinstance(app.screen, BundleScreen)


async def test_the_empty_inbox_says_how_bundles_get_in(tmp_path: Path) -> None:
    home = make_home(tmp_path / "empty", "you", 1)
    app = TestApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "gage import PATH" in text and "gage watch FOLDER" in text and "gage a2a serve" in text


async def test_me_shows_my_words_and_exports_my_key(world: World, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "_cwd", lambda: tmp_path)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MeDialog)
        text = screen_text(app)
        for a, b in ceremony.my_words(world.home):
            assert pair_text(a, b) in text
        # the key by its fingerprint, never 3,984 characters of key text (issue 27); the file has it whole
        assert short_fingerprint(world.home.identity.key) in text and key_text(world.home.identity.key)[:80] not in text
        await pilot.press("enter")
        await pilot.pause()
        written = tmp_path / "you.key"
        assert load_key_file(written).key == world.home.identity.key
        assert b"secret" not in written.read_bytes().lower()
        await pilot.press("m")
        await pilot.pause()
        await pilot.press("enter")  # the same name again: refused, nothing replaced
        await pilot.pause()
        assert isinstance(app.screen, MeDialog) and "already exists" in screen_text(app)


def test_pair_4_is_judged_once_all_eight_words_are_typed(world: World) -> None:
    key = world.stranger.key
    words = spoken(key).split()
    expected = derive(key)
    from gage.format.words.wordlist import ODD

    wrong_last = next(w for w in ODD if w != words[7])
    assert pair_marks(expected, " ".join(words))[3] == "match"
    assert pair_marks(expected, " ".join([*words[:7], wrong_last]))[3] == "mismatch"
    assert pair_marks(expected, " ".join([*words[:7], words[7][:3]]))[3] == "open"  # still being typed


async def test_an_invalid_rows_sender_is_not_in_the_confirmed_green(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        invalid = cells(app.inbox.rows[world.ids["invalid"]])["sender"]
        verified = cells(app.inbox.rows[world.ids["review"]])["sender"]
        assert "alice" in invalid.plain and "green" in str(verified.style)
        assert "green" not in str(invalid.style)


async def test_contacts_and_the_ceremony_show_a_keys_fingerprint_whole(world: World) -> None:
    """The key column fits a 96-bit fingerprint (gage's short_fingerprint once issue 18's command-line
    part lands), and the ceremony names the key on one line, so the screen does not scroll at 80x24."""
    from gage.format.keys import short_fingerprint

    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert app.screen.query_one("#contacts-table").columns["key"].width >= 29  # 6 groups of 4 hex digits
        text = screen_text(app)
        assert short_fingerprint(world.alice.key) in text and short_fingerprint(world.home.identity.key) in text
        await pilot.press("escape")
        app.start_ceremony(world.stranger.key, "alice", "test")
        await pilot.pause()
        await name_them(pilot, "mallory")
        assert short_fingerprint(world.stranger.key) in screen_text(app).splitlines()[1]


async def test_the_filter_bar_wraps_rather_than_cutting_its_keys_at_80(world: World) -> None:
    """The longest filter bar (strangers, words typed, marks) keeps "Esc clears" and "v" in view."""
    app = TestApp(world.home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("space", "v", "v", "v", "v", "slash", "a", "enter")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "only from strangers" in text and "words typed" in text
        assert "Esc clears · v: verdict filter" in text
