"""The inbox: what is waiting for you, newest first, with the verdict gage computed.

Pending bundles come first (tab 1); accepted and rejected are one key away (2, 3), and
the bundles you made (the outbox) are tab 4, so any of them can be opened and exported.
Each row's verdict and sender come from `gage.verdict.compute`, never from what the
bundle says about itself; the subject is shown as the sender's words, literally. A
bundle that arrived over A2A is marked in the Via column; who the transport says sent
it is shown under the table as a claim (gage.tui.via).
The app reloads this screen when the watcher sees the inbox change. Rows are computed
in a thread worker (gage.tui.rows) and shown in one step on the UI thread, so a large
inbox never freezes the screen, and the cursor stays on the bundle it was on.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static, Tab, Tabs
from textual.worker import get_current_worker

from .. import store
from ..errors import GageError
from ..home import ALL_STATES, Home
from ..verdict import Verdict
from . import decide, export, safe, via
from .bindings import bindings_for
from .messages import RowsLoaded
from .rows import Cancelled, CheckCache, Row, load_rows

ROWS_GROUP = "inbox-rows"
VERDICT_STYLE = {"verified": "bold green", "unverified": "bold yellow", "invalid": "bold red"}
VERDICT_MARK = {"verified": "✔ verified", "unverified": "? unverified", "invalid": "✘ invalid"}
SENDER_STYLE = {"confirmed": "green", "candidate": "yellow", "unknown": "yellow"}
BAD_STYLE = "bold red"  # a compromised key, or a key a bad signature only names
MINE_MARK, MINE_STYLE = "✎ mine", "bold"
VIEWS = ALL_STATES  # the tabs: the inbox's three states, then the outbox
TAB_LABEL = {"pending": "1 Pending", "accepted": "2 Accepted", "rejected": "3 Rejected", "outbox": "4 Outbox"}
EMPTY = {
    "pending": "Nothing is waiting for you. New bundles appear here the moment they arrive.",
    "accepted": "Nothing accepted yet.",
    "rejected": "Nothing rejected.",
    "outbox": "You have made no bundles yet. `gage bundle` makes one; it is kept here.",
}
# Deciding is for what arrived: these keys leave the footer while the outbox is shown.
INBOX_ONLY = ("accept", "reject")
HOW_NOTE = {
    "unattended": "accepted UNATTENDED: by the watcher's budgeted rule, no person reviewed it",
    "human-unverified": "accepted by a person, with the sender unverified",
}


def age_text(when: datetime | None, now: datetime) -> str:
    """A short age: 40s, 5m, 3h, 2d, 6w. A time in the future (a skewed clock) shows as "now"."""
    if when is None:
        return "?"
    secs = int((now - when).total_seconds())
    if secs < 60:
        return f"{max(secs, 0)}s" if secs >= 0 else "now"
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return "now"


def sender_style(v: Verdict) -> str:
    """The sender cell's colour, from the verdict's sender only (never a contacts lookup).

    A key retired as superseded still counts as its contact's (green, shown as their
    previous key); one retired as compromised counts for nothing and is drawn in red.
    """
    s = v.sender
    if s.is_me:
        return ""
    if not s.signature_ok:
        return BAD_STYLE if s.key is not None else ""
    if s.retired is not None:
        return SENDER_STYLE["confirmed"] if s.name is not None else BAD_STYLE
    return SENDER_STYLE.get(s.status, "")


class InboxTable(DataTable):
    """The inbox's table. Until a tab's first rows arrive it counts Up and Down presses
    and the screen applies them to the rows once shown, so keys typed while a large
    inbox loads are not lost."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.loaded = False
        self.early = 0  # net Down presses before the rows arrived

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


