"""Daily use of the inbox (issue 27): the row acted on always in view, widths by content, a
preview that never mixes two bundles, ages that do not lag, bulk decisions that report,
and the keys people expect (j/k/g/G, sorting, select all)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual.app import App
from textual.widget import Widget
from tuikit import (
    MIXED_ROWS,
    Terminal,
    TestApp,
    World,
    hold_decisions,
    mixed_world,
    screen_text,
)

from gage.tui.inbox_cells import claims
from gage.tui.inbox_preview import PreviewPane
from gage.tui.inbox_table import InboxTable

SMALL, WIDE = (80, 24), (160, 45)
ROWS = MIXED_ROWS


def table(app: TestApp) -> InboxTable:
    return app.inbox.query_one(InboxTable)


def on_every_paint(app: App, check: Callable[[], None], terminal: Terminal | None = None) -> list[int]:
    """Run `check` each time the app puts a frame on the terminal (App._display: every
    compositor update, full or partial), so a wrong state shown even for one frame fails.
    With a `terminal`, each update is applied to it first, so `check` can read what the
    terminal shows rather than what the widgets hold now."""
    real = app._display
    painted = [0]

    def display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
        real(screen, renderable)
        if renderable is not None and screen is app.screen:
            if terminal is not None:
                terminal.apply(renderable)
            painted[0] += 1
            check()

    app._display = display  # type: ignore[method-assign]
    return painted


async def key_repeat(t: InboxTable) -> None:
    """Key repeat: down past the last row and back up, a move every few milliseconds with nothing
    waited for in between, while each row's file is read in a worker thread and lands whenever
    it is ready."""
    for delay in (0.0, 0.01, 0.05):
        for step in [t.action_cursor_down] * (ROWS + 3) + [t.action_cursor_up] * (ROWS + 3):
            step()
            await asyncio.sleep(delay)


def late_idles(monkeypatch: Any, place: Callable[[Widget], int]) -> None:
    """A busy machine: each widget takes its refresh to the screen at its own idle (Textual
    gives every widget its own message queue, so nothing orders them), here `place` steps
    of 20 ms late. Parts of one thing drawn by two widgets are then painted one without
    the other."""
    real = Widget._check_refresh

    def late(self: Widget) -> None:
        n = place(self)
        if n <= 0:
            real(self)
        else:
            self.set_timer(0.02 * n, lambda: real(self) if self.is_attached else None)

    monkeypatch.setattr(Widget, "_check_refresh", late)


def cursor_in_view(app: TestApp) -> bool:
    """The highlighted row lies within the table's visible rows, and the table is on screen."""
    t = table(app)
    if t.row_count == 0:
        return True
    rows_visible = t.scrollable_content_region.height - t.header_height
    top = round(t.scroll_y)
    inside_screen = t.region.bottom <= app.screen.region.bottom and t.region.height > t.header_height
    return inside_screen and top <= t.cursor_row < top + rows_visible


def highlighted_line(app: TestApp) -> str | None:
    """The screen's line that shows the highlighted row (found by its subject's token)."""
    row = app.inbox.current()
    if row is None:
        return None
    token = (row.subject or "").split(" ")[0]
    lines = [line for line in screen_text(app).splitlines() if token and token in line and "mixed row" in line]
    return lines[0] if lines else None


async def test_at_80x24_the_highlighted_row_is_on_screen_for_every_row(tmp_path: Path) -> None:
    world, tokens = mixed_world(tmp_path)
    app = TestApp(world.home)
    failures: list[str] = []

    def check() -> None:
        if not cursor_in_view(app):
            failures.append(f"row {table(app).cursor_row} (top {table(app).scroll_y}) painted out of view")

    async with app.run_test(size=SMALL) as pilot:
        t = table(app)
        on_every_paint(app, check)
        n = t.row_count
        assert n == ROWS + 4
        for i in range(n - 1):  # every row, going down
            await pilot.press("down")
            await pilot.pause()
            assert t.cursor_row == i + 1
            assert cursor_in_view(app), f"row {i + 1} of {n} is below the table's bottom"
            row = app.inbox.current()
            if row is not None and "mixed row" in (row.subject or ""):
                assert highlighted_line(app) is not None, f"row {i + 1} is not on the screen"
        for i in range(n - 1, 0, -1):  # and back up
            await pilot.press("up")
            await pilot.pause()
            assert cursor_in_view(app), f"row {i - 1} of {n} is out of view"
        await pilot.press("space")  # the marks bar comes: the table is shorter, the row stays in view
        await pilot.press("G")
        await pilot.pause()
        assert cursor_in_view(app)
    assert not failures, failures[:5]


