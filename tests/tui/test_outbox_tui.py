"""The outbox in the interface: the header says how many deliveries wait, a sent bundle's view says
what became of its deliveries (queued, delivered, cancelled), and a relay's words in the last error
reach the screen as literal text only. The sending itself is gage.carriers.outbox's (tests/test_outbox.py)."""

from __future__ import annotations

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
