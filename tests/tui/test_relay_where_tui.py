"""The interface's contacts screen shows a key's "where" (issue 20) as a claim, and a hostile
relay URL or source in it literally, never as markup or control sequences."""

from __future__ import annotations

from pathlib import Path

import nacl.signing
from pyrage import x25519
from test_hostile import assert_clean
from tuikit import TestApp, make_home, screen_text

from gage.home import sealing, whereabouts
from gage.trust import ceremony
from gage.tui.contacts import ContactsScreen

SIZE = (220, 60)


async def test_contacts_show_a_candidates_mailbox_claim_literally(tmp_path: Path) -> None:
    home = make_home(tmp_path / "you", "you", 1)
    sk = nacl.signing.SigningKey.generate()
    b = sealing.build_binding(sk, str(x25519.Identity.generate().to_public()))
    key = bytes(sk.verify_key)
    ceremony.add_candidate(home, key, "dir-bob", "directory nats://x handle bob")
    nasty = "nats://evil.example:4222/[@click=app.pwned]x[/]\x1b[31m"
    whereabouts.remember(home, whereabouts.from_binding(b, relay=nasty, source="directory \x1b]0;t\x07"))
    app = TestApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        await pilot.pause()
        text = screen_text(app)
        assert "where (a claim, from directory" in text
        assert sealing.mailbox_address(b.sealing_key) in text
        assert_clean(app, "nats://evil.example:4222/[@click=app.pwned]x[/]")


async def test_contacts_show_where_you_said_a_contact_is_literally(tmp_path: Path) -> None:
    """`gage contacts where bob --a2a URL --folder DIR` shows on bob's row, as your claim, markup and all literal."""
    from gagetest import pair

    home = make_home(tmp_path / "you", "you", 1)
    bob = make_home(tmp_path / "bob", "bob", 1)
    pair(home, "bob", bob)
    folder = "/srv/sync/[@click=app.pwned]x[/]"
    whereabouts.set_own(home, bob.identity.key, a2a="http://127.0.0.1:8470/[b]", drop=folder)
    app = TestApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        await pilot.pause()
        text = screen_text(app)
        assert "where (a claim, from you): A2A http://127.0.0.1:8470/[b]" in text
        assert_clean(app, "[@click=app.pwned]x[/]")
