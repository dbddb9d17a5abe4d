"""The pairing dialog: the name first, checked before anyone reads a word, so a clash never wastes a ceremony.

A name clash (`bob` when another key is confirmed as bob) used to be found only after both
people had read all their words. Here the name is asked before the ceremony screen opens
and checked with the same rule as `gage pair` (`Contacts.clash`, gage/home/clash.py); a
clash keeps the dialog open and says what to do, so the words are never shown for a name
that could not be confirmed. The dialog also asks which ceremony: one way, or both ways
at once on one call (the mutual ceremony, gage.tui.mutual). The key's claimed name and
where it came from are shown as unchecked claims, literally.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, RadioButton, RadioSet, Static

from gage.format.errors import GageError
from gage.format.keys import short_fingerprint
from gage.home.clash import Clash
from gage.home.contacts import Contacts
from gage.tui import safe
from gage.tui.dialogs import SubmitsOnEnter


@dataclass(frozen=True)
class PairChoice:
    """The local name to confirm the key under (already checked), and which ceremony."""

    name: str
    mutual: bool


def clash_text(clash: Clash) -> str:
    """What to do about a clash, in the interface's own terms (the command line says `gage contacts remove`)."""
    name = safe.one_line(clash.name, limit=64)
    if clash.why == "name-taken":
        return (
            f"A different key is already confirmed as \"{name}\". Choose another name for this key; or, if {name}"
            " really has a new key, remove the old contact first (d on its row in Contacts), then pair again."
            " No words were shown and nothing was confirmed."
        )
    if clash.why == "key-named":
        return f"This key is already confirmed as \"{name}\": nothing to do (to rename it, remove {name} first: d in Contacts)."
    return "This key was retired by a statement it signed: a retired key is never confirmed again."


def name_problem(home: object, name: str, key: bytes) -> str | None:
    """Why `key` cannot be confirmed as `name` here (said before any word), or None."""
    if not name:
        return "Type the name you will know them by."
    try:
        found = Contacts.load(home.contacts_path).clash(name, key)  # type: ignore[attr-defined]
    except GageError as exc:  # a name with a control character, or a damaged contacts file
        return safe.error_text(exc)
    return clash_text(found) if found is not None else None


class PairNameDialog(SubmitsOnEnter, ModalScreen[PairChoice | None]):
    """Dismissed with the checked name and the ceremony chosen, or None if the person cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, key: bytes, claimed_name: str, source: str, *, mutual: bool = False, both_only: bool = False) -> None:
        super().__init__(classes="dialog", id="pair-name")
        self.both_only = both_only  # an invite: the ceremony is both ways, on the call it came through
        self.key = key
        self.claimed_name = claimed_name
        self.source = source  # untrusted in part (a key file's name): shown through safe
        self.mutual = mutual

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = "Pair with a key"
            yield Static(
                Content.assemble(
                    "The key ",
                    Content.styled(short_fingerprint(self.key), "bold"),
                    " claims the name \"",
                    safe.literal(self.claimed_name, "bold yellow", limit=60),
                    "\" (unchecked), from ",
                    safe.literal(self.source, limit=100),
                    ".",
                ),
                markup=False,
                classes="dialog-line",
            )
            yield Static(
                "Your name for them (yours, not the one the key claims), checked now, before any word is read:",
                markup=False,
                classes="dialog-line export-label",
            )
            yield Input(placeholder="name", id="pair-name-input", max_length=64)
            if not self.both_only:
                with RadioSet(id="pair-mode", compact=True):
                    yield RadioButton(Content("One way: I type their words"), value=not self.mutual, id="mode-one-way")
                    yield RadioButton(Content("Both ways at once, on one call"), value=self.mutual, id="mode-mutual")
            yield Static("", markup=False, id="pair-problem", classes="dialog-line sev-bad")
            with Horizontal(id="dialog-buttons"):
                yield Button("Next", id="yes", variant="primary")
                yield Button("Cancel", id="no", variant="default")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#pair-problem", Static).display = False
        self.query_one("#pair-name-input", Input).focus()

    def chosen_mutual(self) -> bool:
        if self.both_only:
            return True
        pressed = self.query_one(RadioSet).pressed_button
        return pressed is not None and pressed.id == "mode-mutual"

    def _submit(self) -> None:
        name = self.query_one("#pair-name-input", Input).value.strip()
        why = name_problem(self.app.home, name, self.key)  # type: ignore[attr-defined]
        if why is not None:
            problem = self.query_one("#pair-problem", Static)
            problem.update(safe.literal(why, limit=600))
            problem.display = True
            self.query_one("#pair-name-input", Input).focus()
            return
        self.dismiss(PairChoice(name, self.chosen_mutual()))

