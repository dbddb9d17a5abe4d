"""The contacts screen shows a contact's key history and offers the ceremony for a named replacement (spec/keys.md section 7)."""

from __future__ import annotations

from pathlib import Path

import nacl.signing
from gagetest import pair
from textual.widgets import DataTable

from gage.format.keys import statement as ks
from gage.format.manifest import now_text
from gage.format.words import derive
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox import ownkey
from gage.inbox.opening import open_home
from gage.trust import retirement
from gage.tui.app import GageApp
from gage.tui.ceremony import CeremonyScreen
from gage.tui.contacts import ContactsScreen

SIZE = (120, 36)


class _App(GageApp):
    def __init__(self, home: Home) -> None:
        super().__init__(home, watch=False)
        self.pwned = False

    def action_pwned(self) -> None:
        self.pwned = True


def _row_keys(app: GageApp) -> list[str]:
    table = app.screen.query_one(DataTable)
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(table.row_count)]


def _row_text(app: GageApp, key: str) -> str:
    table = app.screen.query_one(DataTable)
    return " | ".join(str(c) for c in table.get_row(key))


def _retire_alice(alice: Home, bob: Home, tmp: Path) -> bytes:
    old = alice.identity.key
    done = ownkey.retire(alice, reason="superseded", new=True, copy_to=tmp / "shared")
    assert done.bundle is not None
    assert retirement.apply_bundle(bob, tmp / "shared" / done.bundle.id).applied
    return old


async def test_contacts_show_the_retired_key_and_offer_the_ceremony_for_its_replacement(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    old = _retire_alice(alice, bob, tmp_path)
    new = open_home(alice.root).identity.key
    app = _App(bob)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        keys = _row_keys(app)
        assert keys == ["contact:alice", f"candidate:{new.hex()}"]
        assert "retired" in _row_text(app, "contact:alice") and "superseded" in _row_text(app, "contact:alice")
        linked = _row_text(app, f"candidate:{new.hex()}")
        assert "alice's new key?" in linked and "named by the retired key" in linked
        await pilot.press("down")
        await pilot.pause()
        detail = str(app.screen.query_one("#contacts-detail").render())
        assert "Named as alice's new key" in detail and "p starts it" in detail
        await pilot.press("p")
        await pilot.pause()
        # Under the contact's name: its key is retired, so the name check lets the new key take it.
        await pilot.press(*"alice", "enter")  # the pairing dialog
        await pilot.pause()
        assert isinstance(app.screen, CeremonyScreen)
        assert app.screen.key == new
        # The ceremony, not the statement, confirms it; under the contact's name the old key becomes history.
        app.screen.query_one("#heard").value = " ".join(" ".join(p) for p in derive(new))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        assert _row_keys(app) == ["contact:alice", f"previous:{old.hex()}"]
        assert "confirmed" in _row_text(app, "contact:alice")
        assert "(before)" in _row_text(app, f"previous:{old.hex()}")
    contacts = Contacts.load(bob.contacts_path)
    assert contacts.by_name("alice").key == new and [p.key for p in contacts.by_name("alice").previous] == [old]


async def test_a_hostile_name_in_a_statement_is_shown_literally(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    hostile = "[@click=app.pwned]x[/] \x1b]0;t\x07 [/]"
    new = nacl.signing.SigningKey.generate()
    st = ks.build(alice.identity.key, name=hostile, reason="compromised", retired_at=now_text(), replacement=bytes(new.verify_key))
    data = ks.Signed(st, ks.sign_retiring(alice.identity.secret, st), ks.sign_replacement(new, st)).to_bytes()
    assert retirement.apply_bytes(bob, data).applied
    app = _App(bob)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        assert "retired" in _row_text(app, "contact:alice")
        await pilot.press("down")
        await pilot.pause()
        detail = str(app.screen.query_one("#contacts-detail").render())
        assert "[@click=app.pwned]" in detail and "\x1b" not in detail
        await pilot.click("#contacts-detail")
        await pilot.pause()
        assert not app.pwned


async def test_contacts_show_this_homes_own_retired_keys(make_home, tmp_path: Path) -> None:
    """Like `gage id`: my current key, and the keys I retired, with their reasons."""
    from gage.format.keys import short_fingerprint

    alice = make_home("alice")
    old = alice.identity.key
    ownkey.retire(alice, reason="superseded", new=True, copy_to=tmp_path / "shared")
    alice = open_home(alice.root)
    app = _App(alice)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        me = str(app.screen.query_one("#contacts-me").render())
        assert short_fingerprint(alice.identity.key) in me
        assert f"retired key {short_fingerprint(old)}: superseded, replaced by {short_fingerprint(alice.identity.key)}" in me
