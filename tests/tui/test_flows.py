"""Pilot tests: every flow of the interface, driven by keys (and the mouse where it matters)."""

from __future__ import annotations

from tuikit import TestApp, World, name_them, screen_text, spoken, typed_keys

from gage.home import listing
from gage.home.contacts import Contacts
from gage.trust.verdict import compute
from gage.tui.bundle_view import BundleScreen
from gage.tui.ceremony import CeremonyScreen
from gage.tui.contacts import ContactsScreen
from gage.tui.dialogs import ConfirmDialog
from gage.tui.gate_dialog import GateDialog
from gage.tui.help import HelpScreen, help_text

SIZE = (80, 24)


async def open_row(pilot, app: TestApp, bundle_id: str) -> None:
    """Move the inbox cursor to `bundle_id` with the keyboard and press Enter."""
    table = app.inbox.query_one("DataTable")
    await pilot.press("home")
    for _ in range(table.row_count):
        if app.inbox.current_id() == bundle_id:
            break
        await pilot.press("down")
    assert app.inbox.current_id() == bundle_id
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, BundleScreen)


def journal_events(world: World, event: str) -> list[dict]:
    return [e for e in world.home.journal.entries() if e.get("event") == event]


async def test_inbox_lists_pending_first_with_computed_verdicts(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert set(app.inbox.rows) == set(world.ids.values())
        text = screen_text(app)
        assert "1 Pending (4)" in text and "2 Accepted (0)" in text
        # Newest arrival first; the stranger shows as a candidate key, never as "alice".
        assert list(app.inbox.rows)[0] == world.ids["invalid"]
        hostile = app.inbox.rows[world.ids["hostile"]].verdict
        assert hostile.verdict == "unverified" and hostile.sender.name is None
        assert "✘ invalid" in text and "✔ verified" in text
        assert "candidate" in app.inbox.query_one("DataTable").get_cell(world.ids["hostile"], "sender").plain
        await pilot.press("2")
        await pilot.pause()
        assert app.inbox.state == "accepted" and app.inbox.rows == {}
        assert "Nothing accepted yet." in screen_text(app)


async def test_review_and_accept_a_verified_bundle(world: World) -> None:
    bid = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        text = screen_text(app)
        assert "gage frame · written by gage" in text and "VERIFIED" in text
        app.screen.query_one("#bundle-body").scroll_end(animate=False)
        await pilot.pause()
        text = screen_text(app)
        assert "NOT ACCEPTED" in text and "Please review before Friday." in text  # pending payload previewed, marked
        await pilot.press("n")  # one file previewed at a time: the next one
        await pilot.pause()
        app.screen.query_one("#bundle-body").scroll_end(animate=False)
        await pilot.pause()
        text = screen_text(app)
        assert "TIMEOUT = 30" in text and "Please review" not in text
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)  # one deliberate confirmation, even when verified
        await pilot.press("shift+tab", "enter")
        await pilot.pause()
        assert listing.find(world.home, bid).state == "accepted"
        await pilot.pause()
        bar = str(app.screen.query_one("#verdict-bar").content)
        assert "accepted" in bar and "pending" not in bar
        await pilot.press("escape")
        await pilot.pause()
        assert bid not in app.inbox.rows  # gone from pending
        assert "2 Accepted (1)" in screen_text(app)
    assert journal_events(world, "accepted")[-1]["bundle"] == bid


