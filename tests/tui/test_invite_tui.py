"""`gage invite` started from the interface, `gage join` from a second home at a terminal, on a real
nats-server: the code shown large, the mutual ceremony in the dialog `pair --mutual` uses, the
closing pair typed before anything is confirmed, both keys confirmed and the routes kept; and Esc
withdrawing the code so that a join is told at once (spec/ceremony.md, spec/relay.md section 10)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from invitetest import Term, closing, pairs  # noqa: E402
from relaytest import relay  # noqa: E402, F401 - fixtures
from textual.widgets import Digits, Input, Static  # noqa: E402
from tuikit import TestApp, screen_text  # noqa: E402

from gage.home import whereabouts  # noqa: E402
from gage.home.contacts import Contacts  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.tui.invite import InviteScreen  # noqa: E402
from gage.tui.invite_mutual import InviteMutualScreen  # noqa: E402
from gage.tui.pair_name import PairNameDialog  # noqa: E402

SIZE = (100, 34)
HOSTILE = "bob[@click=app.pwned]x[/]"


async def wait_for(check: Callable[[], bool], limit: float = 60.0) -> bool:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if check():
            return True
        await asyncio.sleep(0.05)
    return False


def confirmed(home: Home) -> dict[str, bytes]:
    return {c.name: c.key for c in Contacts.load(home.contacts_path).confirmed.values()}


async def _invite(app: TestApp, pilot, url: str) -> str:
    """I, the relay typed, Enter: the code as the screen shows it."""
    await pilot.press("I")
    await pilot.pause()
    app.screen.query_one("#send-relay", Input).value = url
    await pilot.press("enter")
    assert await wait_for(lambda: isinstance(app.screen, InviteScreen) and app.screen.query_one("#invite-number", Digits).display, 30), (
        [str(n.message) for n in app._notifications], screen_text(app))
    shown = str(app.screen.query_one("#invite-code", Static).content).strip()
    number = app.screen.query_one("#invite-number", Digits).value
    assert shown.startswith(number + "-"), (shown, number)  # the number in big digits, the whole code beneath
    assert f"gage join {shown}" in " ".join(screen_text(app).split())
    return shown


async def _type(app: TestApp, pilot, line: str) -> None:
    app.screen.query_one("#heard", Input).value = line
    await pilot.press("enter")
    await pilot.pause()


async def test_an_invite_from_the_interface_and_a_join_at_a_terminal_confirm_both_keys(relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = Home.init(tmp_path / "alice", "alice"), Home.init(tmp_path / "bob", HOSTILE)
    app = TestApp(alice)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        assert "mailbox" not in app.sub_title  # none yet: the invite makes it
        code = await _invite(app, pilot, relay.url)
        # The header names this home's mailbox where it shows the outbox and the relay's state.
        assert await wait_for(lambda: "mailbox mb" in app.sub_title and relay.url in app.sub_title), app.sub_title
        jn = await asyncio.to_thread(Term, bob, "join", code, "--relay", relay.url, "--name", "alice")
        try:
            assert await wait_for(lambda: isinstance(app.screen, PairNameDialog)), screen_text(app)
            # Their claimed name is shown literally: markup in it is text, and clicking it runs nothing.
            await pilot.pause()
            assert await wait_for(lambda: HOSTILE in screen_text(app), 10), screen_text(app)
            app.screen.query_one("#pair-name-input", Input).value = "bob"
            await pilot.press("enter")
            assert await wait_for(lambda: isinstance(app.screen, InviteMutualScreen)), screen_text(app)
            assert not app.screen.query("#pair-mode")  # both ways only: the invite's call is the ceremony's
            theirs, mine = pairs(bob), pairs(alice)
            for i in range(4):
                await asyncio.to_thread(jn.expect, f"their pair {i + 1}: ".encode())
                await asyncio.to_thread(jn.send, mine[i])
                await _type(app, pilot, theirs[i])
            assert "closing pair" in " ".join(screen_text(app).split())
            assert confirmed(alice) == {}, "confirmed before the closing pair was read"
            await _type(app, pilot, closing(alice, bob))
            await asyncio.to_thread(jn.expect, b"their closing pair: ")
            await asyncio.to_thread(jn.send, closing(alice, bob))
            assert await wait_for(lambda: app.screen.confirmed), screen_text(app)
            assert await asyncio.to_thread(jn.finish) == 0, jn.text()
        finally:
            jn.close()
        assert "is now a contact, on both sides" in " ".join(screen_text(app).split())
        assert not app.pwned
    assert confirmed(alice) == {"bob": bob.identity.key}
    assert confirmed(bob) == {"alice": alice.identity.key}
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.mailbox_ok() and w.relay == relay.url


async def test_escape_withdraws_the_code_and_a_join_is_told_at_once(relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = Home.init(tmp_path / "alice", "alice"), Home.init(tmp_path / "bob", "bob")
    app = TestApp(alice)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        code = await _invite(app, pilot, relay.url)
        await pilot.press("escape")
        assert await wait_for(lambda: not isinstance(app.screen, InviteScreen)), "Esc did not end the invite"
        assert await wait_for(lambda: any("withdrawn" in str(n.message) for n in app._notifications))
        started = time.monotonic()
        jn = await asyncio.to_thread(Term, bob, "join", code, "--relay", relay.url, "--name", "alice")
        assert await asyncio.to_thread(jn.finish) == 9, jn.text()
        assert time.monotonic() - started < 20  # told, not left to wait out the answer's 30 s
        assert "closed" in jn.text() and "their pair" not in jn.text()
    assert confirmed(alice) == {} and confirmed(bob) == {}
    assert whereabouts.of(alice, bob.identity.key) is None


async def test_a_join_from_the_interface_is_told_at_once_of_a_wrong_code(relay, tmp_path: Path) -> None:  # noqa: F811
    alice = Home.init(tmp_path / "alice", "alice")
    app = TestApp(alice)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("J")
        await pilot.pause()
        app.screen.query_one("#send-code", Input).value = "4321-aardvark-adroitness"
        app.screen.query_one("#send-relay", Input).value = relay.url
        await pilot.press("enter")
        assert await wait_for(lambda: any("no invite with this code" in str(n.message) for n in app._notifications))
        assert await wait_for(lambda: not isinstance(app.screen, InviteScreen))
    assert confirmed(alice) == {}


async def test_the_other_side_giving_up_is_shown_at_once_and_nothing_is_kept(relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = Home.init(tmp_path / "alice", "alice"), Home.init(tmp_path / "bob", "bob")
    app = TestApp(alice)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        code = await _invite(app, pilot, relay.url)
        jn = await asyncio.to_thread(Term, bob, "join", code, "--relay", relay.url, "--name", "alice")
        try:
            assert await wait_for(lambda: isinstance(app.screen, PairNameDialog)), screen_text(app)
            app.screen.query_one("#pair-name-input", Input).value = "bob"
            await pilot.press("enter")
            assert await wait_for(lambda: isinstance(app.screen, InviteMutualScreen))
            await _type(app, pilot, pairs(bob)[0])  # alice has typed a pair; bob gives up at his first
            await asyncio.to_thread(jn.expect, b"their pair 1: ")
            await asyncio.to_thread(jn.send, "give up")
            assert await asyncio.to_thread(jn.finish) == 9, jn.text()
            # Told while she would type her next pair, not after it: the screen ends, and says how to finish.
            assert await wait_for(lambda: not isinstance(app.screen, InviteMutualScreen), 15), screen_text(app)
            assert await wait_for(lambda: "the other side stopped" in " ".join(str(n.message) for n in app._notifications), 5)
            said = " ".join(str(n.message) for n in app._notifications)
            assert "NOT confirmed: the other side stopped (gave up)" in said
            assert "--name bob --mutual" in said
        finally:
            jn.close()
    assert confirmed(alice) == {} and confirmed(bob) == {}
    assert whereabouts.of(alice, bob.identity.key) is None


async def test_the_command_palette_finds_invite_and_join(tmp_path: Path) -> None:
    app = TestApp(Home.init(tmp_path / "alice", "alice"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title.lower() for c in app.get_system_commands(app.screen)]
    for word in ("invite", "join"):
        assert any(word in t for t in titles), word


async def test_a_join_from_the_interface_and_an_invite_at_a_terminal_confirm_both_keys(relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = Home.init(tmp_path / "alice", "alice"), Home.init(tmp_path / "bob", "bob")
    inv = await asyncio.to_thread(Term, alice, "invite", "--relay", relay.url, "--name", "bob")
    app = TestApp(bob)
    try:
        code = await asyncio.to_thread(inv.code)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await pilot.pause()
            await pilot.press("J")
            await pilot.pause()
            app.screen.query_one("#send-code", Input).value = code
            app.screen.query_one("#send-relay", Input).value = relay.url
            await pilot.press("enter")
            assert await wait_for(lambda: isinstance(app.screen, PairNameDialog)), [str(n.message) for n in app._notifications]
            app.screen.query_one("#pair-name-input", Input).value = "alice"
            await pilot.press("enter")
            assert await wait_for(lambda: isinstance(app.screen, InviteMutualScreen))
            theirs, mine = pairs(alice), pairs(bob)
            for i in range(4):
                await asyncio.to_thread(inv.expect, f"their pair {i + 1}: ".encode())
                await asyncio.to_thread(inv.send, mine[i])
                await _type(app, pilot, theirs[i])
            await _type(app, pilot, closing(alice, bob))
            await asyncio.to_thread(inv.expect, b"their closing pair: ")
            await asyncio.to_thread(inv.send, closing(alice, bob))
            assert await wait_for(lambda: app.screen.confirmed), screen_text(app)
            assert await asyncio.to_thread(inv.finish) == 0, inv.text()
    finally:
        inv.close()
    assert confirmed(alice) == {"bob": bob.identity.key}
    assert confirmed(bob) == {"alice": alice.identity.key}
    w = whereabouts.of(bob, alice.identity.key)
    assert w is not None and w.mailbox_ok() and w.relay == relay.url


async def test_quitting_while_an_invite_waits_withdraws_the_code_and_does_not_hang(relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = Home.init(tmp_path / "alice", "alice"), Home.init(tmp_path / "bob", "bob")
    app = TestApp(alice)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        code = await _invite(app, pilot, relay.url)
        started = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - started < 15  # the wait on the relay ends with the interface, not at the code's expiry
    jn = await asyncio.to_thread(Term, bob, "join", code, "--relay", relay.url, "--name", "alice")
    assert await asyncio.to_thread(jn.finish) == 9, jn.text()
    assert "closed" in jn.text()
