"""The gate is an act, never an accident (issue 18): stray keys, moving rows, honest footers."""

from __future__ import annotations

from tuikit import TestApp, World, name_them, screen_text, spoken, typed_keys

from gage.home import listing
from gage.inbox import gate
from gage.tui.bundle_view import BundleScreen
from gage.tui.ceremony import CeremonyScreen
from gage.tui.dialogs import ConfirmDialog
from gage.tui.gate_dialog import GateDialog
from gage.tui.inbox import InboxScreen

SIZE = (80, 24)


def pending(world: World) -> set[str]:
    return {s.id for s in listing.list_bundles(world.home, ("pending",))}


def footer(app: TestApp) -> str:
    """The footer's line: the last line of the screen."""
    return screen_text(app).splitlines()[-1]


async def go_to(pilot, app: TestApp, bundle_id: str) -> None:
    await pilot.press("home")
    for _ in range(len(app.inbox.rows)):
        if app.inbox.current_id() == bundle_id:
            return
        await pilot.press("down")
    assert app.inbox.current_id() == bundle_id


async def confirm(pilot) -> None:
    """The deliberate act: move the focus off Cancel to the act's button, then Enter."""
    await pilot.press("shift+tab", "enter")
    await pilot.pause()


async def test_a_stray_word_after_a_toast_accepts_nothing(world: World) -> None:
    """The seen case: a pairing finishes (a toast), the person goes on typing `aardvark`."""
    before = pending(world)
    bob_words = spoken(world.stranger.key)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await go_to(pilot, app, world.ids["review"])  # verified: once accepted by `a` alone
        app.start_ceremony(world.stranger.key, "alice", "test")
        await pilot.pause()
        await name_them(pilot, "mallory")
        assert isinstance(app.screen, CeremonyScreen)
        await pilot.press(*typed_keys(bob_words), "enter")
        await pilot.pause()
        assert isinstance(app.screen, InboxScreen) and app._notifications  # back, with a toast
        await pilot.press(*typed_keys("aardvark"), "enter", *typed_keys("aardvark"), "space", "enter")
        await pilot.pause()
        assert pending(world) == before
        assert not [e for e in world.home.journal.entries() if e.get("event") in ("accepted", "rejected")]


async def test_accept_from_the_inbox_asks_naming_the_bundle_with_cancel_focused(world: World) -> None:
    bid = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await go_to(pilot, app, bid)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        assert app.focused is not None and app.focused.id == "no"
        text = screen_text(app)
        assert bid[:12] in text and "VERIFIED" in text and "alice" in text and "Review: raise the timeout" in text
        assert "Cancel" in footer(app)  # the dialog's own keys, not the inbox's
        assert "Accept" not in footer(app) and "Reject" not in footer(app)
        await pilot.press("y", "a", "enter")  # no letter confirms; Enter takes Cancel
        await pilot.pause()
        assert isinstance(app.screen, InboxScreen)
        assert listing.find(world.home, bid).state == "pending"
        await pilot.press("a")
        await pilot.pause()
        await confirm(pilot)
        assert listing.find(world.home, bid).state == "accepted"


