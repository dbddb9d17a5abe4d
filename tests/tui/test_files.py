"""Issue 11: `o` shows where an accepted bundle's files are, `s` saves a checked copy, with the
refusals of `gage extract` (a pending bundle only after confirming, never overwriting without asking)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tuikit import TestApp, World, screen_text

from gage.bundle import PAYLOAD
from gage.format.errors import GageError
from gage.home import listing
from gage.inbox import gate
from gage.inbox.extract import extract
from gage.tui.bindings import GROUPS
from gage.tui.dialogs import ConfirmDialog
from gage.tui.files import FolderDialog, SaveDialog
from gage.tui.help import HelpScreen

SIZE = (100, 30)


def _select(app: TestApp, bid: str) -> None:
    table = app.inbox.query_one("#inbox-table")
    table.move_cursor(row=table.get_row_index(bid))


async def _save_to(pilot, app: TestApp, dest: Path) -> None:
    await pilot.press("s")
    await pilot.pause()
    assert isinstance(app.screen, SaveDialog)
    app.screen.query_one("#save-path").value = str(dest)
    await pilot.press("enter")
    await pilot.pause()


def test_o_and_s_are_in_the_one_key_table() -> None:
    for group in ("inbox", "bundle"):
        actions = {k.key: k.action for k in GROUPS[group]}
        assert actions["o"] == "folder" and actions["s"] == "save"


async def test_o_shows_the_folder_of_an_accepted_bundle_only(world: World) -> None:
    bid = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        _select(app, bid)
        await pilot.press("o")
        await pilot.pause()
        assert not isinstance(app.screen, FolderDialog)  # pending: not for use yet
        assert "Folder" not in screen_text(app).splitlines()[-1]  # nor offered in the footer
        gate.accept(world.home, bid)
        await pilot.press("2")
        await pilot.pause()
        _select(app, bid)
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, FolderDialog)
        shown = app.screen.query_one("#folder-path").value
        assert shown == str(listing.find(world.home, bid).path / PAYLOAD)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.inbox
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_s_saves_checked_files_and_asks_before_overwriting(world: World, tmp_path: Path) -> None:
    bid = world.ids["review"]
    gate.accept(world.home, bid)
    dest = tmp_path / "out"
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("2")
        await pilot.pause()
        _select(app, bid)
        await _save_to(pilot, app, dest)
        diff = dest / "patch" / "fix-timeout.diff"
        assert diff.read_bytes().startswith(b"--- a/net.py")
        diff.write_bytes(b"my own edits\n")
        await _save_to(pilot, app, dest)
        assert isinstance(app.screen, ConfirmDialog)  # it exists: asked, not overwritten
        assert diff.read_bytes() == b"my own edits\n"
        await pilot.press("escape")
        await pilot.pause()
        assert diff.read_bytes() == b"my own edits\n"
        await _save_to(pilot, app, dest)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert diff.read_bytes().startswith(b"--- a/net.py")


async def test_s_on_a_pending_bundle_needs_a_confirmation(world: World, tmp_path: Path) -> None:
    bid = world.ids["notes"]
    dest = tmp_path / "pending-copy"
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        _select(app, bid)
        await _save_to(pilot, app, dest)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("escape")
        await pilot.pause()
        assert not (dest / "notes.md").exists()
        await _save_to(pilot, app, dest)
        await pilot.press("y")
        await pilot.pause()
        assert (dest / "notes.md").read_bytes() == b"Minutes of Monday's call.\n"
        assert listing.find(world.home, bid).state == "pending"  # saving is not accepting


async def test_s_refuses_a_tampered_bundle_and_writes_nothing(world: World, tmp_path: Path) -> None:
    bid = world.ids["invalid"]
    dest = tmp_path / "bad"
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        _select(app, bid)
        await pilot.pause()
        assert "Save" not in screen_text(app).splitlines()[-1]  # not offered for an invalid bundle
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, SaveDialog)
        assert not dest.exists()
    # Were it asked for anyway, the extract itself refuses the tampered bundle and writes nothing.
    with pytest.raises(GageError):
        extract(world.home, listing.find(world.home, bid), dest, allow_pending=True)
    assert not (dest / "invoice.txt").exists()
