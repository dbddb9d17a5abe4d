"""The interface's pairing from a key file keeps the mailbox the file offers only once the
ceremony confirmed that key (issue 26, item 5): a ceremony left unfinished writes nothing to
where.json, and a file whose binding names another key offers no route at all."""

from __future__ import annotations

from pathlib import Path

from tuikit import TestApp, World, make_home, name_them, screen_text, spoken

from gage.format.keys.file import KeyFile
from gage.home import sealing, whereabouts
from gage.home.layout import Home
from gage.tui.ceremony import CeremonyScreen
from gage.tui.contacts import ContactsScreen

SIZE = (100, 30)


def _key_file(tmp: Path, owner: Home, binding_of: Home) -> Path:
    with binding_of.lock():
        b = sealing.ensure(binding_of.root, binding_of.identity.secret).binding
    p = tmp / f"{owner.identity.name}.key"
    p.write_bytes(KeyFile(key=owner.identity.key, name=owner.identity.name, sealing=b.to_carried()).to_bytes())
    return p


async def _pair(app: TestApp, pilot, path: Path, name: str, words: str | None) -> None:
    await pilot.pause()
    await pilot.press("c")
    await pilot.pause()
    await pilot.press("f")
    await pilot.pause()
    app.screen.query_one("#keyfile").value = str(path)
    await pilot.press("enter")
    await pilot.pause()
    await name_them(pilot, name)
    assert isinstance(app.screen, CeremonyScreen)
    if words is None:
        await pilot.press("escape")
    else:
        app.screen.query_one("#heard").value = words
        await pilot.press("enter")
    await pilot.pause()
    await pilot.pause()


async def test_a_key_files_mailbox_is_kept_only_after_the_ceremony(world: World, tmp_path: Path) -> None:
    bob = make_home(tmp_path / "bob", "bob", 21)
    path = _key_file(tmp_path, bob, bob)
    where = world.home.root / whereabouts.FILE
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await _pair(app, pilot, path, "bob", None)  # left without a word
    assert not where.exists()
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await _pair(app, pilot, path, "bob", spoken(bob.identity.key))
        assert isinstance(app.screen, ContactsScreen), screen_text(app)
    w = whereabouts.of(world.home, bob.identity.key)
    assert w is not None and w.mailbox_ok() and w.source == "key file bob.key"


async def test_a_key_file_carrying_anothers_binding_offers_no_route(world: World, tmp_path: Path) -> None:
    bob, mallory = make_home(tmp_path / "bob", "bob", 22), make_home(tmp_path / "mallory", "mallory", 23)
    path = _key_file(tmp_path, mallory, bob)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await _pair(app, pilot, path, "mallory", spoken(mallory.identity.key))
        assert isinstance(app.screen, ContactsScreen), screen_text(app)
    assert not (world.home.root / whereabouts.FILE).exists()
