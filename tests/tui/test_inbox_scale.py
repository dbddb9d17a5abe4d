"""Issue 13, the interface: rows first and verdicts after, changes touch only what changed,
nothing periodic grows with the inbox. Shown by counting work (checks, cells redrawn,
tables cleared), never by timing it; the times are in bench/bench_tui.py.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from test_live import shown_verdict, wait_for, watcher_ready
from test_rows import MANY, big_home, top_bundle, trust_fresh_trees  # noqa: F401 - big_home is a fixture
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from tuikit import TestApp, World, drop_in, screen_text

from gage.bundle import PAYLOAD
from gage.home import listing
from gage.home.cache import checks
from gage.inbox import rows as rows_mod
from gage.inbox import store
from gage.tui import inbox_sync as sync_mod
from gage.tui.gate_dialog import GateDialog
from gage.tui.inbox_table import InboxTable
from gage.tui.livefacts import LiveFacts

SIZE = (80, 24)


def count_checks(monkeypatch: pytest.MonkeyPatch, hold: threading.Event | None = None) -> list[str]:
    """Every verdict the inbox computes from now on, by bundle id (held until `hold` is set)."""
    seen: list[str] = []
    real = rows_mod.compute

    def compute(home, stored, **kwargs):
        if hold is not None:
            assert hold.wait(30), "the test never released the verdicts"
        seen.append(stored.id)
        return real(home, stored, **kwargs)

    monkeypatch.setattr(rows_mod, "compute", compute)
    return seen


def table_cell(app: TestApp, bid: str, column: str) -> str:
    return app.inbox.query_one(InboxTable).get_cell(bid, column).plain


async def test_rows_show_before_their_verdicts_as_claims_marked_checking(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    hold = threading.Event()
    count_checks(monkeypatch, hold)
    app = TestApp(world.home)
    async with app.raw_pilot(size=SIZE) as pilot:
        assert await wait_for(lambda: len(app.inbox.rows) == 4)
        await pilot.pause()
        assert all(r.verdict is None for r in app.inbox.rows.values())
        text = screen_text(app)
        assert text.count("checking") >= 4
        senders = [table_cell(app, bid, "sender") for bid in app.inbox.rows]
        assert 'claims "alice"' in senders  # the stranger's claim is a claim, never a name gage vouches for
        assert "✔ verified" not in text
        assert not app.pwned  # the hostile subject is literal text
        table = app.inbox.query_one(InboxTable)
        table.move_cursor(row=table.get_row_index(world.ids["review"]))
        await pilot.press("a")  # waits for the verdict, then asks
        assert listing.find(world.home, world.ids["review"]).state == "pending"
        assert not isinstance(app.screen, GateDialog)
        hold.set()
        assert await wait_for(lambda: isinstance(app.screen, GateDialog) and world.ids["review"][:12] in screen_text(app)) is not None
        await pilot.press("shift+tab", "enter")
        assert await wait_for(lambda: getattr(listing.find(world.home, world.ids["review"]), "state", None) == "accepted")
        assert await wait_for(lambda: not app.inbox.loading)
        assert "checking" not in screen_text(app)


async def test_a_new_bundle_is_the_only_one_checked_and_the_table_is_never_cleared(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")
        target = app.inbox.current_id()
        checked = count_checks(monkeypatch)
        clears: list[int] = []
        table = app.inbox.query_one(InboxTable)
        real_clear = table.clear
        monkeypatch.setattr(table, "clear", lambda *a, **k: clears.append(1) or real_clear(*a, **k))
        new = top_bundle(world, 91, "just arrived")
        drop_in(new, world.home)
        app.inbox.changed(frozenset({str(world.home.state_dir("pending") / new.name / "manifest.json")}))
        await pilot.pause()
        assert checked == [new.name]
        assert list(app.inbox.rows)[0] == new.name and table.get_row_index(new.name) == 0
        assert app.inbox.current_id() == target  # the cursor stayed on its bundle
        assert clears == []


async def test_a_changed_file_rechecks_only_its_bundle(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        checked = count_checks(monkeypatch)
        bid = world.ids["notes"]
        f = listing.find(world.home, bid).path / PAYLOAD / "notes.md"
        f.write_bytes(b"Minutes, rewritten.\n")
        app.inbox.changed(frozenset({str(f)}))
        await pilot.pause()
        assert checked == [bid]
        assert app.inbox.rows[bid].verdict.verdict == "invalid"


async def test_the_age_tick_redraws_only_rows_in_view(big_home: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    app = TestApp(big_home.home)
    async with app.run_test(size=SIZE) as pilot:
        table = app.inbox.query_one(InboxTable)
        assert table.row_count == MANY
        updated: list[str] = []
        real = table.update_cell
        monkeypatch.setattr(table, "update_cell", lambda r, c, v, **k: updated.append(c) or real(r, c, v, **k))
        later = app.now().replace(year=2027)
        app._clock = lambda: later  # a year later: every age reads differently
        app.inbox.refresh_ages()
        await pilot.pause()
        assert 0 < len(updated) <= SIZE[1]
        shown = {table.get_cell(b, "age").plain for b in table.in_view()}
        assert shown == {"52w"}


class _Plain(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable(id="plain")
        yield InboxTable(id="ours")


async def test_the_fast_row_lookups_agree_with_datatable() -> None:
    """InboxTable replaces two of DataTable's lists with lookups: they must agree (a Textual upgrade is caught here)."""
    app = _Plain()
    async with app.run_test() as pilot:
        tables = [app.query_one("#plain", DataTable), app.query_one("#ours", InboxTable)]
        for t in tables:
            t.add_column("a", key="a")
            for i in (3, 1, 4, 0, 2):
                t.add_row(str(i), key=f"k{i}")
            t.sort("a")
            t.remove_row("k4")
        await pilot.pause()
        plain, ours = tables
        assert [r.key for r in ours.ordered_rows] == [r.key for r in plain.ordered_rows]
        assert list(ours._y_offsets) == list(plain._y_offsets)
        assert [r.key for r in ours.ordered_rows[1:3]] == [r.key for r in plain.ordered_rows[1:3]]
        assert ours.virtual_size == plain.virtual_size


