"""Contacts: keys confirmed by the ceremony, and candidate keys seen but never confirmed.

A candidate's name is what its key claims, shown literally and marked as a claim; only
a confirmed contact has a name of yours. Removing a contact (unpairing) and forgetting a
candidate both ask first, with the same key (d).

A contact's key history shows here too (spec/keys.md): a key retired by its own
statement, earlier keys under the contact's row, and a replacement a retired key named,
as a candidate linked to the contact. p on it starts the ceremony: nothing else
confirms it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from gage.format.errors import GageError
from gage.format.keys import short_fingerprint
from gage.home.contacts import Contact, Contacts, Retirement
from gage.trust import ceremony
from gage.tui import background, safe
from gage.tui.bindings import bindings_for
from gage.tui.dialogs import ConfirmDialog
from gage.tui.messages import ContactsChanged
from gage.tui.table_keys import RowKeys


class ContactsScreen(Screen[None]):
    BINDINGS = bindings_for("contacts")
    GROUP = "contacts"

    def __init__(self) -> None:
        super().__init__(id="contacts")
        self.contacts: Contacts | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            "Confirmed: keys you checked with the word-pair ceremony. Candidates: keys you have seen"
            " (in a bundle or a key file) but never confirmed; their names are only claims.",
            markup=False,
            id="contacts-intro",
        )
        yield Static("", markup=False, id="contacts-me")
        yield RowKeys(id="contacts-table", cursor_type="row", zebra_stripes=True)
        yield Static("", markup=False, id="contacts-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("Status", width=10, key="status")
        table.add_column("Name", width=14, key="name")
        table.add_column("Key", width=29, key="key")
        table.add_column("When", width=10, key="when")  # the date; the detail line has the time
        table.add_column("How", key="how")
        self.reload()
        table.focus()

    def reload(self) -> None:
        self.query_one("#contacts-me", Static).update(my_keys_text(self.app.home))  # type: ignore[attr-defined]
        table = self.query_one(DataTable)
        table.clear()
        try:
            self.contacts = Contacts.load(self.app.home.contacts_path)  # type: ignore[attr-defined]
        except GageError as exc:
            self.contacts = None
            self.query_one("#contacts-detail", Static).update(Content.styled(safe.error_text(exc), "bold red"))
            return
        for c in sorted(self.contacts.confirmed.values(), key=lambda c: c.name.casefold()):
            table.add_row(
                _status_text(c.retired),
                Text(safe.one_line(c.name, limit=64)),
                Text(short_fingerprint(c.key)),
                Text(safe.one_line(c.confirmed_at)),
                Text(safe.one_line(c.method) if c.retired is None else _retired_how(c.retired)),
                key=f"contact:{c.name}",
            )
            for prev in reversed(c.previous):
                table.add_row(
                    _status_text(prev.retirement),
                    Text(f"  {safe.one_line(c.name, limit=50)} (before)", style="dim"),
                    Text(short_fingerprint(prev.key), style="dim"),
                    Text(safe.one_line(prev.confirmed_at), style="dim"),
                    Text(_retired_how(prev.retirement), style="dim"),
                    key=f"previous:{prev.key.hex()}",
                )
        for cand in sorted(self.contacts.candidates.values(), key=lambda c: (c.seen_at, c.key)):
            if cand.replaces is not None:
                name = Text(f"{safe.one_line(cand.replaces_contact, limit=50)}'s new key?", style="yellow")
                how = Text("named by the retired key " + short_fingerprint(cand.replaces) + "; p to pair")
            else:
                name = Text(f"\"{safe.one_line(cand.claimed_name, limit=60)}\"?", style="yellow")
                how = Text("seen in " + safe.one_line(cand.source, limit=80))
            table.add_row(
                Text("candidate", style="bold yellow"),
                name,
                Text(short_fingerprint(cand.key)),
                Text(safe.one_line(cand.seen_at)),
                how,
                key=f"candidate:{cand.key.hex()}",
            )
        if table.row_count == 0:
            self.query_one("#contacts-detail", Static).update(
                "No contacts yet. Press f to pair from someone's key file (P: both ways at once)."
            )
        else:
            self.show_detail()

    def current_key(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:  # noqa: BLE001 - no cursor row
            return None
        return str(key.value) if key.value is not None else None

    def show_detail(self) -> None:
        detail = self.query_one("#contacts-detail", Static)
        key = self.current_key()
        if key is None or self.contacts is None:
            detail.update("")
            return
        kind, _, ident = key.partition(":")
        if kind == "contact" and ident in self.contacts.confirmed:
            c = self.contacts.confirmed[ident]
            detail.update(Content.assemble(*_contact_detail(c), *_where(self.app, c.key)))
        elif kind == "previous":
            owner = self.contacts.owner_of(bytes.fromhex(ident))
            found = self.contacts.retirement_of(bytes.fromhex(ident))
            if owner is not None and found is not None:
                detail.update(
                    Content.assemble(
                        Content.styled(safe.one_line(owner.name), "bold"),
                        f"'s previous key {short_fingerprint(bytes.fromhex(ident))}: {_retired_sentence(found[1])}",
                    )
                )
        elif kind == "candidate":
            cand = self.contacts.candidates.get(bytes.fromhex(ident))
            if cand is not None and cand.replaces is not None:
                detail.update(
                    Content.assemble(
                        "Named as ",
                        Content.styled(safe.one_line(cand.replaces_contact), "bold"),
                        f"'s new key by their retired key {short_fingerprint(cand.replaces)}; it claims the name \"",
                        safe.literal(cand.claimed_name, "bold yellow", limit=80),
                        "\". Not trusted until the ceremony: p starts it (use their name); d forgets it.",
                    )
                )
            elif cand is not None:
                detail.update(
                    Content.assemble(
                        "Claims the name \"",
                        safe.literal(cand.claimed_name, "bold yellow", limit=80),
                        "\" (unchecked). p starts the ceremony; d forgets it.",
                        *_where(self.app, cand.key),
                    )
                )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_pair(self, mutual: bool = False) -> None:
        key = self.current_key()
        if key is None or self.contacts is None or not key.startswith("candidate:"):
            if mutual:  # both ways with someone not yet seen here: start from their key file
                self.app.pair_from_file(mutual=True)  # type: ignore[attr-defined]
                return
            self.app.notify("Highlight a candidate key to pair with, or press f for a key file.", markup=False)
            return
        cand = self.contacts.candidates.get(bytes.fromhex(key.partition(":")[2]))
        if cand is not None:
            self.app.start_ceremony(cand.key, cand.claimed_name, safe.one_line(cand.source), mutual=mutual)  # type: ignore[attr-defined]

    def action_pair_mutual(self) -> None:
        """P: the mutual ceremony (gage.tui.mutual) with the highlighted candidate, or from a key file."""
        self.action_pair(mutual=True)

    def action_pair_file(self) -> None:
        self.app.pair_from_file()  # type: ignore[attr-defined]

    def action_remove(self) -> None:
        """d: unpair the highlighted confirmed contact, or forget the highlighted candidate key; both ask first."""
        key = self.current_key()
        if key is None or self.contacts is None:
            self.app.notify("Highlight a contact to remove, or a candidate key to forget.", severity="warning", markup=False)
            return
        kind, _, ident = key.partition(":")
        if kind == "candidate":
            self.forget(bytes.fromhex(ident))
            return
        if kind == "previous":
            self.app.notify("A previous key is part of its contact's history: d on the contact removes it all.", markup=False)
            return
        name = ident

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            def removed(_: object) -> None:
                self.app.notify(f"Removed {safe.one_line(name)}.", title="Unpaired", markup=False)
                self.app.post_message(ContactsChanged(name))

            def failed(message: str) -> None:
                self.app.notify(message, title="Not removed", severity="error", markup=False)

            home = self.app.home  # type: ignore[attr-defined]
            background.change(self.app, "unpair", lambda: ceremony.unpair(home, name), removed, failed, small=True)

        body = [
            safe.trusted("Remove [b]$name[/b] from your confirmed contacts?", name=name),
            Content("Bundles from this key will show as unverified until you pair again with the ceremony."),
        ]
        self.app.push_screen(ConfirmDialog("Remove contact?", body, yes="Remove", no="Keep"), answered)

    def forget(self, key: bytes) -> None:
        """Forget a candidate key (never a confirmed one: gage.trust.ceremony.forget_candidate checks)."""
        cand = self.contacts.candidates.get(key) if self.contacts else None
        if cand is None:
            return
        claimed = cand.claimed_name

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            def forgot(forgotten: bool) -> None:
                if not forgotten:
                    self.app.notify("That key is no longer a candidate.", severity="warning", markup=False)
                else:
                    self.app.notify(f"Forgot candidate key {short_fingerprint(key)}.", title="Forgotten", markup=False)
                self.app.post_message(ContactsChanged(claimed))

            def failed(message: str) -> None:
                self.app.notify(message, title="Not forgotten", severity="error", markup=False)

            home = self.app.home  # type: ignore[attr-defined]
            background.change(self.app, "forget", lambda: ceremony.forget_candidate(home, key), forgot, failed, small=True)

        body = [
            safe.trusted(
                "Forget the candidate key [b]$fp[/b] that claims the name \"$claim\"?", fp=short_fingerprint(key), claim=claimed
            ),
            Content("It was never confirmed, so nothing you trust changes: bundles from it show as from an unknown key."),
        ]
        self.app.push_screen(ConfirmDialog("Forget candidate?", body, yes="Forget", no="Keep"), answered)


def _where(app: object, key: bytes) -> list[Content | str]:
    """The key's "where" (mailbox, A2A, drop folder): a claim, shown as one safe line."""
    from gage.home import whereabouts

    home = getattr(app, "home", None)
    if home is None:
        return []
    try:
        w = whereabouts.of(home, key)
    except Exception:
        return []
    return ["\n", safe.one_line(w.summary(), limit=300)] if w is not None else []


