"""The inbox: what is waiting for you, newest first, with the verdict gage computed.

Pending bundles come first (tab 1); accepted and rejected are one key away (2, 3), and
the bundles you made (the outbox) are tab 4, so any of them can be opened and exported.
Each row's verdict and sender come from `gage.trust.verdict.compute`, never from what the
bundle says about itself; the subject is shown as the sender's words, literally. A
bundle that arrived over A2A is marked in the Via column; who the transport says sent
it is shown under the table as a claim (gage.tui.via).

Large inboxes (10,000 bundles) open at once: rows first from the journal index and the
manifests' claims, marked "checking"; verdicts fill in from a thread worker, the rows in
view first, through the home's check cache (gage.tui.inbox_sync). Changes touch only what
changed (the watcher's paths name the bundles to check again; rows are added, removed and
updated one by one, never by clearing the table) and the cursor stays on its bundle.
Nothing periodic grows with the inbox: ages are redrawn only for the rows in view.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from functools import partial

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, Static, Tab, Tabs
from textual.worker import get_current_worker

from gage.home.cache.checks import CheckCache
from gage.home.layout import ALL_STATES, Home
from gage.tui import gcpause
from gage.tui.bindings import bindings_for
from gage.tui.bulk import BulkBar
from gage.tui.inbox_cells import age_cell, age_text, next_change, row_cells
from gage.tui.inbox_lens import LABELS, Lens
from gage.tui.inbox_preview import PreviewPane
from gage.tui.inbox_sync import LazyChecks, SyncRequest, Wanted, sync
from gage.tui.inbox_table import InboxTable
from gage.tui.inbox_view import InboxView
from gage.tui.livefacts import LiveFacts
from gage.tui.messages import RowsArrived, SyncDone, VerdictsReady
from gage.tui.rows import Row

ROWS_GROUP = "inbox-rows"
VIEWS = ALL_STATES  # the tabs: the inbox's three states, then the outbox
TAB_LABEL = {"pending": "1 Pending", "accepted": "2 Accepted", "rejected": "3 Rejected", "outbox": "4 Outbox"}
AGE_SLACK = 0.02  # seconds after an age's text is due: the redraw lands just past the boundary
AGE_MAX_WAIT = 3600.0  # seconds: the longest the ages wait (a clock changed meanwhile is caught)
REBUILD_AFTER = 16  # rows leaving at once past which the table is filled again instead
__all__ = ["InboxScreen", "age_text"]


class InboxScreen(InboxView, Screen[None]):
    BINDINGS = bindings_for("inbox")
    GROUP = "inbox"

    def __init__(self) -> None:
        super().__init__(id="inbox")
        self.state = "pending"
        self.rows: dict[str, Row] = {}  # in display order
        self._checks = LazyChecks()  # the home's check cache (gage.home.cache.checks), loaded by the first sync
        self.live = LiveFacts()  # the journal index, and the journal read only where it grew
        self.wanted = Wanted()  # the ids in view: their verdicts are computed first
        self._run = 0  # the sync whose messages are shown; older ones are ignored
        self._req: SyncRequest | None = None  # the sync running, if any
        self._again = False  # a change came in while a sync ran: one more run after it
        self._full = True  # the next run loads the whole tab
        self._dirty: set[str] = set()  # rows whose files changed since the last run started
        self._after: tuple[str, str] | None = None  # (id, action) waiting for that row's verdict
        self.loads = 0  # first rows shown so far (one per full load)
        self.lens = Lens()  # the filter and the marks (gage.tui.inbox_lens)
        self._columns: list[str] = []  # the table's columns now (gage.tui.inbox_lens.layout)
        self.wants: dict[str, int] = {}  # the widest cell of each column (gage.tui.inbox_view.measure)
        self._laid_out: dict[str, int] = {}
        self._relayout_asked = False
        self._age_timer: Timer | None = None  # the next redraw of the ages in view

    @property
    def cache(self) -> CheckCache:
        return self._checks.of(self.app.home)  # type: ignore[attr-defined]

    @property
    def loading(self) -> bool:
        """A sync is running or asked for: rows or verdicts may still change."""
        return self._req is not None or self._again

    def compose(self) -> ComposeResult:
        yield Header()
        yield Tabs(*(Tab(TAB_LABEL[s], id=s) for s in VIEWS), id="states")
        yield Input(placeholder="filter: words of the subject, sender or kind, or an id prefix (Esc clears)", id="inbox-filter", compact=True)
        with Horizontal(id="inbox-main"):
            yield InboxTable(id="inbox-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="inbox-empty", markup=False)
            yield PreviewPane(id="inbox-pane")
        yield BulkBar(id="inbox-bulk")
        yield Static("", id="inbox-lens", markup=False)
        yield Static("", id="inbox-detail", markup=False)
        yield Footer(compact=True, show_command_palette=False)  # Ctrl+P still opens it; the space is for keys

    def on_mount(self) -> None:
        table = self.query_one(InboxTable)
        widths = self._widths()
        self._columns = list(widths)
        for k in self._columns:
            table.add_column(LABELS[k], width=widths[k], key=k)
        self.query_one("#inbox-empty", Static).display = False
        self.query_one("#inbox-filter", Input).display = False
        self.query_one("#inbox-lens", Static).display = False
        self.query_one(PreviewPane).display = self._pane_shown()
        self._start_sync()
        table.focus()
        self.watch(table, "scroll_y", self._view_moved, init=False)

    # --- what is in view ----------------------------------------------------------------

    def _view_moved(self) -> None:
        self.refresh_ages()

    def refresh_ages(self) -> None:
        """Ages move on while the app is open. Only rows in view are redrawn (as the view moves,
        and when the first of their texts is due to change: gage.tui.inbox_cells.next_change),
        so the cost does not grow with the inbox; the rows in view are also the ones whose
        verdicts the worker computes first."""
        table = self.query_one(InboxTable)
        now = self.app.now()  # type: ignore[attr-defined]
        ids = self.query_one(InboxTable).in_view()
        self.wanted.set([i for i in ids if i in self.rows and self.rows[i].verdict is None])
        due: list[timedelta] = []
        for bid in ids:
            row = self.rows.get(bid)
            if row is None:
                continue
            text = age_text(row.arrived, now)
            if table.get_cell(bid, "age").plain != text:
                table.update_cell(bid, "age", age_cell(row, now))
            if (later := next_change(row.arrived, now)) is not None:
                due.append(later)
        if self._age_timer is not None:
            self._age_timer.stop()
        if due:
            wait = min(due).total_seconds() + AGE_SLACK
            self._age_timer = self.set_timer(min(wait, AGE_MAX_WAIT), self.refresh_ages, name="ages")

    # --- loading ----------------------------------------------------------------------

    def reload(self) -> None:
        """Look at every row of the tab again (each bundle re-checked through the check cache)."""
        self._dirty |= set(self.rows)
        self._request()

    def changed(self, paths: frozenset[str] = frozenset()) -> None:
        """Something changed under the home (the watcher's paths, or a decision made here).

        The next sync compares the folder's listing with the rows shown, so bundles that
        came or went are found without the paths; a path inside a bundle of this tab marks
        that bundle to be checked again. Nothing else is re-checked.
        """
        if paths:
            base = str(self.app.home.state_dir(self.state)) + os.sep  # type: ignore[attr-defined]
            for p in paths:
                if p.startswith(base):
                    bid = p[len(base) :].split(os.sep, 1)[0]
                    if bid in self.rows:
                        self._dirty.add(bid)
        self._request()

    def contacts_changed(self) -> None:
        """Every verdict may read differently now: all are computed again, the rows in view first."""
        for row in self.rows.values():
            row.stale = True
        self._request()

    def _request(self) -> None:
        if self._req is not None:
            self._again = True
            self._req.interrupt.set()  # stop filling in verdicts: the change goes first
            return
        self._start_sync()

    def _start_sync(self) -> None:
        self._run += 1
        full, self._full, self._again = self._full, False, False
        req = SyncRequest(
            state=self.state,
            run=self._run,
            full=full,
            known=frozenset() if full else frozenset(self.rows),
            recheck=[] if full else [i for i in self.rows if i in self._dirty],
            need=[] if full else [i for i, r in self.rows.items() if r.verdict is None or r.stale],
            wanted=self.wanted,
        )
        self._dirty.clear()
        self._req = req
        home = self.app.home  # type: ignore[attr-defined]
        self.run_worker(partial(self._sync, home, req), thread=True, exclusive=True, group=ROWS_GROUP, name=f"rows {self.state}")

    def _sync(self, home: Home, req: SyncRequest) -> None:
        """In the worker thread (gage.tui.inbox_sync): no widget is touched here."""
        worker = get_current_worker()
        sync(home, req, self._checks.of(home), self.live, self.post_message, lambda: worker.is_cancelled)

    def on_sync_done(self, message: SyncDone) -> None:
        if message.run != self._run:
            return
        self._req = None
        if not self.loading:
            gcpause.release()
        if message.error is not None:
            table = self.query_one(InboxTable)
            table.loaded = True
            box = self.query_one("#inbox-detail", Static)
            box.add_class("error")  # wrapped, not cut: all of it is read
            box.update(Content.styled(message.error, "bold red"))
        if self._again:
            self._start_sync()

    def on_rows_arrived(self, message: RowsArrived) -> None:
        """Show new rows where they sort and drop those that left, keeping the cursor on its bundle.

        Nothing runs between the old rows and the new ones, so a key pressed at any moment
        acts on the bundle shown highlighted. If that bundle left this tab the cursor goes to
        its nearest neighbour that is still here (the next one, else the one before); before
        a tab's first rows, Up and Down pressed while loading apply.
        """
        if message.run != self._run or message.state != self.state:
            return
        table = self.query_one(InboxTable)
        for s in VIEWS:
            self.query_one(Tabs).query_one(f"#{s}", Tab).label = f"{TAB_LABEL[s]} ({message.counts.get(s, 0)})"
        if "queued" in message.counts and hasattr(self.app, "show_queued"):
            self.app.show_queued(message.counts["queued"])
        keep = self.current_id()
        old_order = list(self.shown_ids())
        old_index = table.cursor_row
        old_y = table.scroll_y
        if message.replace:
            table.clear()
            self.rows = {}
        self._remove(table, message.removed)
        self.forget_marks(message.removed)
        self._add(table, message.rows)
        first = message.replace or not table.loaded
        shown = self.shown_ids()
        target = table.cursor_target(shown, keep, old_order, old_index)
        if keep is not None and keep not in shown and not message.replace and target is not None:
            self.announce_left(keep, target)
        table.loaded, table.early = True, 0
        if target is not None and (first or target != table.cursor_row or keep not in shown):
            table.move_cursor(row=target)
            if old_y and not message.replace:
                table.call_after_refresh(table.restore_scroll, old_y)
        if message.replace:
            self.loads += 1
        self.show_empty()
        self.show_lens()
        if table.display and self.focused is None:
            table.focus()
        self.show_detail()
        self.refresh_bindings()
        self.refresh_ages()
        if self.loading:
            gcpause.hold()  # gage.tui.gcpause: a fill's full collections walk only what is new

    def _add(self, table: InboxTable, rows: list[Row]) -> None:
        if not rows:
            return
        now = self.app.now()  # type: ignore[attr-defined]
        last = self._last_shown(table)
        for row in rows:
            self.rows[row.id] = row
        rows = [r for r in rows if self.lens.shows(r)]
        if not rows:
            return
        table.add_rows((row.id, self.cells_of(row, now)) for row in rows)
        if self.lens.sorted_otherwise:  # sorted by a column: every row in its place (gage.tui.inbox_view)
            self.put_in_order()
            rank = {bid: i for i, bid in enumerate(self.rows)}
            table.sort("age", key=lambda cell: rank.get(cell.order[1], 0))
        elif last is not None and max(r.order for r in rows) > last:
            # Some arrived above rows already shown: put every row in its place.
            table.sort("age", key=lambda cell: cell.order, reverse=True)
            self.rows = dict(sorted(self.rows.items(), key=lambda kv: kv[1].order, reverse=True))

    def _remove(self, table: InboxTable, ids: list[str]) -> None:
        gone = [i for i in ids if i in self.rows]
        if not gone:
            return
        for bid in gone:
            del self.rows[bid]
        gone = [i for i in gone if i in table.rows]
        if len(gone) > REBUILD_AFTER:
            # Each removal renumbers every row: past a few, adding the rest again is cheaper.
            table.clear()
            now = self.app.now()  # type: ignore[attr-defined]
            table.add_rows((row.id, self.cells_of(row, now)) for row in self.rows.values() if self.lens.shows(row))
            return
        for bid in gone:
            table.remove_row(bid)

    def _last_shown(self, table: InboxTable) -> tuple[datetime, str] | None:
        """The arrival order of the last (oldest) row the table shows."""
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.row_count - 1, 0)).row_key.value
        row = self.rows.get(str(key))
        return row.order if row is not None else None

    def on_verdicts_ready(self, message: VerdictsReady) -> None:
        """Fill in the verdicts of rows already shown, the whole batch at once: the table is
        redrawn once, and only if one of them is in view (InboxTable.set_cells)."""
        if message.state != self.state or message.run != self._run:
            return
        table = self.query_one(InboxTable)
        gone = []
        current = self.current_id()
        changes = {}
        refilter = False
        for bid, v in message.verdicts.items():
            row = self.rows.get(bid)
            if row is None:
                continue
            if v is None:
                gone.append(bid)
                continue
            # A row drawn from its manifest's claims already shows these words as its subject.
            same = row.verdict is None and row.kind is not None and v.manifest is not None and v.manifest.subject == row.subject
            was = self.lens.shows(row) if self.lens.active else True
            row.verdict, row.stale = v, False
            if self.lens.active and self.lens.shows(row) != was:
                refilter = True  # its verdict decides the filter now
            if bid in table.rows:
                changes[bid] = self.changed_cells(row, subject=not same)
        table.set_cells(changes)
        if changes:
            self.resort(current)  # sorted by verdict or sender: rows go where their verdict puts them
        if refilter:
            self.refill()
        if gone:
            keep, old_order, old_index = current, list(self.shown_ids()), table.cursor_row
            self._remove(table, gone)
            shown = self.shown_ids()
            target = table.cursor_target(shown, keep, old_order, old_index)
            if target is not None:
                table.move_cursor(row=target)
                if keep is not None and keep not in shown:
                    self.announce_left(keep, target)
            self.show_empty()
        if current in message.verdicts:
            self.show_detail()
            self.refresh_bindings()
        if self._after is not None and self._after[0] in message.verdicts:
            bid, action = self._after
            self._after = None
            if self.current_id() == bid and self.app.screen is self and self.rows[bid].verdict is not None:
                getattr(self, f"action_{action}")()
        if self.loading:
            gcpause.hold()

    def on_unmount(self) -> None:
        gcpause.release()  # closed while a fill ran: nothing stays frozen

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab.id and event.tab.id != self.state:
            self.state = event.tab.id
            self.refresh_bindings()  # accept and reject leave the footer in the outbox, and come back
            # The old tab's rows go at once: nothing of another tab stays shown (or actionable) under this one.
            table = self.query_one(InboxTable)
            table.clear()
            self.rows = {}
            self.lens.marked.clear()  # marks are of one tab's rows; the filter words stay
            self.wants.clear()  # the widths follow this tab's cells
            self._dirty.clear()
            self._after = None
            table.loaded, table.early = False, 0
            self.show_detail()
            self.show_lens()
            self._full = True
            self._start_sync()  # any run for the old tab is cancelled (an exclusive worker)

    @staticmethod
    def cells(row: Row, now: object) -> list:  # kept for callers of the old API
        return row_cells(row, now)  # type: ignore[arg-type]
