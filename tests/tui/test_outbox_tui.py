"""The outbox in the interface: the header says how many deliveries wait, a sent bundle's view says
what became of its deliveries (queued, delivered, cancelled), and a relay's words in the last error
reach the screen as literal text only. The sending itself is gage.carriers.outbox's (tests/test_outbox.py)."""

from __future__ import annotations

import os
from pathlib import Path

from tuikit import TestApp, World, screen_text

from gage.carriers import outbox
from gage.home import sendqueue
from gage.inbox import send
from gage.tui.bundle_view import BundleScreen

SIZE = (110, 60)


def _mine(world: World, tmp_path: Path) -> str:
    src = tmp_path / "mine.txt"
    src.write_text("my words\n", encoding="utf-8")
    manifest, _dest = send.create(world.home, [src], kind="share", subject="For bob")
    return manifest.id


def _waiting(world: World, bid: str, error: str) -> sendqueue.Delivery:
    d = sendqueue.new(world.home, bundle=bid, to="bob", key="x", route="mailbox", via=None, state="queued")
    d.tries, d.last_error, d.next_try = 3, error, "2999-01-01T00:00:00.000000Z"  # not due: nothing tries it here
    sendqueue.save(world.home, d)
    return d


async def test_the_header_counts_what_waits_and_a_sent_bundle_shows_its_state(world: World, tmp_path: Path) -> None:
    bid = _mine(world, tmp_path)
    hostile = "relay down \x1b[31m[bold]pwned[/bold] [@click=app.pwned]x[/]"
    d = _waiting(world, bid, hostile)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "1 waiting to be delivered" in app.sub_title
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = screen_text(app)
        assert "Delivery: queued to bob's mailbox (3 tries; last: relay down" in text
        assert "[bold]pwned[/bold]" in text and "\x1b" not in text  # literal, never markup or a control sequence
        await pilot.click("#delivery-line")
        await pilot.press("escape")
        await pilot.pause()
        outbox.cancel(world.home, sendqueue.read(world.home, d.id), "cancelled by the person", by="person")
        app.show_queued()
        assert "waiting" not in app.sub_title
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "Delivery: cancelled to bob's mailbox" in screen_text(app)
    assert not app.pwned


def _toasts(app: TestApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def _fill_and_send(pilot, app: TestApp, **values: str) -> None:
    from textual.widgets import Input

    from gage.tui.sending import SendDialog

    assert isinstance(app.screen, SendDialog)
    for fid, value in values.items():
        app.screen.query_one(f"#send-{fid}", Input).value = value
    app.screen.query(Input).first().focus()
    await pilot.press("enter")
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_from_the_interface_a_reply_a_new_bundle_and_a_delivery_go_to_the_contact(world: World, tmp_path: Path) -> None:
    import json

    from gage.cli.main import main
    from gage.home import listing

    drop = tmp_path / "alice-drop"
    drop.mkdir()
    assert main(["--home", str(world.home.root), "contacts", "where", "alice", "--folder", str(drop)]) == 0
    review = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("R")  # nothing open: says how, sends nothing
        await pilot.pause()
        assert any("R replies to the open bundle" in t for t in _toasts(app))
        app.push_screen(BundleScreen(review))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("R")
        await pilot.pause()
        await _fill_and_send(pilot, app, text="Looks good to me", subject="Re: timeout")
        assert any("delivered to alice's drop folder" in t for t in _toasts(app)), _toasts(app)
        (reply,) = os.listdir(drop)
        manifest = json.loads((drop / reply / "manifest.json").read_bytes())
        assert manifest["parent"] == review and manifest["kind"] == "answer"
        assert [e["ack"] for e in world.home.journal.entries() if e["event"] == "delivered"] == ["folder-rename"]

        await pilot.press("escape")
        await pilot.pause()
        src = tmp_path / "plan.txt"
        src.write_text("the plan\n", encoding="utf-8")
        await pilot.press("B")
        await pilot.pause()
        await _fill_and_send(pilot, app, files=str(src), subject="The plan", to="alice")
        assert len(os.listdir(drop)) == 2 and any("made " in t and "delivered to alice" in t for t in _toasts(app))

        made = _mine(world, tmp_path)  # made elsewhere, not yet sent
        await pilot.press("4")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.inbox.query_one("InboxTable").move_cursor(row=list(app.inbox.shown_ids()).index(made))
        await pilot.pause()
        assert app.inbox.current_id() == made
        await pilot.press("D")
        await pilot.pause()
        await _fill_and_send(pilot, app, to="alice")
        assert made in os.listdir(drop) and listing.find(world.home, made).state == "outbox"
    assert not app.pwned


async def test_the_command_palette_finds_deliver_send_bundle_and_reply(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title.lower() for c in app.get_system_commands(app.screen)]
    for word in ("deliver", "send", "bundle", "reply"):
        assert any(word in t for t in titles), word


async def test_the_header_says_when_the_relay_goes_away_and_when_it_is_back(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "relay" not in app.sub_title
        app.relay_state(False)
        assert "the relay is not reachable" in app.sub_title
        app.relay_state(True)
        assert "relay" not in app.sub_title and app.sub_title.startswith("you")
