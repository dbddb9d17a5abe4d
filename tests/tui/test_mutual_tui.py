"""Issue 18, the ceremony in the interface: a name clash is found before any word, and the
mutual ceremony (both ways, pair by pair, on one call) as spec/ceremony.md describes it."""

from __future__ import annotations

import pytest
from tuikit import TestApp, World, name_them, screen_text, typed_keys

from gage.format.words import derive, hearing
from gage.home.contacts import Contacts
from gage.trust import ceremony
from gage.tui.ceremony import CeremonyScreen
from gage.tui.contacts import ContactsScreen
from gage.tui.help import help_text
from gage.tui.mutual import MutualScreen
from gage.tui.pair_name import PairNameDialog, name_problem

SIZE = (80, 24)


def flat(app) -> str:
    """The screen's text with line breaks and runs of spaces as one space (wrapped sentences whole)."""
    return " ".join(screen_text(app).split())


def journal_paired(world: World) -> list[dict]:
    return [e for e in world.home.journal.entries() if e.get("event") == "paired"]


def no_words_shown(app, world: World) -> None:
    text = screen_text(app)
    for a, b in ceremony.my_words(world.home):
        assert f"{a}-{b}" not in text and f"{a} {b}" not in text and f"{a}  {b}" not in text
    assert not any(isinstance(s, CeremonyScreen | MutualScreen) for s in app.screen_stack)
    assert not app.screen.query("#heard")


@pytest.mark.parametrize("mutual", [False, True], ids=["one-way", "mutual"])
async def test_a_clashing_name_never_reaches_the_words(world: World, mutual: bool) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        app.start_ceremony(world.stranger.key, "alice", "bundle 0123", mutual=mutual)
        await pilot.pause()
        assert isinstance(app.screen, PairNameDialog)
        no_words_shown(app, world)
        await name_them(pilot, "alice")  # alice is confirmed here, with another key
        assert isinstance(app.screen, PairNameDialog), "a clashing name reached the ceremony"
        said = str(app.screen.query_one("#pair-problem").content)
        assert 'A different key is already confirmed as "alice"' in said
        assert "Choose another name" in said and "remove the old contact first (d on its row in Contacts)" in said
        no_words_shown(app, world)
        app.screen.query_one("#pair-name-input").value = ""
        await name_them(pilot, "mallory")
        assert isinstance(app.screen, MutualScreen if mutual else CeremonyScreen)
        a, b = ceremony.my_words(world.home)[0]
        assert f"{a}" in screen_text(app) and f"{b}" in screen_text(app)
    assert Contacts.load(world.home.contacts_path).by_key(world.stranger.key) is None  # nothing confirmed by naming


def test_the_name_check_is_the_command_lines_rule(world: World) -> None:
    assert name_problem(world.home, "mallory", world.stranger.key) is None
    assert "already confirmed" in (name_problem(world.home, "alice", world.stranger.key) or "")
    assert "already confirmed" in (name_problem(world.home, "al", world.alice.key) or "")  # this key has a name
    assert name_problem(world.home, "bad\x1bname", world.stranger.key) is not None
    assert name_problem(world.home, "", world.stranger.key) is not None