async def test_reject_is_one_deliberate_confirmation_too(world: World) -> None:
    bid = world.ids["notes"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await go_to(pilot, app, bid)
        await pilot.press("r", *typed_keys("dvark"), "enter")  # focus is on Cancel: letters go nowhere
        await pilot.pause()
        assert isinstance(app.screen, InboxScreen)
        assert listing.find(world.home, bid).state == "pending"
        await pilot.press("r", "tab", *typed_keys("not needed"), "enter")  # into the reason field, then Enter
        await pilot.pause()
        assert listing.find(world.home, bid).state == "rejected"
    [rejected] = [e for e in world.home.journal.entries() if e.get("event") == "rejected"]
    assert rejected["why"] == "not needed"


async def test_accept_in_an_opened_bundle_needs_one_deliberate_confirmation(world: World) -> None:
    bid = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await go_to(pilot, app, bid)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        await pilot.press("a", "enter")
        await pilot.pause()
        assert listing.find(world.home, bid).state == "pending"
        await pilot.press("a")
        await pilot.pause()
        await confirm(pilot)
        assert listing.find(world.home, bid).state == "accepted"


async def test_the_same_row_opens_the_same_bundle_across_an_accept_and_a_refresh(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        order = list(app.inbox.rows)
        assert len(order) == 4
        target = order[1]
        for round_ in range(4):
            await pilot.press("home", "down")
            await pilot.pause()
            assert app.inbox.current_id() == target, f"round {round_}"
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, BundleScreen) and app.screen.bundle_id == target
            await pilot.press("escape")
            await pilot.pause()
            assert app.inbox.current_id() == target  # back where the person left it
            if round_ == 0:
                gate.accept(world.home, order[3], unverified=True)  # elsewhere (another terminal), below it
                app.refresh_views(bundle_state_only=True)
            elif round_ == 1:
                app.refresh_views(bundle_state_only=False)  # every verdict computed again
            await pilot.pause()
            assert app.inbox.current_id() == target
        assert list(app.inbox.rows) == order[:3]  # the order never changed


async def test_the_selection_stays_on_its_bundle_when_another_leaves(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        order = list(app.inbox.rows)
        await go_to(pilot, app, order[2])
        gate.accept(world.home, order[1], unverified=True)  # above it
        app.refresh_views(bundle_state_only=True)
        await pilot.pause()
        assert app.inbox.current_id() == order[2]
        assert not [n for n in app._notifications if n.title == "Selection moved"]


async def test_a_selected_row_that_leaves_is_announced(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        order = list(app.inbox.rows)
        await go_to(pilot, app, order[1])
        gate.reject(world.home, order[1])  # the highlighted one leaves, elsewhere
        app.refresh_views(bundle_state_only=True)
        await pilot.pause()
        assert app.inbox.current_id() == order[2]
        [moved] = [n for n in app._notifications if n.title == "Selection moved"]
        assert order[1][:12] in moved.message and order[2][:12] in moved.message


async def test_the_footer_offers_exactly_what_applies(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await go_to(pilot, app, world.ids["invalid"])
        text = footer(app)
        assert "Accept" not in text and "Reject" in text and "Pair" not in text
        assert "Export" in text and "Save" not in text
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert not [c for c in commands if c.startswith("Accept (")]
        await go_to(pilot, app, world.ids["hostile"])  # unverified: accept, reject, pair
        text = footer(app)
        assert "Accept" in text and "Reject" in text and "Pair" in text
        await go_to(pilot, app, world.ids["review"])  # a confirmed sender: nobody to pair with
        text = footer(app)
        assert "Accept" in text and "Pair" not in text
        gate.accept(world.home, world.ids["review"])
        await pilot.press("2")
        await pilot.pause()
        text = footer(app)
        assert "Accept" not in text and "Reject" not in text and "Folder" in text
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert not [c for c in commands if c.startswith(("Accept (", "Reject ("))]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        text = footer(app)
        assert "Accept" not in text and "Reject" not in text and "n Next" in text


async def test_a_dialogs_footer_shows_the_dialogs_keys(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await go_to(pilot, app, world.ids["review"])
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, BundleScreen | ConfirmDialog)
        text = footer(app)
        assert "Cancel" in text and "Accept" not in text and "Back" not in text


async def test_the_footer_fits_80_columns_with_every_key_that_applies(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await go_to(pilot, app, world.ids["hostile"])  # the most keys apply: accept, reject, pair, save
        await pilot.press("v", "v")  # and a filter is on: Esc clears it
        await pilot.pause()
        assert app.inbox.current_id() == world.ids["hostile"]
        text = footer(app)
        for label in ("Open", "Accept", "Reject", "Pair", "Export", "Save", "Filter", "Help", "Contacts"):
            assert label in text, text
        assert "Esc clears" in screen_text(app)  # the filter's line says how to clear it
