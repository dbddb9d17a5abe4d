"""What the person does with the inbox: select, filter, mark, decide; and how the table is laid out.

gage.tui.inbox loads a tab's rows and keeps them current; this mixin is the other half,
everything keyed by bundle id (so the row source can change under it): which rows the
table shows (gage.tui.inbox_lens), the columns' widths at every size, the preview pane at
wide sizes (gage.tui.inbox_preview), the cursor that stays on its bundle, and the actions,
each offered only where it applies (gage.tui.applies).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual.content import Content
from textual.coordinate import Coordinate
from textual.events import Resize
from textual.widgets import DataTable, Input, Static

from gage.tui import decide, export, files, safe
from gage.tui.applies import applies
from gage.tui.bulk import BulkBar
from gage.tui.inbox_cells import age_cell, cells, claims, detail
from gage.tui.inbox_keys import InboxKeys
from gage.tui.inbox_lens import GROWS, LABELS, Lens, layout
from gage.tui.inbox_preview import PANE_WIDTH, WIDE, PreviewPane
from gage.tui.inbox_table import InboxTable
from gage.tui.rows import Row

# What an empty tab says: how bundles get in, so the person is never left guessing.
EMPTY = {
    "pending": (
        "Nothing is waiting for you. Bundles get here when someone sends you one: `gage import PATH` takes a"
        " bundle folder or file, `gage watch FOLDER` imports whatever lands in a shared folder, and"
        " `gage a2a serve` receives them from agents. New bundles appear here the moment they arrive;"
        " none is accepted until you accept it."
    ),
    "accepted": "Nothing accepted yet.",
    "rejected": "Nothing rejected.",
    "outbox": "You have made no bundles yet. `gage bundle` makes one; it is kept here.",
}

MARK = "●"

class InboxView(InboxKeys):
    """Mixed into InboxScreen, which provides `rows`, `state`, `wanted` and `_request`."""

    rows: dict[str, Row]
    state: str
    lens: Lens
    _columns: list[str]
    _after: tuple[str, str] | None
    wants: dict[str, int]  # the widest cell of each column in this tab so far (its width follows)
    _laid_out: dict[str, int]  # the widths the columns have now
    _relayout_asked: bool

    # --- layout -----------------------------------------------------------------------

    def _pane_shown(self) -> bool:
        return self.app.size.width >= WIDE

    def _widths(self) -> dict[str, int]:
        width = self.app.size.width
        if self._pane_shown():
            width -= int(width * PANE_WIDTH)
        via_used = any(r.verdict is not None and r.verdict.transport is not None for r in self.rows.values())
        labels = {k: self.lens.label(k) for k in LABELS}
        widths = layout(width - 1, via=via_used, marks=bool(self.lens.marked), wants=self.wants, labels=labels)  # 1: the scrollbar
        self._laid_out = widths
        return widths

    def measure(self, c: dict[str, Any]) -> None:
        """Note how wide a row's cells are (the widths follow the widest, gage.tui.inbox_lens.layout);
        a cell wider than its column lays the columns out again, once, after this refresh."""
        wider = False
        for k in GROWS:
            cell = c.get(k)
            if cell is None:
                continue
            n = cell.cell_len
            if n > self.wants.get(k, 0):
                self.wants[k] = n
                wider = wider or n > self._laid_out.get(k, 0)
        if wider and not self._relayout_asked:
            self._relayout_asked = True
            self.call_after_refresh(self.relayout)

    def on_resize(self, event: Resize) -> None:
        pane = self.query_one(PreviewPane)
        pane.display = self._pane_shown()
        if pane.display:
            pane.styles.width = int(self.app.size.width * PANE_WIDTH)
        self.relayout()
        self.show_detail()
        self.refresh_bindings()  # the footer's keys follow the width (active_bindings)

    def relayout(self) -> None:
        """New widths for the columns; the table is refilled only if the set of columns changed."""
        self._relayout_asked = False
        widths = self._widths()
        if list(widths) != self._columns:
            self.refill(widths)
            return
        table = self.query_one(InboxTable)
        for column in table.ordered_columns:
            column.width = widths[str(column.key.value)]
            column.auto_width = False
        table._require_update_dimensions = True
        table._clear_caches()
        table.refresh(layout=True)

    def cells_of(self, row: Row, now: datetime) -> list[Any]:
        c: dict[str, Any] = dict(cells(row))
        c["age"] = age_cell(row, now)
        c["mark"] = Text(MARK if row.id in self.lens.marked else "", style="bold $accent")
        self.measure(c)
        return [c[k] for k in self._columns]

    def changed_cells(self, row: Row, subject: bool) -> dict[str, Any]:
        """A row's cells after its verdict came, for the columns the table has."""
        out = {k: v for k, v in cells(row, subject=subject).items() if k in self._columns}
        self.measure(out)
        if row.verdict is not None and row.verdict.transport is not None and "via" not in self._columns:
            self.call_after_refresh(self.relayout)  # a carrier's mark: the Via column takes space now
        return out

    def refill(self, widths: dict[str, int] | None = None) -> None:
        """The table again from the tab's rows through the lens (filter, marks), cursor on its bundle."""
        table = self.query_one(InboxTable)
        keep = self.current_id()
        widths = widths or self._widths()
        table.clear(columns=True)
        self._columns = list(widths)
        for k in self._columns:
            table.add_column(self.lens.label(k), width=widths[k], key=k)
        now = self.app.now()  # type: ignore[attr-defined]
        table.add_rows((r.id, self.cells_of(r, now)) for r in self.rows.values() if self.lens.shows(r))
        if keep is not None and keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))
        self.show_lens()
        self.show_empty()
        self.show_detail()
        self.refresh_bindings()  # what applies follows the row now highlighted

    def shown(self, bid: str) -> bool:
        return bid in self.query_one(InboxTable).rows

    def shown_ids(self) -> dict[str, None]:
        """The ids the table shows (all rows when nothing filters), for the cursor's neighbours."""
        if not self.lens.active:
            return dict.fromkeys(self.rows)
        return {bid: None for bid in self.rows if self.shown(bid)}

    def show_empty(self) -> None:
        table = self.query_one(InboxTable)
        empty = self.query_one("#inbox-empty", Static)
        any_shown = table.row_count > 0
        if self.rows and not any_shown:
            empty.update("Nothing matches the filter. Esc clears it.")
        else:
            empty.update(EMPTY[self.state])
        empty.display = not any_shown
        table.display = any_shown

    def show_lens(self) -> None:
        bar = self.query_one("#inbox-lens", Static)
        bar.display = self.lens.active or bool(self.lens.marked)
        bar.update(self.lens.describe(self.query_one(InboxTable).row_count, len(self.rows)))

    # --- the selection ------------------------------------------------------------------

    def current_id(self) -> str | None:
        table = self.query_one(InboxTable)
        if not self.rows or table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:  # noqa: BLE001 - no cursor row (empty table)
            return None
        return str(key.value) if key.value is not None else None

    def current(self) -> Row | None:
        bid = self.current_id()
        return self.rows.get(bid) if bid else None

    def show_detail(self) -> None:
        """Under the table: the highlighted bundle's id, full subject and claimed name; beside it, at
        wide sizes, its frame and a bounded preview."""
        row = self.current()
        box = self.query_one("#inbox-detail", Static)
        box.remove_class("error")
        # One widget for the detail and the claims under it: two were painted a moment apart,
        # one bundle's id over another's claims (each widget's refresh has its own idle).
        box.update(Content.assemble(detail(row), "\n", claims(row)) if row else "")
        pane = self.query_one(PreviewPane)
        if pane.display:
            pane.show(row.id if row else None, row.verdict if row else None)

    def announce_left(self, gone: str, target: int) -> None:
        """The highlighted bundle left this tab: the cursor is on another one now, and the
        person is told which, so a key meant for the one that left is not pressed unawares."""
        if gone in self.query_one(BulkBar).ids:
            return  # one of those the person just decided together: they know it left
        table = self.query_one(InboxTable)
        try:
            now_on = str(table.coordinate_to_cell_key(Coordinate(target, 0)).row_key.value)
        except Exception:  # noqa: BLE001 - no such row: nothing to name
            return
        row = self.rows.get(now_on)
        subject = safe.one_line(row.subject if row and row.subject is not None else "(no subject)", limit=40)
        self.app.notify(
            f"{gone[:12]} left {self.state}. The cursor is now on {now_on[:12]} \"{subject}\".",
            title="Selection moved",
            markup=False,
            timeout=5,
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail()
        if self._offers() != self._offered:
            self.refresh_bindings()  # the footer offers what applies to this bundle

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    # --- filter and marks ---------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#inbox-filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "inbox-filter":
            self.lens.text = event.value
            self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "inbox-filter":
            event.stop()
            self.query_one(InboxTable).focus()  # the filter stays; the keys act on the rows again

    def action_verdict_filter(self) -> None:
        self.lens.next_verdict()
        self.refill()

    def action_clear_filter(self) -> None:
        """Esc: the filter words and verdict filter go, then (a second Esc) the marks."""
        box = self.query_one("#inbox-filter", Input)
        if self.lens.active or box.display:
            self.lens.text, self.lens.verdict = "", None
            box.value = ""
            box.display = False
        elif self.lens.marked:
            self.lens.marked.clear()
        self.refill()
        self.query_one(InboxTable).focus()
        self.refresh_bindings()

    def action_mark(self) -> None:
        """Space: mark or unmark the highlighted bundle, then move down (for one act on several)."""
        row = self.current()
        if row is None:
            return
        marks_before = bool(self.lens.marked)
        self.lens.marked ^= {row.id}
        if bool(self.lens.marked) != marks_before:
            self.refill()  # the mark column comes or goes
        else:
            self.query_one(InboxTable).set_cells({row.id: {"mark": Text(MARK if row.id in self.lens.marked else "", style="bold")}})
            self.show_lens()
        self.query_one(InboxTable).action_cursor_down()
        self.refresh_bindings()

    def forget_marks(self, ids: list[str]) -> None:
        """Rows that left the tab are no longer marked."""
        if self.lens.marked & set(ids):
            self.lens.marked -= set(ids)
            if not self.lens.marked:
                self.call_after_refresh(self.refill)

    def marked_rows(self) -> list[Row]:
        return [r for bid, r in self.rows.items() if bid in self.lens.marked]

    # --- actions ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer exactly what applies to the highlighted bundle (gage.tui.applies), or to the
        marked ones for accept and reject: the footer, the palette and the keys all ask here."""
        if action == "open" and self.focused is self.query_one("#inbox-filter", Input):
            return False  # Enter in the filter goes back to the rows; it opens nothing
        if action == "clear_filter":
            return self.lens.active or bool(self.lens.marked) or self.query_one("#inbox-filter", Input).display
        if action in ("accept", "reject") and self.query_one(BulkBar).running:
            return False  # one decision at a time: the one running shows its progress
        if action in ("accept", "reject") and self.lens.marked:
            return any(applies(action, r.state, r.verdict) for r in self.marked_rows())
        row = self.current()
        return applies(action, row.state if row else None, row.verdict if row else None)

    def action_show(self, state: str) -> None:
        from textual.widgets import Tabs

        self.query_one(Tabs).active = state

    def action_open(self) -> None:
        row = self.current()
        if row is not None:
            self.app.open_bundle(row.id)  # type: ignore[attr-defined]

    def _checked(self, action: str) -> Row | None:
        """The highlighted row if its verdict is known; else the action waits for it (first in line)."""
        row = self.current()
        if row is None or row.verdict is not None:
            return row
        self._after = (row.id, action)
        self.wanted.set([row.id, *self.wanted.get()])  # type: ignore[attr-defined]
        self.app.notify("Still checking this bundle; that happens as soon as its verdict is ready.", markup=False, timeout=3)
        self._request()  # type: ignore[attr-defined]
        return None

    def _marked_verdicts(self) -> list[Any] | None:
        rows = self.marked_rows()
        waiting = [r for r in rows if r.verdict is None]
        if waiting:
            self.app.notify(f"{len(waiting)} of the marked bundles are still being checked; try again in a moment.", markup=False)
            self._request()  # type: ignore[attr-defined]
            return None
        return [r.verdict for r in rows]

    def _decided(self, state: str) -> None:
        self.lens.marked.clear()
        self.refill()

    def action_accept(self) -> None:
        if self.lens.marked:
            verdicts = self._marked_verdicts()
            if verdicts:
                decide.accept_many(self, verdicts, self._decided)
            return
        row = self._checked("accept")
        if row is not None and row.verdict is not None:
            decide.accept(self, row.verdict)

    def action_reject(self) -> None:
        if self.lens.marked:
            verdicts = self._marked_verdicts()
            if verdicts:
                decide.reject_many(self, verdicts, self._decided)
            return
        row = self._checked("reject")
        if row is not None and row.verdict is not None:
            decide.reject(self, row.verdict)

    def action_pair(self) -> None:
        if self.current() is not None and self._checked("pair") is None:
            return
        row = self.current()
        self.app.pair_with_sender(row.verdict if row else None)  # type: ignore[attr-defined]

    def action_export(self) -> None:
        export.start(self, self.current_id())

    def action_folder(self) -> None:
        files.show_folder(self, self.current_id())

    def action_save(self) -> None:
        files.save(self, self.current_id())