async def test_contacts_offers_both_ways_in_footer_help_and_palette(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        assert "P Both ways" in screen_text(app).splitlines()[-1]
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Both ways (P)" in titles and "Pair both ways from a key file" in titles
        assert "Contacts: P Pair both ways at once" in help_text()


async def _mutual_from_contacts(pilot, app: TestApp, world: World) -> None:
    """P on the stranger's candidate row, then my name for them: the mutual screen."""
    await pilot.press("c")
    await pilot.pause()
    table = app.screen.query_one("DataTable")
    table.move_cursor(row=table.get_row_index(f"candidate:{world.stranger.key.hex()}"))
    await pilot.press("P")
    await pilot.pause()
    assert isinstance(app.screen, PairNameDialog) and app.screen.chosen_mutual()
    await name_them(pilot, "mallory")
    assert isinstance(app.screen, MutualScreen)


async def test_mutual_reads_pair_by_pair_reasks_and_confirms_with_the_closing_pair(world: World) -> None:
    mine = ceremony.my_words(world.home)
    theirs = derive(world.stranger.key)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await _mutual_from_contacts(pilot, app, world)
        # Only my pair 1 is asked for: read it, then type theirs.
        assert f"Read YOUR pair 1: {mine[0][0]}-{mine[0][1]}" in flat(app)  # one way to write a pair (spec/words.md)
        assert "Read YOUR pair 2" not in flat(app)
        # A pair of list words that is not this pair's: asked again, never accepted.
        await pilot.press(*typed_keys(f"{theirs[1][0]} {theirs[1][1]}"), "enter")
        await pilot.pause()
        assert app.screen.index == 0 and "asked again" in flat(app) and "not this pair's words" in flat(app)
        # A near miss: the nearest list word is suggested, and still nothing is accepted.
        await pilot.press(*typed_keys(f"{theirs[0][0][:-1]} {theirs[0][1]}"), "enter")
        await pilot.pause()
        assert app.screen.index == 0 and f"did you mean {theirs[0][0]}" in flat(app)
        for i, (a, b) in enumerate(theirs):
            assert f"Read YOUR pair {i + 1}: {mine[i][0]}-{mine[i][1]}" in flat(app)
            await pilot.press(*typed_keys(f"{a} {b}"), "enter")
            await pilot.pause()
        assert app.screen.confirmed
        c1, c2 = hearing.closing_pair(world.home.identity.key, world.stranger.key)
        assert (c1, c2) == hearing.closing_pair(world.stranger.key, world.home.identity.key)  # the same on their screen
        assert f"{c1}-{c2}" in screen_text(app) and "closing pair" in flat(app)
        assert "Esc Done" in screen_text(app).splitlines()[-1]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, MutualScreen)
    contact = Contacts.load(world.home.contacts_path).by_key(world.stranger.key)
    assert contact is not None and contact.name == "mallory" and contact.method == ceremony.MUTUAL_METHOD
    last = journal_paired(world)[-1]
    assert last["name"] == "mallory" and last["method"] == "word-pairs, mutual"


@pytest.mark.parametrize("how", ["give up", "escape"])
async def test_giving_up_the_mutual_ceremony_confirms_nothing(world: World, how: str) -> None:
    theirs = derive(world.stranger.key)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _mutual_from_contacts(pilot, app, world)
        await pilot.press(*typed_keys(f"{theirs[0][0]} {theirs[0][1]}"), "enter")  # pair 1 right
        await pilot.pause()
        await pilot.press(*typed_keys(f"{theirs[0][0]} {theirs[0][1]}"), "enter")  # pair 2 wrong
        await pilot.pause()
        if how == "escape":
            await pilot.press("escape")
        else:
            await pilot.press(*typed_keys(how), "enter")
        await pilot.pause()
        assert not isinstance(app.screen, MutualScreen)
        said = " ".join(str(n.message) for n in app._notifications)
        assert "NOT confirmed" in said and "pair 2 did not match" in said and "pair 3 was not heard" in said
    assert Contacts.load(world.home.contacts_path).by_key(world.stranger.key) is None
    assert [e["name"] for e in journal_paired(world)] == ["alice"]  # only the fixture's pairing


async def test_both_ways_can_be_chosen_in_the_pairing_dialog(world: World) -> None:
    """p (one way by default) on a bundle's sender: the dialog's choice switches to the mutual ceremony."""
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        table = app.inbox.query_one("DataTable")
        table.move_cursor(row=table.get_row_index(world.ids["hostile"]))
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PairNameDialog) and not app.screen.chosen_mutual()
        await pilot.press(*typed_keys("mallory"), "tab", "down", "enter")  # the radio set: Both ways
        await pilot.pause()
        assert app.screen.chosen_mutual()
        await pilot.press("tab", "enter")  # Next
        await pilot.pause()
        assert isinstance(app.screen, MutualScreen) and app.screen.local_name == "mallory"


@pytest.mark.parametrize("mutual", [False, True], ids=["one-way", "mutual"])
async def test_the_demo_shows_the_other_sides_words(world: World, mutual: bool) -> None:
    theirs = derive(world.stranger.key)
    people = {"stranger": (world.stranger.key, theirs)}
    for demo, shown in ((people, True), (None, False)):
        app = TestApp(world.home)
        app.demo_people = demo or {}
        async with app.run_test(size=(160, 45)) as pilot:
            app.start_ceremony(world.stranger.key, "alice", "bundle 0123", mutual=mutual)
            await pilot.pause()
            await name_them(pilot, "mallory")
            text = flat(app)
            assert ("they would read you: " + " ".join(f"{a}-{b}" for a, b in theirs) in text) is shown
            assert ("Demo:" in text) is shown
