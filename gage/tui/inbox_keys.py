"""The inbox's keys for moving, sorting and marking, and the footer that offers them, so every key is discoverable.

j, k, g and G move as Down, Up, Home and End (the table has them too: gage.tui.table_keys);
`S` sorts by the next column and a click on a header sorts by that column (again: the other
way), the order kept in the lens (gage.tui.inbox_lens) so rows that arrive go where they
sort; `*` marks every row shown. The footer is built anew only when what it offers changes,
and leaves out S where it would push a key off an 80-column line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual.css.query import NoMatches
from textual.widgets import DataTable

from gage.tui.bindings import INBOX
from gage.tui.inbox_lens import SORTABLE, Lens
from gage.tui.inbox_table import InboxTable
from gage.tui.rows import Row

VERDICT_SORTS = ("verdict", "sender", "via")  # sorts a verdict's arrival can change
FOOTER_SORT_FROM = 100  # columns from which the footer has room for S (Sort)

if TYPE_CHECKING:
    from textual.screen import Screen

    Base = Screen[None]
else:
    Base = object


class InboxKeys(Base):
    """Mixed into InboxView: needs `rows`, `lens`, `refill`, `shown_ids`."""

    rows: dict[str, Row]
    lens: Lens
    _offered: tuple[bool | None, ...] = ()  # what the footer offered when last built

    if TYPE_CHECKING:  # InboxView's

        def refill(self, widths: dict[str, int] | None = None) -> None: ...
        def shown_ids(self) -> dict[str, None]: ...

    @property
    def active_bindings(self) -> dict[str, Any]:
        """What the footer shows: below FOOTER_SORT_FROM columns, not S (Sort), which would push the
        last key off an 80-column footer; S still works there, and help names it."""
        shown = super().active_bindings  # type: ignore[misc]
        found = shown.get("S")
        if found is not None and self.app.size.width < FOOTER_SORT_FROM:
            shown["S"] = found._replace(binding=replace(found.binding, show=False))
        return shown  # type: ignore[no-any-return]

    def _offers(self) -> tuple[bool | None, ...]:
        try:
            return tuple(self.check_action(k.action, ()) for k in INBOX if k.show)
        except NoMatches:  # not composed yet
            return ()

    def refresh_bindings(self) -> None:
        """The footer again (Textual builds it anew: a tenth of a second on a busy machine). A
        move to a row that offers the same keys as the last one leaves it as it is, so holding
        Down through a long inbox is not slowed by the footer."""
        self._offered = self._offers()
        super().refresh_bindings()

    def action_mark_all(self) -> None:
        """`*`: mark every row shown (what the filter shows is "all"); if they all are, unmark them."""
        shown = set(self.shown_ids())
        if shown and shown <= self.lens.marked:
            self.lens.marked -= shown
        else:
            self.lens.marked |= shown
        self.refill()
        self.refresh_bindings()

    # --- order ----------------------------------------------------------------------------

    def put_in_order(self) -> None:
        """The tab's rows in the lens's order (arrival, or the column sorted by): `rows` is
        always in display order, which the cursor's neighbours and the marks rely on."""
        self.rows = {r.id: r for r in self.lens.ordered(list(self.rows.values()))}

    def resort(self, keep: str | None) -> None:
        """Verdicts came while the rows are sorted by what a verdict decides (the verdict, the
        sender, the carrier): each row goes to its place, and the cursor stays on its bundle."""
        if not self.lens.sorted_otherwise or self.lens.sort not in VERDICT_SORTS:
            return
        self.put_in_order()
        table = self.query_one(InboxTable)
        rank = {bid: i for i, bid in enumerate(self.rows)}
        table.sort("age", key=lambda cell: rank.get(cell.order[1], 0))  # the Age cell carries its row's id
        if keep is not None and keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))

    def sort_rows(self) -> None:
        self.put_in_order()
        self.refill()  # the headers say the order; the cursor stays on its bundle
        table = self.query_one(InboxTable)
        table.call_after_refresh(table._scroll_cursor_into_view)

    def action_sort_next(self) -> None:
        self.lens.sort_next()
        self.sort_rows()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column's header sorts by it; a second click reverses."""
        event.stop()
        column = str(event.column_key.value)
        if column in SORTABLE:
            self.lens.sort_by(column)
            self.sort_rows()

    def action_cursor(self, where: str) -> None:
        """j, k, g, G when the table has no focus (it has its own bindings for them)."""
        table = self.query_one(InboxTable)
        moves = {"down": table.action_cursor_down, "up": table.action_cursor_up, "first": table.action_scroll_top, "last": table.action_scroll_bottom}
        moves[where]()
