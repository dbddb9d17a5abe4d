"""The inbox: what is waiting for you, newest first, with the verdict gage computed.

Pending bundles come first (tab 1); accepted and rejected are one key away (2, 3).
Each row's verdict and sender come from `gage.verdict.compute`, never from what the
bundle says about itself; the subject is shown as the sender's words, literally.
The app reloads this screen when the watcher sees the inbox change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static, Tab, Tabs

from .. import store
from ..contacts import Contacts
from ..errors import GageError
from ..home import STATES, Home
from ..verdict import Verdict, compute
from . import decide, safe
from .bindings import bindings_for

VERDICT_STYLE = {"verified": "bold green", "unverified": "bold yellow", "invalid": "bold red"}
VERDICT_MARK = {"verified": "✔ verified", "unverified": "? unverified", "invalid": "✘ invalid"}
SENDER_STYLE = {"confirmed": "green", "candidate": "yellow", "unknown": "yellow"}
TAB_LABEL = {"pending": "1 Pending", "accepted": "2 Accepted", "rejected": "3 Rejected"}
EMPTY = {
    "pending": "Nothing is waiting for you. New bundles appear here the moment they arrive.",
    "accepted": "Nothing accepted yet.",
    "rejected": "Nothing rejected.",
}


def parse_time(text: str | None) -> datetime | None:
    try:
        return datetime.strptime(text or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


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


@dataclass
class Row:
    verdict: Verdict

    @property
    def id(self) -> str:
        return self.verdict.id or self.verdict.path.name

    @property
    def arrived(self) -> datetime | None:
        """When it reached this home (the journal), else the sender's own clock."""
        v = self.verdict
        first = v.seen.first_received if v.seen else None
        return parse_time(first) or parse_time(v.manifest.created if v.manifest else None)


def load_rows(home: Home, state: str) -> list[Row]:
    """Verdicts for every bundle in one state. A bundle that vanishes or is half-written
    while we look is skipped or shown as invalid; it never stops the listing."""
    contacts = Contacts.load(home.contacts_path)
    rows: list[Row] = []
    for stored in store.list_bundles(home, (state,)):
        if not stored.path.is_dir():
            continue
        try:
            rows.append(Row(compute(home, stored, contacts=contacts)))
        except (GageError, OSError):
            continue
    epoch = datetime.min.replace(tzinfo=UTC)
    rows.sort(key=lambda r: (r.arrived or epoch, r.id), reverse=True)
    return rows


class InboxScreen(Screen[None]):
    BINDINGS = bindings_for("inbox")
    GROUP = "inbox"

    def __init__(self) -> None:
        super().__init__(id="inbox")
        self.state = "pending"
        self.rows: dict[str, Row] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Tabs(*(Tab(TAB_LABEL[s], id=s) for s in STATES), id="states")
        yield DataTable(id="inbox-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="inbox-empty", markup=False)
        yield Static("", id="inbox-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("Verdict", width=12, key="verdict")
        table.add_column("Sender", width=28, key="sender")
        table.add_column("Kind", width=14, key="kind")
        table.add_column("Age", width=4, key="age")
        table.add_column("Subject", key="subject")
        self.reload()
        table.focus()
        self.set_interval(30, self.refresh_ages)

    def refresh_ages(self) -> None:
        """Ages move on while the app is open; only that column is redrawn (no recompute)."""
        table = self.query_one(DataTable)
        now = self.app.now()  # type: ignore[attr-defined]
        for bid, row in self.rows.items():
            try:
                table.update_cell(bid, "age", Text(age_text(row.arrived, now)))
            except Exception:  # noqa: BLE001 - the row went away between reloads
                continue

    # --- loading ----------------------------------------------------------------------

    def reload(self) -> None:
        """Recompute every row of the current tab, keeping the cursor on the same bundle."""
        home = self.app.home  # type: ignore[attr-defined]
        table = self.query_one(DataTable)
        keep = self.current_id()
        keep_index = table.cursor_row
        try:
            rows = load_rows(home, self.state)
            counts = {s: len(store.list_bundles(home, (s,))) for s in STATES}
        except (GageError, OSError) as exc:
            self.query_one("#inbox-detail", Static).update(Content.styled(safe.error_text(exc), "bold red"))
            return
        now = self.app.now()  # type: ignore[attr-defined]
        for s in STATES:
            self.query_one(Tabs).query_one(f"#{s}", Tab).label = f"{TAB_LABEL[s]} ({counts[s]})"
        table.clear()
        self.rows = {}
        for row in rows:
            self.rows[row.id] = row
            table.add_row(*self.cells(row, now), key=row.id)
        if keep in self.rows:
            table.move_cursor(row=table.get_row_index(keep))
        elif rows:  # the highlighted bundle left this tab: stay at the same place in the list
            table.move_cursor(row=min(keep_index, len(rows) - 1))
        empty = self.query_one("#inbox-empty", Static)
        empty.update(EMPTY[self.state])
        empty.display = not rows
        table.display = bool(rows)
        self.show_detail()

    @staticmethod
    def cells(row: Row, now: datetime) -> list[Text]:
        v = row.verdict
        m = v.manifest
        return [
            Text(VERDICT_MARK[v.verdict], style=VERDICT_STYLE[v.verdict]),
            Text(safe.one_line(v.sender.label(), limit=40), style=SENDER_STYLE.get(v.sender.status, "")),
            Text(m.kind if m else "?"),
            Text(age_text(row.arrived, now)),
            Text(safe.one_line(m.subject if m and m.subject is not None else "(no subject)", limit=120)),
        ]

    def current_id(self) -> str | None:
        table = self.query_one(DataTable)
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
        if row is None:
            detail.update("")
            return
        v = row.verdict
        m = v.manifest
        claim = ""
        if v.sender.status != "confirmed" and v.sender.claimed_name is not None:
            claim = f"  claims to be \"{safe.one_line(v.sender.claimed_name, limit=60)}\" (unchecked)"
        detail.update(
            Content.assemble(
                Content.styled(f"{row.id[:12]}  ", "bold"),
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
            self.reload()

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