async def test_the_side_preview_never_shows_a_payload_under_another_bundles_frame(tmp_path: Path, monkeypatch) -> None:
    world, tokens = mixed_world(tmp_path)
    by_id = {bid: token for token, bid in tokens.items()}
    app = TestApp(world.home)
    mismatches: list[str] = []
    payloads_seen: set[str] = set()

    terminal: list[Terminal] = []

    def check() -> None:
        pane = app.inbox.query_one(PreviewPane)
        width = pane.region.width
        text = "\n".join(line[-width:] for line in terminal[0].text().splitlines())  # the pane's columns, as shown
        shown = {t for t in tokens if f"payload of {t}" in text}
        if not shown:
            return
        payloads_seen.update(shown)
        if len(shown) > 1:
            mismatches.append(f"two payloads at once: {sorted(shown)}")
            return
        (token,) = shown
        found = re.search(r"bundle:[^0-9a-f]*([0-9a-f]{12})", text)
        framed = by_id.get(next((b for b in by_id if found and b.startswith(found.group(1))), ""), None)
        if framed != token:
            mismatches.append(f"payload of {token} under the frame of {found.group(1) if found else None} ({framed})")

    def place(w: Widget) -> int:  # the later a widget sits in the pane, the later its idle
        pane = next((a for a in w.ancestors if isinstance(a, PreviewPane)), None)
        inside = list(pane.walk_children()) if pane is not None else []
        return inside.index(w) if w in inside else 0

    late_idles(monkeypatch, place)
    async with app.run_test(size=WIDE) as pilot:
        terminal.append(Terminal(app))
        painted = on_every_paint(app, check, terminal[0])
        t = table(app)
        await key_repeat(t)
        await pilot.pause()
        t.move_cursor(row=t.get_row_index(tokens["T03"]))  # alice's, valid: its lines are shown
        await pilot.pause()
        await pilot.pause(0.1)
        assert "payload of T03" in screen_text(app)
        assert painted[0] > 5
    assert payloads_seen, "no payload was ever shown: the test saw nothing"
    assert not mismatches, mismatches[:5]


async def test_the_lines_under_the_table_never_pair_one_bundles_id_with_anothers_claims(tmp_path: Path, monkeypatch) -> None:
    """The detail (id, subject, sender) and the claims line under it (the name a stranger
    claims, the carrier's word) speak of one bundle in every paint, however late a widget's
    idle comes: a stranger's "claims to be alice" under a confirmed sender's id misleads."""
    world, tokens = mixed_world(tmp_path)
    app = TestApp(world.home)
    wrong: list[str] = []
    terminal: list[Terminal] = []
    claimed: set[str] = set()

    def check() -> None:
        detail = app.inbox.query_one("#inbox-detail")
        lines = terminal[0].text().splitlines()[detail.region.y : detail.region.y + 3]
        found = re.search(r"\b([0-9a-f]{12})\b", lines[0]) if lines else None
        if found is None or len(lines) < 3:
            return
        row = next((r for bid, r in app.inbox.rows.items() if bid.startswith(found.group(1))), None)
        if row is None:
            return
        claims_now = "claims to be" in claims(row).plain
        if claims_now:
            claimed.add(row.id)
        if claims_now != ("claims to be" in lines[2]):
            wrong.append(f"{found.group(1)} with the claims line {lines[2].strip()!r}")

    late_idles(monkeypatch, lambda w: list(app.inbox.children).index(w) if w.parent is app.inbox else 0)
    async with app.run_test(size=WIDE) as pilot:
        terminal.append(Terminal(app))
        painted = on_every_paint(app, check, terminal[0])
        t = table(app)
        await key_repeat(t)
        await pilot.pause()
        await pilot.pause(0.3)
        assert painted[0] > 5
    assert claimed, "no stranger's claim was ever shown: the test saw nothing"
    assert not wrong, wrong[:5]



# --- widths by content ------------------------------------------------------------------