def my_keys_text(home: object) -> Content:
    """This home's own key, and the keys it retired (spec/keys.md section 6): what `gage id` shows."""
    ident = home.identity  # type: ignore[attr-defined]
    parts: list[Content | str] = [Content.styled("Me: ", "bold"), safe.one_line(ident.name), f" ({short_fingerprint(ident.key)})"]
    parts.append(Content.styled("  m: my words, export my key", "dim"))
    current = ident.current_retirement
    if current is not None:
        parts.append(Content.styled(f"; my key is RETIRED ({current.reason}) with no successor here", "bold red"))
    for r in ident.retired:
        if r.key == ident.key:
            continue
        nxt = f", replaced by {short_fingerprint(r.replacement)}" if r.replacement else ""
        style = "red" if r.reason == "compromised" else "dim"
        parts.append(Content.styled(f"; retired key {short_fingerprint(r.key)}: {r.reason}{nxt}", style))
    return Content.assemble(*parts)


def _status_text(r: Retirement | None) -> Text:
    if r is None:
        return Text("confirmed", style="bold green")
    return Text("retired", style="bold red" if r.reason == "compromised" else "bold")


def _retired_how(r: Retirement) -> str:
    return f"retired: {r.reason}" + ("; anything it signs is unverified" if r.reason == "compromised" else "")


def _retired_sentence(r: Retirement) -> str:
    out = f"retired as {r.reason} as of {safe.one_line(r.retired_at)} (their statement's claim; applied {safe.one_line(r.applied_at)})."
    if r.reason == "compromised":
        out += " Nothing signed with it is verified."
    else:
        out += " What it signed stays verified, shown as signed with their previous key."
    if r.replacement is not None:
        out += f" It named the new key {short_fingerprint(r.replacement)}."
    return out


def _contact_detail(c: Contact) -> list[Content | str]:
    parts: list[Content | str] = [
        Content.styled(safe.one_line(c.name), "bold green" if c.retired is None else "bold"),
        f": confirmed {safe.one_line(c.confirmed_at)} by {safe.one_line(c.method)}.",
    ]
    if c.retired is not None:
        parts.append(f" This key was {_retired_sentence(c.retired)}")
        if c.retired.replacement is not None:
            parts.append(" Pair with the new key (its candidate row, p) to confirm it.")
    if c.previous:
        parts.append(f" {len(c.previous)} earlier key(s) listed below it.")
    parts.append("  d removes (unpairs).")
    return parts
