"""The inbox's table: a DataTable that stays fast at 10,000 rows and keeps early keys.

DataTable renders only the rows in view, but rebuilds two lists of every row whenever
any cell changes; filling in 10,000 verdicts one batch at a time then cost time in
proportion to the inbox on every frame. Rows here are all one line high, so those lists
are replaced by lookups (`_RowsInOrder`). `tests/tui/test_inbox_scale.py` checks that
they agree with DataTable's own on a small table, so a Textual upgrade that changes
them is caught.

Adding 10,000 rows and filling in their verdicts went the same way: `add_row` assigns the
cursor (a reactive, with its watchers) and measures every cell of every row; `update_cell`
asks for a redraw per cell. `add_rows` and `set_cells` do what those do for a whole batch
at once (one cursor assignment, a measure of the one auto-width column only, one cache
invalidation, and a redraw only when a changed row is in view). Profiled with py-spy at
10,000 pending (a restart), the UI thread's work during a fill went from about 3.9 s to
2.5 s, and that work takes the GIL from the verdict worker (bench/README.md, bench_tui.py).
A side-by-side test checks they leave the table as `add_row` and `update_cell` do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest
from typing import Any, overload

from rich.cells import cell_len
from rich.text import Text
from textual.coordinate import Coordinate
from textual.render import measure
from textual.widgets import DataTable
from textual.widgets._data_table import (
    CellDoesNotExist,
    ColumnKey,
    DuplicateKey,
    RowKey,
    default_cell_formatter,
)
from textual.widgets._data_table import Row as TableRow

from gage.tui.table_keys import RowKeys


class _RowsInOrder(Sequence[Any]):
    """A DataTable's rows in display order, looked up on demand instead of copied.

    DataTable rebuilds two lists of every row (its `ordered_rows`, and `_y_offsets`, one
    entry per line) whenever any cell changes, which made each verdict filled in cost
    time in proportion to the inbox. Every inbox row is one line high, so the row at an
    index, and the row on a line, are one dictionary lookup away.
    """

    def __init__(self, table: DataTable[Any], lines: bool) -> None:
        self._table = table
        self._lines = lines  # True: (row key, line in row) pairs, as `_y_offsets` holds

    def __len__(self) -> int:
        return len(self._table.rows)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        key = self._table._row_locations.get_key(i)
        return (key, 0) if self._lines else self._table.rows[key]

    def clear(self) -> None:
        """DataTable.clear() clears its cached line list; there is nothing here to clear."""


class InboxTable(RowKeys):
    """The inbox's table. Until a tab's first rows arrive it counts Up and Down presses
    and the screen applies them to the rows once shown, so keys typed while a large
    inbox loads are not lost. Rows are all one line high (`_RowsInOrder`)."""

    @property
    def ordered_rows(self) -> Any:
        return _RowsInOrder(self, lines=False)

    @property
    def _y_offsets(self) -> Any:
        return _RowsInOrder(self, lines=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.loaded = False
        self.early = 0  # net Down presses before the rows arrived

    def on_resize(self) -> None:
        """The table grew shorter (the marks bar or the filter came, the terminal shrank): the
        highlighted row is the one the keys act on, so it is scrolled back into view."""
        self._scroll_cursor_into_view()

    def action_cursor_down(self) -> None:
        if not self.loaded:
            self.early += 1
            return
        super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if not self.loaded:
            self.early = max(0, self.early - 1)
            return
        super().action_cursor_up()

    def add_rows(self, rows: Iterable[tuple[str, Sequence[Any]]]) -> None:
        """Add rows (key, cells) at the bottom, as `add_row` would one by one, with its per-row
        work done once: the cursor assigned once, one idle check, one cache invalidation.
        Rows are one line high and have no label (what `_RowsInOrder` relies on)."""
        columns = [c.key for c in self.ordered_columns]
        before = n = self.row_count
        locations, data, meta, new = self._row_locations, self._data, self.rows, self._new_rows
        for key, cells in rows:
            row_key = RowKey(key)
            if row_key in locations:
                raise DuplicateKey(f"The row key {row_key!r} already exists.")
            if len(cells) > len(columns):
                raise ValueError("More values provided than there are columns.")
            locations[row_key] = n
            data[row_key] = dict(zip_longest(columns, cells))
            meta[row_key] = TableRow(row_key, 1, None, False)
            new.add(row_key)
            n += 1
        if n == before:
            return
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        if before == 0 and self.columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()  # as add_row does when the first row makes a cursor possible
        self._update_count += 1
        self.check_idle()

    def set_cells(self, changes: Mapping[str, Mapping[str, Any]]) -> None:
        """Replace cells of many rows ({row key: {column key: cell}}), as `update_cell` would
        one by one: one cache invalidation for the batch, and a redraw only if a changed row is
        in view (a row out of view is drawn from its new cells when it scrolls in, since the
        table's render caches are keyed by the update count bumped here)."""
        if not changes:
            return
        top = int(self.scroll_y)
        height = self.size.height
        visible = height == 0  # not laid out yet: redraw, to be safe
        for key, cells in changes.items():
            row_key = RowKey(key)
            row = self._data.get(row_key)
            index = self._row_locations.get(row_key)
            if row is None or index is None:
                raise CellDoesNotExist(f"No row exists for row_key={row_key!r}.")
            for column, value in cells.items():
                column_key = ColumnKey(column)
                if column_key not in self._column_locations:
                    raise CellDoesNotExist(f"No cell exists for row_key={row_key!r}, column_key={column_key!r}.")
                row[column_key] = value
            visible = visible or top <= index < top + height
        self._update_count += 1
        if visible:
            self.refresh()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """DataTable measures every cell of every new row; only auto-width columns use what it
        measures (the others have a fixed width), and a one-line `Text` measures as its length."""
        new_rows = list(new_rows)
        if self._labelled_row_exists or any((r := self.rows.get(k)) is not None and (r.auto_height or r.label is not None) for k in new_rows):
            super()._update_dimensions(new_rows)
            return
        auto = [c for c in self.ordered_columns if c.auto_width]
        console = self.app.console
        for row_key in new_rows:
            row = self._data.get(row_key)
            if row is None:
                continue  # removed before the table was idle
            for column in auto:
                cell = row.get(column.key)
                if cell is None:
                    continue
                if isinstance(cell, Text):
                    width = max((cell_len(line) for line in cell.plain.splitlines()), default=0)
                else:
                    width = measure(console, default_cell_formatter(cell, wrap=False, height=1), 1)
                if width > column.content_width:
                    column.content_width = width
        super()._update_dimensions(())  # the virtual size, from the widths

    def in_view(self) -> list[str]:
        """The ids of the rows on screen (a screenful from the top before the first layout)."""
        table = self
        top = int(table.scroll_y)
        height = table.size.height or 50
        out = []
        for i in range(top, min(top + height, table.row_count)):
            key = table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value
            if key is not None:
                out.append(key)
        return out

    def cursor_target(self, rows: dict[str, Any], keep: str | None, old_order: list[str], old_index: int) -> int | None:
        """Where the cursor goes after rows changed: its bundle, else its nearest neighbour still here."""
        table = self
        if not rows:
            return None
        if not table.loaded:
            return min(table.early, len(rows) - 1)
        if keep in rows:
            return table.get_row_index(keep)
        if keep in old_order:
            i = old_order.index(keep)
            after = [b for b in old_order[i + 1 :] if b in rows]
            before = [b for b in reversed(old_order[:i]) if b in rows]
            if after or before:
                return table.get_row_index((after or before)[0])
        return max(0, min(old_index, len(rows) - 1))

    def restore_scroll(self, y: float) -> None:
        """Keep the view where the person left it, as far as the highlighted row stays in view."""
        table = self
        table.scroll_to(y=y, animate=False, immediate=True)
        table.move_cursor(row=table.cursor_row)
