"""Issue 9, class 1 in the interface: the sender comes from the verdict, retired keys included.

The inbox row, the accept dialog and `p` all read `Verdict.sender`. A key retired as
compromised is shown as such (its own colour), the accept dialog never calls it "a key
you have never seen before", and `p` on a bundle from a retired key does not open a
ceremony that would be refused: it offers the key the statement named, or says why not.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gagetest import pair
from tuikit import TestApp, name_them, screen_text

from gage.bundle import MANIFEST
from gage.home.layout import Home
from gage.inbox import ownkey, send, store
from gage.inbox.opening import open_home
from gage.trust import retirement
from gage.tui import decide
from gage.tui.ceremony import CeremonyScreen
from gage.tui.dialogs import ConfirmDialog
from gage.tui.gate_dialog import GateDialog
from gage.tui.inbox import InboxScreen
from gage.tui.pair_name import PairNameDialog

SIZE = (140, 40)


def _send(home: Home, tmp: Path, text: str) -> str:
    src = tmp / f"{text[:6]}.txt"
    src.write_text(text)
    m, _ = send.create(home, [src], kind="share", subject="Q3 numbers", copy_to=tmp / "shared")
    return m.id


def _retired_world(make_home, tmp: Path, reason: str) -> tuple[Home, Home, str]:
    """Bob confirmed alice; she signed a bundle, then retired that key (`reason`) naming a new one."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    old = _send(alice, tmp, "signed with the old key")
    store.import_bundle(bob, tmp / "shared" / old)
    done = ownkey.retire(alice, reason=reason, new=True, copy_to=tmp / "shared")
    assert done.bundle is not None
    assert retirement.apply_bundle(bob, tmp / "shared" / done.bundle.id).applied
    return alice, bob, old


async def _on_row(pilot, app: TestApp, bid: str) -> None:
    await pilot.pause()
    table = app.inbox.query_one("DataTable")
    table.move_cursor(row=table.get_row_index(bid))
    await pilot.pause()


async def test_a_forged_bundle_is_never_shown_under_the_contact_name(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    real = _send(alice, tmp_path, "the real numbers")
    forged = tmp_path / "forged" / real
    shutil.copytree(tmp_path / "shared" / real, forged)
    (forged / MANIFEST).write_bytes((forged / MANIFEST).read_bytes().replace(b"Q3 numbers", b"Pay 6666 now"))
    bid = store.import_bundle(bob, forged).id
    app = TestApp(bob)
    async with app.run_test(size=SIZE) as pilot:
        await _on_row(pilot, app, bid)
        cells = InboxScreen.cells(app.inbox.rows[bid], app.now())
        assert "alice" not in cells[1].plain and "unproven key" in cells[1].plain
        assert "green" not in str(cells[1].style), "an unproven key is drawn in the confirmed colour"
        app.inbox.show_detail()
        assert "claims to be" in screen_text(app)  # the name is the manifest's claim, and says so


async def test_a_compromised_key_has_its_own_colour_in_the_inbox(make_home, tmp_path: Path) -> None:
    _alice, bob, old = _retired_world(make_home, tmp_path, "compromised")
    app = TestApp(bob)
    async with app.run_test(size=SIZE) as pilot:
        await _on_row(pilot, app, old)
        row = app.inbox.rows[old]
        assert row.verdict.sender.status == "retired"
        sender = InboxScreen.cells(row, app.now())[1]
        assert "compromised key" in sender.plain
        assert "red" in str(sender.style), "a compromised key is drawn like any other key"


async def test_a_superseded_key_is_shown_as_the_contacts_previous_key(make_home, tmp_path: Path) -> None:
    _alice, bob, old = _retired_world(make_home, tmp_path, "superseded")
    app = TestApp(bob)
    async with app.run_test(size=SIZE) as pilot:
        await _on_row(pilot, app, old)
        sender = InboxScreen.cells(app.inbox.rows[old], app.now())[1]
        assert "alice" in sender.plain and "previous key" in sender.plain
        assert "green" in str(sender.style)


async def test_the_accept_dialog_never_calls_a_compromised_key_new(make_home, tmp_path: Path) -> None:
    _alice, bob, old = _retired_world(make_home, tmp_path, "compromised")
    app = TestApp(bob)
    async with app.run_test(size=SIZE) as pilot:
        await _on_row(pilot, app, old)
        body = " ".join(c.plain for c in decide.unverified_body(app.inbox.rows[old].verdict))
        assert "never seen before" not in body
        assert "COMPROMISED" in body and "alice" in body
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        assert "never seen before" not in screen_text(app)


@pytest.mark.parametrize("reason", ["compromised", "superseded"])
async def test_p_on_a_retired_key_offers_its_named_replacement(make_home, tmp_path: Path, reason: str) -> None:
    alice, bob, old = _retired_world(make_home, tmp_path, reason)
    new_key = open_home(alice.root).identity.key
    app = TestApp(bob)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _on_row(pilot, app, old)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog), "p opened the ceremony on a retired key"
        assert "retired" in screen_text(app) and "new key" in screen_text(app)
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, PairNameDialog) and app.screen.key == new_key
        await name_them(pilot, "alice")  # the retired key's contact: its new key may take the name
        assert isinstance(app.screen, CeremonyScreen)
        assert app.screen.key == new_key


async def test_p_on_a_retired_key_with_no_replacement_says_why_not(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    old = _send(alice, tmp_path, "signed with the old key")
    store.import_bundle(bob, tmp_path / "shared" / old)
    done = ownkey.retire(alice, reason="compromised", new=False, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    assert retirement.apply_bundle(bob, tmp_path / "shared" / done.bundle.id).applied
    app = TestApp(bob)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _on_row(pilot, app, old)
        await pilot.press("p")
        await pilot.pause()
        assert not isinstance(app.screen, CeremonyScreen | ConfirmDialog)
        said = " ".join(str(n.message) for n in app._notifications)
        assert "retired" in said and "compromised" in said and "already confirmed" not in said
