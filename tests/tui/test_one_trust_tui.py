"""Issue 17, bug 1 in the interface: a forwarded hop whose key is compromised reads "compromised key ..."
in the bundle view's frame, as in `gage verdict`, `gage read` and A2A imports, never a contact's name."""

from __future__ import annotations

from pathlib import Path

from gagetest import arrive, pair
from textual.widgets import Static
from tuikit import TestApp, screen_text

from gage.inbox import ownkey, send
from gage.trust import retirement
from gage.tui.bundle_view import BundleScreen

SIZE = (140, 40)


async def test_the_bundle_view_names_a_compromised_hop_as_the_verdict_does(make_home, tmp_path: Path) -> None:
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    pair(bob, "carol", carol)
    pair(alice, "carol", carol)
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    pair(carol, "bob", bob)
    src = tmp_path / "note.txt"
    src.write_text("the launch moves")
    cm, cdest = send.create(carol, [src], kind="share", to=["bob"], subject="minutes")
    arrive(bob, cdest)
    fm, fdest = send.forward(bob, cm.id, to=["alice"])
    done = ownkey.retire(carol, reason="compromised", copy_to=tmp_path / "shared")
    res = arrive(alice, tmp_path / "shared" / done.bundle.id)
    assert retirement.apply_arrivals(alice, [res.id])[0].applied
    arrive(alice, fdest)
    app = TestApp(alice)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.inbox.query_one("DataTable")
        table.move_cursor(row=table.get_row_index(fm.id))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        chain = [
            str(row.query(Static)[1].content) for row in app.screen.query(".field") if str(row.query(Static)[0].content) == "chain:"
        ]
        assert len(chain) == 1 and chain[0].startswith("bob says this came from compromised key "), chain
        assert "came from carol" not in screen_text(app)
