"""Me: my own four word-pairs and my public key file, from the interface.

A pairing needs two things from me: my words, read aloud to the other person, and my key
file, which they pair from (`gage key export` on the command line). Both were only on
the command line. This dialog shows my words and my key's full fingerprint, and writes
my public key file (never the secret key) where I say, atomically, refusing to replace
a file that is there.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from gage.bundle import atomic
from gage.format.errors import GageError
from gage.format.keys import key_scheme, short_fingerprint
from gage.format.keys.file import KeyFile
from gage.format.words import pair_text
from gage.trust import ceremony
from gage.tui import safe
from gage.tui.dialogs import new_file_path


def default_name(name: str) -> str:
    """A file name from my own name (letters, digits, - and _ kept), for `<name>.key`."""
    kept = "".join(ch for ch in name if ch.isalnum() or ch in "-_") or "my"
    return f"{kept[:40]}.key"


class MeDialog(ModalScreen[None]):
    """My words and fingerprint; Enter (or Export) writes my public key file."""

    BINDINGS = [Binding("escape", "close", "Close")]

    def __init__(self, cwd: Path) -> None:
        super().__init__(classes="dialog")
        self._cwd = cwd

    def compose(self) -> ComposeResult:
        home = self.app.home  # type: ignore[attr-defined]
        ident = home.identity
        words = ceremony.my_words(home)
        with Vertical(id="dialog-box") as box:
            box.border_title = "Me: my words and my key"
            yield Static(
                Content.assemble(Content.styled("Name: ", "bold"), safe.literal(ident.name, limit=80)),
                markup=False,
                classes="dialog-line",
            )
            # The fingerprint, as every screen names a key: a hybrid key's text is 3,984 characters,
            # too long to read or compare; the key file Export writes holds it whole.
            what = "Ed25519 + ML-DSA-65" if key_scheme(ident.key) == "hybrid" else "Ed25519"
            yield Static(
                Content.assemble(Content.styled("Key:  ", "bold"), f"{short_fingerprint(ident.key)} ({what}; the whole key is in the file below)"),
                markup=False,
                classes="dialog-line",
            )
            yield Static("My four word-pairs (read them to the person pairing with me):", markup=False, classes="dialog-line me-head")
            for i, (a, b) in enumerate(words):
                yield Static(Content.assemble(f"  pair {i + 1}  ", Content.styled(pair_text(a, b), "bold")), markup=False, classes="dialog-line")
            yield Static("Write my public key file (they pair from it; it holds no secret):", markup=False, classes="dialog-line me-head")
            yield Input(value=default_name(ident.name), id="me-path")
            yield Static("", markup=False, id="me-problem", classes="dialog-line sev-bad")
            with Horizontal(id="dialog-buttons"):
                yield Button("Export key", id="yes", variant="primary")
                yield Button("Close", id="no", variant="default")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#me-problem", Static).display = False

    def _problem(self, text: str) -> None:
        problem = self.query_one("#me-problem", Static)
        problem.update(safe.literal(text, limit=400))
        problem.display = True

    def export(self) -> None:
        path, why = new_file_path(self.query_one("#me-path", Input).value, self._cwd)
        if path is None:
            self._problem(why or "")
            return
        ident = self.app.home.identity  # type: ignore[attr-defined]
        try:
            atomic.write_bytes(path, KeyFile(key=ident.key, name=ident.name).to_bytes(), 0o644)
        except GageError as exc:
            self._problem(safe.error_text(exc))
            return
        self.app.notify(f"Wrote my public key file: {safe.one_line(str(path), limit=300)}", title="Key exported", markup=False, timeout=8)
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.export()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "yes":
            self.export()
        else:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
