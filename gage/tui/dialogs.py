"""Modal dialogs: confirm a risky act, give a reason, name a key file.

Bodies are `Content` (built by gage.tui.safe), so a claimed name or subject quoted in a
dialog is shown literally. Every dialog works from the keyboard alone: Enter takes the
focused button, Escape cancels, and the safe choice has the focus first.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static


class ConfirmDialog(ModalScreen[bool]):
    """Yes or no. The "no" button has the focus, so a stray Enter does nothing risky."""

    BINDINGS = [
        Binding("escape", "answer(False)", "Cancel"),
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("n", "answer(False)", "No", show=False),
    ]

    def __init__(self, title: str, body: list[Content], *, yes: str = "Yes", no: str = "Cancel", danger: bool = True) -> None:
        super().__init__(classes="dialog")
        self._title = title
        self._body = body
        self._yes = yes
        self._no = no
        self._danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = self._title  # gage's own words, never untrusted
            for line in self._body:
                yield Static(line, markup=False, classes="dialog-line")
            with Horizontal(id="dialog-buttons"):
                yield Button(self._yes, id="yes", variant="error" if self._danger else "primary")
                yield Button(self._no, id="no", variant="default")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class ReasonDialog(ModalScreen[str | None]):
    """Reject, with an optional reason that goes into the journal. None means cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, subject: Content) -> None:
        super().__init__(classes="dialog")
        self._subject = subject

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = "Reject this bundle?"
            yield Static(self._subject, markup=False, classes="dialog-line")
            yield Static("Reason (optional; kept in your journal), then Enter:", markup=False, classes="dialog-line")
            yield Input(placeholder="why (optional)", id="reason")
            with Horizontal(id="dialog-buttons"):
                yield Button("Reject", id="yes", variant="error")
                yield Button("Cancel", id="no", variant="default")

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "yes":
            self.dismiss(self.query_one("#reason", Input).value.strip())
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class KeyFileDialog(ModalScreen[Path | None]):
    """Ask for the path of a public key file to start a pairing from."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = "Pair from a key file"
            yield Static(
                "The path of their public key file (`gage key export`). The name inside it is only a claim;"
                " the words you hear from them decide.",
                markup=False,
                classes="dialog-line",
            )
            yield Input(placeholder="path/to/their.key", id="keyfile")
            with Horizontal(id="dialog-buttons"):
                yield Button("Open", id="yes", variant="primary")
                yield Button("Cancel", id="no", variant="default")

    def on_mount(self) -> None:
        self.query_one("#keyfile", Input).focus()

    def _path(self) -> Path | None:
        value = self.query_one("#keyfile", Input).value.strip()
        return Path(value).expanduser() if value else None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(self._path())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self._path() if event.button.id == "yes" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
