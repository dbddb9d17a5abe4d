"""Keys for a table of rows that people move through by row, never sideways.

DataTable's Home and End scroll to the leftmost and rightmost column when the cursor
is a row cursor, and Left and Right scroll sideways: Home did not go to the top, so
"Home, then Down twice" reached a different bundle each time, and Right scrolled the
verdict off screen. Here Home and End (and g, G) go to the first and last row, j and k
move like Down and Up, and Left and Right do nothing: a row's columns always fit.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import DataTable


class RowKeys(DataTable[Any]):
    """A row-cursor DataTable with the keys above."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    def action_scroll_home(self) -> None:
        self.action_scroll_top()

    def action_scroll_end(self) -> None:
        self.action_scroll_bottom()

    def action_cursor_left(self) -> None:
        """Nothing to the left: the columns fit the width."""

    def action_cursor_right(self) -> None:
        """Nothing to the right: the columns fit the width."""