async def test_reject_with_a_reason(world: World) -> None:
    bid = world.ids["notes"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        await pilot.press("tab", *typed_keys("not needed"), "enter")  # Cancel has the focus: Tab to the reason
        await pilot.pause()
        assert listing.find(world.home, bid).state == "rejected"
    rejected = journal_events(world, "rejected")[-1]
    assert rejected["bundle"] == bid and rejected["why"] == "not needed"


async def test_reject_can_be_cancelled(world: World) -> None:
    bid = world.ids["notes"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        await pilot.press("r", "escape")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        assert listing.find(world.home, bid).state == "pending"


async def test_unverified_accept_asks_why_and_cancel_keeps_it_pending(world: World) -> None:
    bid = world.ids["hostile"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        text = screen_text(app)
        assert "The sender is NOT confirmed." in text and "claims the name" in text
        await pilot.press("enter")  # the focused button is Cancel: a stray Enter is safe
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        assert listing.find(world.home, bid).state == "pending"
        await pilot.press("a")
        await pilot.pause()
        await pilot.click("#yes")  # the mouse works too
        await pilot.pause()
        assert listing.find(world.home, bid).state == "accepted"
    v = compute(world.home, listing.find(world.home, bid))
    assert v.accepted_how == "human-unverified"


async def test_invalid_bundle_cannot_be_accepted_and_the_view_says_why(world: World) -> None:
    bid = world.ids["invalid"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        app.screen.query_one("#bundle-body").scroll_end(animate=False)
        await pilot.pause()
        text = screen_text(app)
        assert "WITHHELD" in text and "Pay 9,999" not in text  # no payload preview
        assert "invoice.txt" in text  # listed by name only
        action_line = app.screen.query_one(".action-line")
        assert "cannot be accepted" in str(action_line.content)
        assert "Accept" not in screen_text(app).splitlines()[-1]  # not offered
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, GateDialog)
        assert listing.find(world.home, bid).state == "pending"
    assert journal_events(world, "accepted") == []


async def test_accept_from_the_inbox_row(world: World) -> None:
    bid = world.ids["notes"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        while app.inbox.current_id() != bid:
            await pilot.press("down")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        await pilot.press("shift+tab", "enter")
        await pilot.pause()
        assert listing.find(world.home, bid).state == "accepted"
        assert bid not in app.inbox.rows


async def test_ceremony_success_from_an_unknown_senders_bundle(world: World) -> None:
    bid = world.ids["hostile"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        await pilot.press("p")
        await pilot.pause()
        await name_them(pilot, "mallory")  # my name for them comes first, checked before any word
        assert isinstance(app.screen, CeremonyScreen)
        assert "Known here as mallory" in " ".join(screen_text(app).split())
        words = spoken(world.stranger.key).split()
        await pilot.press(*typed_keys(" ".join(words[:2]) + " "))
        await pilot.pause()
        assert "pair 1 ✔ matches" in screen_text(app)
        await pilot.press(*typed_keys(" ".join(words[2:])), "enter")
        await pilot.pause()
        assert not isinstance(app.screen, CeremonyScreen)
    contacts = Contacts.load(world.home.contacts_path)
    assert contacts.by_key(world.stranger.key).name == "mallory"
    assert compute(world.home, listing.find(world.home, bid)).verdict == "verified"
    assert app.inbox.rows[bid].verdict.verdict == "verified"


async def test_ceremony_mismatch_is_explained_and_confirms_nothing(world: World) -> None:
    bid = world.ids["hostile"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        await pilot.press("p")
        await pilot.pause()
        await name_them(pilot, "mallory")
        words = spoken(world.stranger.key).split()
        words[4], words[5] = words[5], words[4]  # pair 3 swapped
        await pilot.press(*typed_keys(" ".join(words)), "enter")
        await pilot.pause()
        assert isinstance(app.screen, CeremonyScreen)
        text = screen_text(app)
        assert "pair 3 ✘ differs" in text and "pair 1 ✔ matches" in text
        assert "nothing was confirmed" in text
    assert Contacts.load(world.home.contacts_path).by_key(world.stranger.key) is None
    assert journal_events(world, "paired")[-1]["name"] == "alice"  # only the fixture's pairing


async def test_ceremony_from_a_key_file(world: World, tmp_path) -> None:
    from tuikit import identity, write_key_file

    bob = identity("bob", 7)
    path = write_key_file(tmp_path / "bob.key", bob)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        await pilot.press("f")
        await pilot.pause()
        app.screen.query_one("#keyfile").value = str(path)
        await pilot.press("enter")
        await pilot.pause()
        assert "bob.key" in screen_text(app) and "claims the name" in screen_text(app)  # the pairing dialog
        await name_them(pilot, "bob")
        assert isinstance(app.screen, CeremonyScreen)
        assert "bob.key" in screen_text(app) and "claims the name" in screen_text(app)
        # Typing is covered above; here the words are pasted, as a person might from a chat.
        app.screen.query_one("#heard").value = spoken(bob.key)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        assert "bob" in app.screen.contacts.confirmed
    assert Contacts.load(world.home.contacts_path).by_key(bob.key).name == "bob"


async def test_contacts_list_and_remove_with_confirmation(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        text = screen_text(app)
        assert "confirmed" in text and "alice" in text and "candidate" in text
        assert "2026-03-14T09:30:00Z" in text  # when it was confirmed
        await pilot.press("home", "d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("escape")
        await pilot.pause()
        assert "alice" in Contacts.load(world.home.contacts_path).confirmed
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        assert "alice" not in Contacts.load(world.home.contacts_path).confirmed
        await pilot.press("escape")
        await pilot.pause()
        # Every verdict was recomputed: alice's bundles are no longer verified.
        assert app.inbox.rows[world.ids["review"]].verdict.verdict == "unverified"
    assert journal_events(world, "unpaired")[-1]["name"] == "alice"


async def test_contacts_forget_a_candidate_with_confirmation(world: World) -> None:
    stranger = f"candidate:{world.stranger.key.hex()}"
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        assert app.inbox.rows[world.ids["hostile"]].verdict.sender.status == "candidate"
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Remove (d)" in titles
        await pilot.press("down")  # confirmed contacts first, then candidates
        await pilot.pause()
        assert app.screen.current_key() == stranger
        assert "d forgets it" in screen_text(app)
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        text = screen_text(app)
        assert "Forget candidate?" in text and "claims the name" in text
        await pilot.press("enter")  # the focused button is Keep
        await pilot.pause()
        assert world.stranger.key in Contacts.load(world.home.contacts_path).candidates
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        contacts = Contacts.load(world.home.contacts_path)
        assert world.stranger.key not in contacts.candidates
        assert contacts.by_name("alice").key == world.alice.key  # the confirmed contact is untouched
        table = app.screen.query_one("DataTable")
        assert stranger not in [k.value for k in table.rows] and table.row_count == 1
        await pilot.press("escape")
        await pilot.pause()
        hostile = app.inbox.rows[world.ids["hostile"]].verdict
        assert hostile.sender.status == "unknown" and hostile.verdict == "unverified"  # a claim gone: no trust changed
    assert journal_events(world, "unpaired") == []


async def test_keys_are_in_help_footer_and_palette(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        table = app.inbox.query_one("DataTable")
        table.move_cursor(row=table.get_row_index(world.ids["hostile"]))  # unverified: all of them apply
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        for label in ("Accept", "Reject", "Pair", "Help", "Contacts"):
            assert label in footer
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Open (enter)", "Accept (a)", "Reject (r)", "Pair (p)", "Quit (q)", "Contacts (c)", "Help (?)"):
            assert title in titles
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "Enter" in text and "Accept the highlighted bundle" in text
        assert "forget the highlighted" in help_text()
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_palette_command_runs_the_action(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        contacts = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Contacts"))
        await contacts.callback()
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)


async def test_mouse_switches_tabs_and_opens_rows(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#accepted")
        await pilot.pause()
        assert app.inbox.state == "accepted"
        await pilot.click("#pending")
        await pilot.pause()
        assert app.inbox.state == "pending"
        await pilot.click("#inbox-table", offset=(5, 2))  # the first row
        await pilot.click("#inbox-table", offset=(5, 2))
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)


async def test_redraws_of_an_opened_bundle_never_interleave(world: World) -> None:
    """A reload after an accept, a resize and a check finishing can each redraw the bundle view;
    two at once used to remove the widgets the other was mounting, leaving one attached but
    never started (found by the pilot's screen wait under CI load)."""
    import asyncio

    bid = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await open_row(pilot, app, bid)
        screen = app.screen
        assert isinstance(screen, BundleScreen)
        last = screen._last
        await asyncio.gather(screen._show(last), screen._show(last), screen._show(last))
        await pilot.pause()
        assert len(screen.query(".files-head")) == 1 and len(screen.query("#files")) == 1
        assert len(screen.query(".action-line")) == 1
        stuck = [w for w in screen.walk_children() if not w.is_running]
        assert stuck == []