def test_widths_follow_the_content_and_no_column_is_cut_while_another_has_room() -> None:
    from gage.tui.inbox_lens import PADDING, layout

    wants = {"verdict": 12, "sender": 39, "kind": 14, "age": 3, "subject": 25}
    for width in (60, 79, 95, 120, 159, 200):
        got = layout(width, via=False, marks=False, wants=wants)
        assert sum(got.values()) + 2 * PADDING * len(got) == width  # fills the table, never wider
        cut = [k for k in got if k != "subject" and got[k] < wants[k]]
        if got["subject"] > wants["subject"]:
            assert not cut, (width, got)  # empty subject columns while another column is cut
        if cut:  # room shared fairly: no column holds more than a cut one beyond the least it gets
            assert got["subject"] <= wants["subject"]
    wide = layout(95, via=False, marks=False, wants={**wants, "subject": 200})
    assert wide["kind"] == 14 and wide["age"] == 3  # the small columns whole
    assert wide["sender"] >= 20 and wide["subject"] >= 30  # the two long ones share what is left
    short = layout(95, via=False, marks=False, wants={"verdict": 12, "sender": 5, "kind": 5, "age": 3, "subject": 10})
    assert short["sender"] == len("Sender") and short["kind"] == 5  # the header or the content, no wider
    narrow = layout(79, via=False, marks=False, wants={**wants, "subject": 200})
    assert narrow["subject"] >= 24  # at 80 columns the subject keeps its room


async def test_at_160x45_kind_and_sender_are_whole_when_the_subject_has_room(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=WIDE) as pilot:
        await pilot.pause()
        t = table(app)
        widths = {str(c.key.value): c.width for c in t.ordered_columns}
        text = screen_text(app)
        assert "review-request" in text  # the kind, whole
        assert "review-…" not in text
        sender = t.get_cell(world.ids["hostile"], "sender").plain
        assert widths["sender"] >= 20 and sender[:19] in text  # the fingerprint, far more of it
        longest = max(len(r.subject or "") for r in app.inbox.rows.values())
        assert widths["subject"] <= longest  # no empty subject columns while something is cut


# --- ages -------------------------------------------------------------------------------


async def _shows(pilot: Any, text: Callable[[], str], want: str, cap: float = 1.5) -> bool:
    """Whether `text()` becomes `want` within `cap` seconds (the age's next change is due within a
    second): it waits for the cell to change, not for a fixed time."""
    deadline = time.monotonic() + cap
    while text() != want and time.monotonic() < deadline:
        await pilot.pause(0.02)
    return text() == want


async def test_the_age_column_moves_on_when_its_text_changes_not_30_seconds_later(world: World) -> None:
    from datetime import timedelta

    arrived = datetime(2026, 3, 14, 14, 20, 0, tzinfo=UTC)  # the invoice's arrival (tuikit)
    now = [arrived + timedelta(seconds=5)]
    app = TestApp(world.home)
    app._clock = lambda: now[0]
    async with app.run_test(size=SMALL) as pilot:
        t = table(app)
        bid = world.ids["invalid"]
        assert t.get_cell(bid, "age").plain == "5s"
        now[0] = arrived + timedelta(seconds=6, milliseconds=100)
        assert await _shows(pilot, lambda: t.get_cell(bid, "age").plain, "6s")  # the next second's text is due within a second
        now[0] = arrived + timedelta(seconds=60, milliseconds=50)
        assert await _shows(pilot, lambda: t.get_cell(bid, "age").plain, "1m")
    # When the text changes next: at the next whole unit of the age shown, never later.
    from gage.tui.inbox_cells import next_change

    assert next_change(arrived, arrived + timedelta(seconds=5, milliseconds=250)) == timedelta(milliseconds=750)
    assert next_change(arrived, arrived + timedelta(minutes=5, seconds=10)) == timedelta(seconds=50)
    assert next_change(arrived, arrived + timedelta(hours=3, minutes=59, seconds=59)) == timedelta(seconds=1)
    assert next_change(None, arrived) is None


# --- bulk decisions ---------------------------------------------------------------------


async def test_a_bulk_reject_shows_its_progress_and_keys_are_answered_meanwhile(tmp_path: Path, monkeypatch) -> None:

    from textual.widgets import ProgressBar

    from gage.home import listing
    from gage.tui.bulk import BulkBar
    from gage.tui.help import HelpScreen

    world, tokens = mixed_world(tmp_path, n=12)
    go, seen = hold_decisions(monkeypatch, after=3)  # the batch held once three are done
    app = TestApp(world.home)
    async with app.raw_pilot(size=SMALL) as pilot:
        for _ in range(100):
            if app.inbox.rows and all(r.verdict is not None for r in app.inbox.rows.values()):
                break
            await pilot.pause(0.05)
        t = table(app)
        marked = [tokens[f"T{i:02d}"] for i in range(10)]
        for bid in marked:
            t.move_cursor(row=t.get_row_index(bid))
            await pilot.press("space")
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("tab", "enter")  # the dialog: to the reason, then Enter: Reject 10 (no reason)
        for _ in range(200):
            if len(seen) >= 3:
                break
            await pilot.pause(0.02)
        bar = app.inbox.query_one(BulkBar)
        progress = bar.query_one(ProgressBar)
        for _ in range(100):  # the bar is redrawn every 50 ms
            if progress.progress == 3:
                break
            await pilot.pause(0.02)
        assert bar.display and progress.progress == 3 and progress.total == 10  # three done, the rest wait
        assert "Rejecting 10 bundles" in screen_text(app)
        before = t.cursor_row
        await pilot.press("k")  # keys are answered while the work runs
        assert t.cursor_row == before - 1
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.inbox.check_action("reject", ())  # one decision at a time
        go.set()
        for _ in range(200):
            if not bar.display:
                break
            await pilot.pause(0.05)
        assert not bar.display  # gone when done
    left = {s.id for s in listing.list_bundles(world.home, ("pending",))}
    assert not left & set(marked) and len(left) == 4 + 2


