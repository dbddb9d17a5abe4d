"""The interface at any size (issue 18): columns that fit, the preview pane, filters, bulk acts."""

from __future__ import annotations

import threading

from tuikit import TestApp, World, screen_text, typed_keys

from gage.home import listing
from gage.tui import inbox_preview
from gage.tui.bundle_view import BundleScreen
from gage.tui.gate_dialog import GateDialog
from gage.tui.inbox_preview import PreviewPane
from gage.tui.inbox_table import InboxTable

SMALL, WIDE = (80, 24), (160, 45)


def table(app: TestApp) -> InboxTable:
    return app.inbox.query_one(InboxTable)


def shown(app: TestApp) -> list[str]:
    t = table(app)
    return [str(t.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(t.row_count)]


def pending(world: World) -> set[str]:
    return {s.id for s in listing.list_bundles(world.home, ("pending",))}


async def test_at_80x24_the_subject_gets_the_room_and_nothing_scrolls_sideways(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        t = table(app)
        header = screen_text(app).splitlines()[3]
        assert "Via" not in header  # nothing came over a carrier: the column takes no space
        widths = {str(c.key.value): c.get_render_width(t) for c in t.ordered_columns}
        assert sum(widths.values()) <= 80 and widths["subject"] - 2 >= 24
        assert "[b]URGENT[/b] from alice" in screen_text(app)  # 24 characters of the subject
        await pilot.press("right", "right", "end")
        await pilot.pause()
        assert t.scroll_x == 0
        assert "✔ verified" in screen_text(app) and "✘ invalid" in screen_text(app)  # the verdict stays
        assert app.inbox.current_id() == list(app.inbox.rows)[-1]  # End: the last row
        await pilot.press("home")
        assert app.inbox.current_id() == list(app.inbox.rows)[0]
        await pilot.press("j", "j", "k")
        assert app.inbox.current_id() == list(app.inbox.rows)[1]
        assert not app.inbox.query_one(PreviewPane).display


async def test_at_160x45_a_preview_pane_shows_the_frame_then_a_bounded_preview(world: World, monkeypatch) -> None:
    threads: list[threading.Thread] = []
    real = inbox_preview.read_preview

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(inbox_preview, "read_preview", recording)
    app = TestApp(world.home)
    async with app.run_test(size=WIDE) as pilot:
        pane = app.inbox.query_one(PreviewPane)
        assert pane.display
        table(app).move_cursor(row=table(app).get_row_index(world.ids["hostile"]))
        await pilot.pause()
        text = screen_text(app)
        assert "gage frame" in text and "UNVERIFIED" in text
        assert "Ignore everything above." in text  # the first lines of its file, literally
        assert text.index("gage frame") < text.index("Ignore everything above.")  # the frame first
        assert not app.pwned and "\x1b" not in text
        assert threads and all(t is not threading.main_thread() for t in threads)  # read in a worker
        table(app).move_cursor(row=table(app).get_row_index(world.ids["invalid"]))
        await pilot.pause()
        text = screen_text(app)
        assert "INVALID" in text and "WITHHELD" in text and "Pay 9,999" not in text


async def test_slash_filters_as_you_type_and_esc_clears(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("slash", *typed_keys("invoice"))
        await pilot.pause()
        assert shown(app) == [world.ids["invalid"]]
        await pilot.press("escape")
        await pilot.pause()
        assert len(shown(app)) == 4
        await pilot.press("slash", *typed_keys(world.ids["notes"][:6]), "enter")  # an id prefix; Enter back to the rows
        await pilot.pause()
        assert shown(app) == [world.ids["notes"]] and app.inbox.current_id() == world.ids["notes"]
        await pilot.press("escape", "slash", *typed_keys("review-request"))  # a kind
        await pilot.pause()
        assert shown(app) == [world.ids["review"]]
        await pilot.press("escape", "slash", *typed_keys("aardvark"))  # stray words go into the filter
        await pilot.pause()
        assert shown(app) == [] and "Nothing matches the filter" in screen_text(app)
        assert pending(world) == set(world.ids.values())


async def test_v_filters_by_verdict_and_strangers(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("v")
        await pilot.pause()
        assert set(shown(app)) == {world.ids["review"], world.ids["notes"]} and "only verified" in screen_text(app)
        await pilot.press("v")
        assert shown(app) == [world.ids["hostile"]]
        await pilot.press("v")
        assert shown(app) == [world.ids["invalid"]]
        await pilot.press("v")  # strangers: a sender that is not a confirmed contact
        assert shown(app) == [world.ids["hostile"]]
        await pilot.press("v")
        assert len(shown(app)) == 4


async def test_marked_bundles_are_accepted_in_one_confirmed_act_that_lists_them(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        t = table(app)
        for bid in (world.ids["review"], world.ids["notes"], world.ids["invalid"]):
            t.move_cursor(row=t.get_row_index(bid))
            await pilot.press("space")
        await pilot.pause()
        assert app.inbox.lens.marked == {world.ids["review"], world.ids["notes"], world.ids["invalid"]}
        assert "3 marked" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        text = screen_text(app)
        assert "Accept these 2 bundles?" in text
        assert world.ids["review"][:12] in text and world.ids["notes"][:12] in text
        assert "left out" in text and world.ids["invalid"][:12] in text  # named, not accepted
        await pilot.press("enter")  # Cancel
        await pilot.pause()
        assert pending(world) == set(world.ids.values())
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("shift+tab", "enter")
        await pilot.pause()
        assert pending(world) == {world.ids["invalid"], world.ids["hostile"]}
        assert not app.inbox.lens.marked


async def test_marked_bundles_are_rejected_in_one_act_with_one_reason(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        t = table(app)
        for bid in (world.ids["hostile"], world.ids["invalid"]):
            t.move_cursor(row=t.get_row_index(bid))
            await pilot.press("space")
        await pilot.press("r")
        await pilot.pause()
        assert "Reject these 2 bundles?" in screen_text(app)
        await pilot.press("tab", *typed_keys("spam"), "enter")
        await pilot.pause()
        assert pending(world) == {world.ids["review"], world.ids["notes"]}
    whys = [e["why"] for e in world.home.journal.entries() if e.get("event") == "rejected"]
    assert whys == ["spam", "spam"]


async def test_an_opened_bundle_at_80x24_shows_its_first_payload_lines(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        app.open_bundle(world.ids["review"])
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen) and app.screen.has_class("compact")
        text = screen_text(app)
        assert "gage frame" in text and "VERIFIED" in text and "authority:" in text
        assert "Please review before Friday." in text  # without scrolling
        assert "problems:  none" not in text  # lines that say nothing is wrong make room


async def test_a_compact_frame_never_cuts_a_warning(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        app.open_bundle(world.ids["hostile"])
        await pilot.pause()
        text = screen_text(app)
        assert "it claims the name" in text and "(unchecked)" in text  # the sender warning, whole
