"""Modal dialogs: confirm a risky act, name a key file, export a bundle (the gate's own
confirmation is gage.tui.gate_dialog).

Bodies are `Content` (built by gage.tui.safe), so a claimed name or subject quoted in a
dialog is shown literally. Every dialog works from the keyboard alone: Enter takes the
focused button, Escape cancels, and the safe choice has the focus first. Each has its own
footer, so the keys shown are the dialog's, not those of the screen under it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, RadioButton, RadioSet, Static

from gage.tui import safe


class SubmitsOnEnter:
    """A dialog with one field and a `#yes` button: Enter in the field or the button submits;
    another button, or Esc, closes it with nothing chosen. One place for what five dialogs do."""

    dismiss: Callable[..., object]  # the ModalScreen's, in the class this is mixed into

    def _submit(self) -> None:
        raise NotImplementedError

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "yes":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


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
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class KeyFileDialog(SubmitsOnEnter, ModalScreen[Path | None]):
    """Ask for the path of a public key file to start a pairing from."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self) -> None:
        super().__init__(classes="dialog")  # centred like every dialog (it was drawn top left)

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
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#keyfile", Input).focus()

    def _path(self) -> Path | None:
        value = self.query_one("#keyfile", Input).value.strip()
        return Path(value).expanduser() if value else None

    def _submit(self) -> None:
        self.dismiss(self._path())


@dataclass(frozen=True)
class ExportChoice:
    """Where to write an A2A artifact, and for which protocol version."""

    path: Path  # absolute: a relative name was resolved against the working directory when chosen
    protocol: str  # "1.0" or "0.3"


def resolve_path(text: str, cwd: Path) -> Path | None:
    """The absolute path a person typed (`~` expanded, relative to `cwd`), or None for nothing typed."""
    value = text.strip()
    if not value:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else cwd / p


def new_file_path(text: str, cwd: Path) -> tuple[Path | None, str | None]:
    """A path a person typed for a file gage is to write, or why not: nothing typed, or a file
    (or link) already there, which gage never replaces. The writer checks again when it writes."""
    path = resolve_path(text, cwd)
    if path is None:
        return None, "Give a file name."
    if path.exists() or path.is_symlink():
        return None, f"{path} already exists; gage will not replace it. Give another name."
    return path, None


class ExportDialog(SubmitsOnEnter, ModalScreen[ExportChoice | None]):
    """Ask where to write a bundle as an A2A artifact file, and for which protocol.

    The name is prefilled (`<id12>.a2a.json` in the working directory) so Enter alone
    exports. A file already there is reported here, and the dialog stays open for another
    name; the export itself checks again and never replaces one (gage.tui.export).
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, bundle_id: str, cwd: Path) -> None:
        super().__init__(classes="dialog")
        self._bundle_id = bundle_id
        self._cwd = cwd

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = "Export as an A2A artifact"
            yield Static(
                Content.assemble(
                    Content.styled(self._bundle_id[:12], "bold"),
                    ": written as one JSON file that any A2A agent can carry; the receiver verifies it with gage.",
                ),
                markup=False,
                classes="dialog-line",
            )
            yield Static(
                Content.assemble("File (a relative name is written in ", safe.literal(str(self._cwd), limit=200), "):"),
                markup=False,
                classes="dialog-line",
            )
            yield Input(value=f"{self._bundle_id[:12]}.a2a.json", id="export-path")
            yield Static("A2A protocol version:", markup=False, classes="dialog-line export-label")
            with RadioSet(id="export-protocol", compact=True):
                yield RadioButton(Content("1.0 (current)"), value=True, id="protocol-1-0")
                yield RadioButton(Content("0.3 (older agents)"), id="protocol-0-3")
            yield Static("", markup=False, id="export-problem", classes="dialog-line sev-bad")
            with Horizontal(id="dialog-buttons"):
                yield Button("Export", id="yes", variant="primary")
                yield Button("Cancel", id="no", variant="default")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#export-problem", Static).display = False
        self.query_one("#export-path", Input).focus()

    def protocol(self) -> str:
        pressed = self.query_one(RadioSet).pressed_button
        return "0.3" if pressed is not None and pressed.id == "protocol-0-3" else "1.0"

    def _problem(self, text: str) -> None:
        problem = self.query_one("#export-problem", Static)
        problem.update(safe.literal(text, limit=400))
        problem.display = True

    def _submit(self) -> None:
        path, why = new_file_path(self.query_one("#export-path", Input).value, self._cwd)
        if path is None:
            self._problem(why or "")
            return
        self.dismiss(ExportChoice(path, self.protocol()))