def test_live_facts_read_only_what_the_journal_appended(world: World, tmp_path: Path) -> None:
    home = world.home
    live = LiveFacts()
    first = live.update(home)
    assert home.journal.path.stat().st_size > 0
    # The first look reads no entry: the journal index answers, and only the end is noted.
    assert first.full and live.read_bytes == 0 and world.ids["review"] in first.facts.first_received
    again = live.update(home)
    assert not again.full and again.touched == set() and live.read_bytes == 0
    size = home.journal.path.stat().st_size
    b = top_bundle(world, 92, "later")
    bid = store.import_bundle(home, b).id
    later = live.update(home)
    assert not later.full and later.touched == {bid} and bid in later.facts.first_received
    assert live.read_bytes == home.journal.path.stat().st_size - size  # only what was appended
    with open(home.journal.path, "ab") as f:
        f.write(b'{"torn')  # a torn last line: left for the next look, not misread
    assert live.update(home).touched == set() and live.read_bytes == 0
    data = home.journal.path.read_bytes()
    home.journal.path.write_bytes(data[: len(data) // 2])  # shrunk: started over, every verdict again
    cut = live.update(home)
    assert cut.full and cut.keys_changed and bid not in cut.facts.first_received


def test_the_first_rows_never_read_the_whole_journal(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrival order comes from the journal index: one look at the journal's end, no parse of its entries."""
    from gage.home.cache import journalindex

    home = world.home
    home.journal.index.sync()  # as every append leaves it
    rebuilt: list[int] = []
    monkeypatch.setattr(journalindex.JournalIndex, "_rebuild", lambda *a: rebuilt.append(1))
    live = LiveFacts()
    facts = live.update(home).facts
    facts.prefetch(world.ids.values())
    order = sync_mod._ordered(listing.list_bundles(home, ("pending",)), facts.first_received)
    assert rebuilt == [] and live.read_bytes == 0
    assert [st.id for st in order] == [r.id for r in sorted(
        (sync_mod.cheap_row(st, facts.first_received.get(st.id)) for st in order), key=lambda r: r.order, reverse=True
    )]


async def test_a_byte_changed_while_open_is_shown_invalid_after_the_watchers_change(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check cache (gage.home.cache.checks) is the interface's: a same-size write with the
    mtime put back, seen only by the watcher, must turn the row invalid, now and after a restart."""
    trust_fresh_trees(monkeypatch)
    bid = world.ids["notes"]
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        assert shown_verdict(app, bid) == "verified"
        app.inbox.reload()  # nothing changed: the check is served from the cache
        assert await wait_for(lambda: not app.inbox.loading)
        assert app.inbox.cache.hits >= 1 and len(app.inbox.cache) >= 1
        await watcher_ready(app, world)
        f = listing.find(world.home, bid).path / PAYLOAD / "notes.md"
        st = f.stat()
        data = f.read_bytes()
        f.write_bytes(bytes([data[0] ^ 1]) + data[1:])  # one byte, same size
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the mtime put back
        assert await wait_for(lambda: shown_verdict(app, bid) == "invalid"), "the changed byte was never seen"
        await pilot.pause()
    again = TestApp(world.home)
    async with again.run_test(size=SIZE):
        assert shown_verdict(again, bid) == "invalid"  # the saved cache serves nothing stale either


async def test_a_restart_on_an_unchanged_home_hashes_nothing_again(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    trust_fresh_trees(monkeypatch)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE):
        first = {b: r.verdict.verdict for b, r in app.inbox.rows.items()}
        bad = sum(v == "invalid" for v in first.values())
        assert app.inbox.cache.misses == len(first)
    assert (world.home.cache / checks.FILE_NAME).is_file()  # saved when the fill completed
    again = TestApp(world.home)
    async with again.run_test(size=SIZE):
        assert {b: r.verdict.verdict for b, r in again.inbox.rows.items()} == first
        # Only the invalid one is checked afresh (never remembered, so a repair shows at once).
        assert again.inbox.cache.misses == bad and again.inbox.cache.hits == len(first) - bad


class _SideBySide(App[None]):
    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal

        with Horizontal():
            yield DataTable(id="plain")
            yield InboxTable(id="ours")


async def test_batch_adds_and_cell_updates_leave_the_table_as_datatable_would() -> None:
    """`add_rows` and `set_cells` (one batch, one redraw) against `add_row` and `update_cell`
    (one by one), side by side on screen: the same cells, size and drawing, a row changed in
    view is redrawn, and one changed out of view is drawn new once it scrolls in."""
    from rich.text import Text

    app = _SideBySide()
    async with app.run_test(size=(80, 10)) as pilot:
        plain, ours = app.query_one("#plain", DataTable), app.query_one("#ours", InboxTable)
        rows = [(f"k{i}", [Text(f"v{i}"), Text("subject " + "x" * (i % 7))]) for i in range(40)]
        for t in (plain, ours):
            t.styles.width = 40
            t.add_column("verdict", width=6, key="verdict")
            t.add_column("subject", key="subject")
        for key, cells in rows:
            plain.add_row(*cells, key=key)
        ours.add_rows(rows)

        async def halves() -> tuple[list[str], list[str]]:
            await pilot.pause()
            lines = screen_text(app).splitlines()
            return [line[:40] for line in lines], [line[40:80] for line in lines]

        left, right = await halves()
        assert left == right and any("v1" in line for line in right)
        for t in (plain, ours):  # draw the rows further down once, then come back
            t.scroll_to(y=28, animate=False, immediate=True)
        assert any("v30" in line for line in (await halves())[1])
        for t in (plain, ours):
            t.scroll_to(y=0, animate=False, immediate=True)
        await halves()
        changes = {"k1": {"verdict": Text("ok1")}, "k30": {"verdict": Text("ok30"), "subject": Text("new words")}}
        for key, cells in changes.items():
            for column, cell in cells.items():
                plain.update_cell(key, column, cell)
        ours.set_cells(changes)
        left, right = await halves()
        assert left == right and any("ok1" in line for line in right)  # in view: redrawn
        assert [plain.get_row(k) for k, _ in rows] == [ours.get_row(k) for k, _ in rows]
        assert ours.cursor_coordinate == plain.cursor_coordinate and ours.row_count == plain.row_count == 40
        assert ours.virtual_size == plain.virtual_size
        for t in (plain, ours):
            t.scroll_to(y=28, animate=False, immediate=True)
        left, right = await halves()
        assert left == right and any("ok30" in line and "new words" in line for line in right)  # changed out of view, drawn new
        with pytest.raises(Exception, match="already exists"):
            ours.add_rows([("k1", [Text("dup")])])


async def test_a_batch_of_verdicts_lands_with_the_right_cells_in_one_message(
    big_home: World, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from gage.tui import inbox as inbox_mod
    monkeypatch.setattr(sync_mod, "BATCH_SECONDS", 3600.0)  # the whole fill in one batch, however slow the machine
    batches: list[int] = []
    real = inbox_mod.InboxScreen.on_verdicts_ready

    def counted(self, message):  # type: ignore[no-untyped-def]
        batches.append(len(message.verdicts))
        return real(self, message)

    monkeypatch.setattr(inbox_mod.InboxScreen, "on_verdicts_ready", counted)
    app = TestApp(big_home.home)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(lambda: not app.inbox.loading and len(app.inbox.rows) == MANY)
        await pilot.pause()
        assert batches == [MANY]  # one message for the batch, not one per bundle
        table = app.inbox.query_one(InboxTable)
        now = app.now()
        for bid, row in app.inbox.rows.items():
            assert row.verdict is not None and row.verdict.verdict == "verified"
            shown = table.get_row(bid)
            assert [(c.plain, str(c.style)) for c in shown] == [(c.plain, str(c.style)) for c in app.inbox.cells_of(row, now)]
        text = screen_text(app)
        assert "checking" not in text and "✔ verified" in text


async def test_a_fill_holds_full_collections_off_and_leaves_nothing_frozen(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """gage.tui.gcpause: each batch a fill applies freezes what is alive (so a full collection
    walks only what is new), and once no fill runs everything is given back to the collector,
    also when the app closes mid-fill: nothing stays frozen to leak."""
    import gc

    from gage.tui import gcpause

    frozen_while_loading: list[int] = []
    real_hold = gcpause.hold

    def hold() -> None:
        real_hold()
        frozen_while_loading.append(gc.get_freeze_count())

    monkeypatch.setattr(gcpause, "hold", hold)
    assert gc.get_freeze_count() == 0
    app = TestApp(world.home)
    async with app.raw_pilot(size=SIZE) as pilot:
        assert await wait_for(lambda: len(app.inbox.rows) == 4 and not app.inbox.loading and all(r.verdict for r in app.inbox.rows.values()))
        await pilot.pause()
        assert frozen_while_loading and all(n > 0 for n in frozen_while_loading)
        assert gc.get_freeze_count() == 0  # the fill is done: nothing frozen
    # Closed in the middle of a fill: the verdicts held back, the screen unmounted.
    gate = threading.Event()
    count_checks(monkeypatch, gate)
    (world.home.cache / checks.FILE_NAME).unlink(missing_ok=True)
    app = TestApp(world.home)
    async with app.raw_pilot(size=SIZE):
        assert await wait_for(lambda: len(app.inbox.rows) == 4)
        assert app.inbox.loading
    gate.set()
    assert gc.get_freeze_count() == 0