class InboxScreen(Screen[None]):
    BINDINGS = bindings_for("inbox")
    GROUP = "inbox"

    def __init__(self) -> None:
        super().__init__(id="inbox")
        self.state = "pending"
        self.rows: dict[str, Row] = {}
        self.cache = CheckCache()  # display only: see gage.tui.rows
        self._loading = False  # a row worker is running, or its rows are not shown yet
        self._again = False  # a reload was asked for while one ran
        self.loads = 0  # row sets shown so far

    @property
    def loading(self) -> bool:
        return self._loading

    def compose(self) -> ComposeResult:
        yield Header()
        yield Tabs(*(Tab(TAB_LABEL[s], id=s) for s in VIEWS), id="states")
        yield InboxTable(id="inbox-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="inbox-empty", markup=False)
        yield Static("", id="inbox-detail", markup=False)
        yield Static("", id="inbox-via", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(InboxTable)
        table.add_column("Verdict", width=12, key="verdict")
        table.add_column("Sender", width=28, key="sender")
        table.add_column("Via", width=4, key="via")
        table.add_column("Kind", width=14, key="kind")
        table.add_column("Age", width=4, key="age")
        table.add_column("Subject", key="subject")
        self.query_one("#inbox-empty", Static).display = False
        self.reload()
        table.focus()
        self.set_interval(30, self.refresh_ages)

    def refresh_ages(self) -> None:
        """Ages move on while the app is open; only that column is redrawn (no recompute)."""
        table = self.query_one(InboxTable)
        now = self.app.now()  # type: ignore[attr-defined]
        for bid, row in self.rows.items():
            try:
                table.update_cell(bid, "age", Text(age_text(row.arrived, now)))
            except Exception:  # noqa: BLE001 - the row went away between reloads
                continue

    # --- loading ----------------------------------------------------------------------

    def reload(self) -> None:
        """Recompute the current tab's rows in a thread worker; they are shown when ready.

        Reloads asked for while one runs fold into a single run after it: a burst of
        watcher events costs at most one extra load, and every load finishes and is
        shown, so a steady stream of arrivals cannot starve the screen of updates.
        """
        if self._loading:
            self._again = True
            return
        self._start_load()

    def _start_load(self) -> None:
        self._loading = True
        self._again = False
        home = self.app.home  # type: ignore[attr-defined]
        self.run_worker(
            partial(self._load, home, self.state), thread=True, exclusive=True, group=ROWS_GROUP, name=f"rows {self.state}"
        )

    def _load(self, home: Home, state: str) -> None:
        """In the worker thread: compute, then post the rows to the UI thread. No widget is touched here."""
        worker = get_current_worker()
        try:
            rows = load_rows(home, state, cache=self.cache, cancelled=lambda: worker.is_cancelled)
            counts = {s: len(store.list_bundles(home, (s,))) for s in VIEWS}
            message = RowsLoaded(state, rows, counts)
        except Cancelled:
            return
        except (GageError, OSError) as exc:
            message = RowsLoaded(state, error=safe.error_text(exc))
        self.post_message(message)

    def on_rows_loaded(self, message: RowsLoaded) -> None:
        self._loading = False
        if message.state == self.state:
            self.show_rows(message)
        if self._again or message.state != self.state:
            self._start_load()

    def show_rows(self, message: RowsLoaded) -> None:
        """Replace the rows in one step on the UI thread, keeping the cursor on the same bundle.

        Nothing runs between the old rows and the new ones, so a key pressed at any
        moment acts on the bundle shown highlighted. If that bundle left this tab the
        cursor goes to its nearest neighbour that is still here (the next one, else the
        one before); before a tab's first rows, Up and Down pressed while loading apply.
        """
        table = self.query_one(InboxTable)
        if message.error is not None:
            table.loaded = True
            self.query_one("#inbox-detail", Static).update(Content.styled(message.error, "bold red"))
            return
        keep = self.current_id()
        old_order = list(self.rows)
        old_index = table.cursor_row
        old_y = table.scroll_y
        now = self.app.now()  # type: ignore[attr-defined]
        for s in VIEWS:
            self.query_one(Tabs).query_one(f"#{s}", Tab).label = f"{TAB_LABEL[s]} ({message.counts.get(s, 0)})"
        table.clear()
        self.rows = {}
        for row in message.rows:
            self.rows[row.id] = row
            table.add_row(*self.cells(row, now), key=row.id)
        target = self._cursor_target(table, keep, old_order, old_index)
        table.loaded, table.early = True, 0
        if target is not None:
            table.move_cursor(row=target)
            if old_y:
                table.call_after_refresh(self._restore_scroll, old_y)
        self.loads += 1
        empty = self.query_one("#inbox-empty", Static)
        empty.update(EMPTY[self.state])
        empty.display = not self.rows
        table.display = bool(self.rows)
        if table.display and self.focused is None:
            table.focus()
        self.show_detail()

    def _cursor_target(self, table: InboxTable, keep: str | None, old_order: list[str], old_index: int) -> int | None:
        if not self.rows:
            return None
        if not table.loaded:
            return min(table.early, len(self.rows) - 1)
        if keep in self.rows:
            return table.get_row_index(keep)
        if keep in old_order:
            i = old_order.index(keep)
            after = [b for b in old_order[i + 1 :] if b in self.rows]
            before = [b for b in reversed(old_order[:i]) if b in self.rows]
            if after or before:
                return table.get_row_index((after or before)[0])
        return min(old_index, len(self.rows) - 1)

    def _restore_scroll(self, y: float) -> None:
        """Keep the view where the person left it, as far as the highlighted row stays in view."""
        table = self.query_one(InboxTable)
        table.scroll_to(y=y, animate=False, immediate=True)
        table.move_cursor(row=table.cursor_row)

    @staticmethod
    def cells(row: Row, now: datetime) -> list[Text]:
        v = row.verdict
        m = v.manifest
        if v.state == "accepted" and v.accepted_how == "unattended":
            # Shown as unattended wherever the bundle is shown: the verdict's mark and colour, then the word.
            mark = Text(VERDICT_MARK[v.verdict][:2] + "unattended", style=VERDICT_STYLE[v.verdict] + " reverse")
        elif v.state == "outbox" and v.sender.is_me and v.verdict != "invalid":
            # Signed by this home's own key: "unverified" (no contact is me) would only mislead here.
            mark = Text(MINE_MARK, style=MINE_STYLE)
        else:
            mark = Text(VERDICT_MARK[v.verdict], style=VERDICT_STYLE[v.verdict])
        return [
            mark,
            Text(safe.one_line(v.sender.describe(), limit=40), style=sender_style(v)),
            via.marker(v),
            Text(m.kind if m else "?"),
            Text(age_text(row.arrived, now)),
            Text(safe.one_line(m.subject if m and m.subject is not None else "(no subject)", limit=120)),
        ]

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
        """Under the table: the highlighted bundle's id, full subject and claimed name."""
        detail = self.query_one("#inbox-detail", Static)
        row = self.current()
        self.query_one("#inbox-via", Static).update(via.detail_line(row.verdict) if row else "")
        if row is None:
            detail.update("")
            return
        v = row.verdict
        m = v.manifest
        claim = ""
        if v.sender.name is None and not v.sender.is_me and v.sender.claimed_name is not None:
            claim = f"  claims to be \"{safe.one_line(v.sender.claimed_name, limit=60)}\" (unchecked)"
        how = HOW_NOTE.get(v.accepted_how or "", "") if v.state == "accepted" else ""
        detail.update(
            Content.assemble(
                Content.styled(f"{row.id[:12]}  ", "bold"),
                Content.styled(f"{how}  ", "bold reverse") if how else "",
                Content(safe.one_line(m.subject if m and m.subject is not None else "(no subject)")),
                Content.styled(claim, "yellow"),
            )
        )

    # --- events and actions -------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab.id and event.tab.id != self.state:
            self.state = event.tab.id
            self.refresh_bindings()  # accept and reject leave the footer in the outbox, and come back
            # The old tab's rows go at once: nothing of another tab stays shown (or actionable) under this one.
            table = self.query_one(InboxTable)
            table.clear()
            self.rows = {}
            table.loaded, table.early = False, 0
            self.show_detail()
            self.reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide accept and reject while the outbox is shown: nothing there is yours to decide on."""
        if action in INBOX_ONLY and self.state == "outbox":
            return False
        return True

    def action_show(self, state: str) -> None:
        self.query_one(Tabs).active = state

    def action_open(self) -> None:
        row = self.current()
        if row is not None:
            self.app.open_bundle(row.id)  # type: ignore[attr-defined]

    def action_accept(self) -> None:
        row = self.current()
        if row is not None:
            decide.accept(self, row.verdict)

    def action_reject(self) -> None:
        row = self.current()
        if row is not None:
            decide.reject(self, row.verdict)

    def action_pair(self) -> None:
        row = self.current()
        self.app.pair_with_sender(row.verdict if row else None)  # type: ignore[attr-defined]

    def action_export(self) -> None:
        export.start(self, self.current_id())