# --- keys people expect -----------------------------------------------------------------


async def test_j_k_g_G_move_through_the_inbox_and_help_names_them(world: World) -> None:
    from gage.tui.help import help_text

    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        ids = list(app.inbox.rows)
        await pilot.press("G")
        assert app.inbox.current_id() == ids[-1]
        await pilot.press("k")
        assert app.inbox.current_id() == ids[-2]
        await pilot.press("g")
        assert app.inbox.current_id() == ids[0]
        await pilot.press("j")
        assert app.inbox.current_id() == ids[1]
    text = help_text()
    for key, what in (("j", "down"), ("k", "up"), ("g", "first"), ("G", "last"), ("S", "sort"), ("*", "every")):
        assert any(line.split(": ", 1)[1].startswith(key + " ") and what in line.lower() for line in text.splitlines() if line.startswith("Inbox:")), key


def column_of(app: TestApp, key: str) -> list[str]:
    t = table(app)
    return [t.get_cell_at((i, t.get_column_index(key))).plain for i in range(t.row_count)]


async def test_sorting_by_a_column_by_key_or_by_a_click_on_its_header(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        t = table(app)
        arrival = list(app.inbox.rows)
        assert [str(t.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(t.row_count)] == arrival
        keep = app.inbox.current_id()
        await pilot.press("S")  # the next column: Verdict (the worst first)
        await pilot.pause()
        verdicts = column_of(app, "verdict")
        assert verdicts == sorted(verdicts, key=lambda v: ("invalid" not in v, "unverified" not in v))
        assert "Verdict ▲" in screen_text(app)  # the header says how the rows are sorted
        assert app.inbox.current_id() == keep  # the cursor stays on its bundle
        header = t.region.y  # click the Subject header: sorted by subject, A to Z
        x = sum(c.get_render_width(t) for c in t.ordered_columns[: t.get_column_index("subject")]) + 2
        await pilot.click(InboxTable, offset=(x, 0))
        await pilot.pause()
        subjects = column_of(app, "subject")
        assert subjects == sorted(subjects, key=str.lower), subjects
        assert "Subject ▲" in screen_text(app)
        await pilot.click(InboxTable, offset=(x, 0))  # again: Z to A
        await pilot.pause()
        assert column_of(app, "subject") == sorted(subjects, key=str.lower, reverse=True)
        assert header == t.region.y
        assert list(app.inbox.rows) == [str(t.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(t.row_count)]


async def test_star_marks_every_row_shown_and_again_clears_them(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("asterisk")
        await pilot.pause()
        assert app.inbox.lens.marked == set(world.ids.values())
        assert "4 marked" in screen_text(app)
        await pilot.press("asterisk")
        await pilot.pause()
        assert not app.inbox.lens.marked
        await pilot.press("v")  # only verified: "all" is what the filter shows
        await pilot.press("asterisk")
        await pilot.pause()
        assert app.inbox.lens.marked == {world.ids["review"], world.ids["notes"]}


async def test_rows_sorted_by_sender_go_to_their_place_when_a_verdict_changes(world: World) -> None:
    from tuikit import pair

    app = TestApp(world.home)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("S", "S")  # by sender, A to Z
        await pilot.pause()
        assert "Sender ▲" in screen_text(app)
        t = table(app)
        t.move_cursor(row=t.get_row_index(world.ids["review"]))
        assert list(app.inbox.rows)[-1] == world.ids["hostile"]  # "ed49-..." after "alice"
        pair(world.home, "aaron", world.stranger.key)  # the stranger's key confirmed as aaron
        app.inbox.contacts_changed()
        await pilot.pause()
        assert column_of(app, "sender")[0] == "aaron"  # moved to its place: first
        assert list(app.inbox.rows) == [str(t.coordinate_to_cell_key((i, 0)).row_key.value) for i in range(t.row_count)]
        assert app.inbox.current_id() == world.ids["review"]  # the cursor stayed on its bundle
