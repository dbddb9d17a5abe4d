"""Getting a bundle's files out, from the interface: `o` shows where they are, `s` saves a copy.

Accepting a bundle says "I will use this"; these keys are how its files reach the person.
`o` shows the folder that holds an accepted bundle's payload (or one of your own), ready
to copy, and can put it on the clipboard. It is not offered for a pending bundle (that
is not accepted: look at it in the bundle view, or save a copy with `s`) nor for a
rejected one.

`s` copies the files with `gage.inbox.extract.extract`, the same code as `gage extract`, so it
has the same refusals: every byte is checked against the signed manifest as it is
copied, no link is followed, a pending bundle is saved only after the person says so,
a rejected one never, and nothing is overwritten unless the person says so after being
told which files are already there. The copy runs in a thread worker.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Static

from gage.bundle import PAYLOAD
from gage.format.errors import NotFoundError
from gage.format.manifest import Manifest
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import extract as extract_mod
from gage.tui import background, safe
from gage.tui.dialogs import ConfirmDialog, SubmitsOnEnter, resolve_path

SHOWN_STATES = ("accepted", "outbox")


class FolderDialog(ModalScreen[None]):
    """The payload folder's path, in a field that can be selected and copied; `c` copies it."""

    BINDINGS = [Binding("escape", "close", "Close"), Binding("c", "copy", "Copy")]

    def __init__(self, bundle_id: str, path: Path) -> None:
        super().__init__(classes="dialog")
        self.bundle_id = bundle_id
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = "Where its files are"
            yield Static(
                Content.assemble(Content.styled(self.bundle_id[:12], "bold"), ": the files of this bundle are in this folder."),
                markup=False,
                classes="dialog-line",
            )
            yield Input(value=str(self.path), id="folder-path", select_on_focus=True)
            yield Static(
                "They are read-only: read them from there, or copy them elsewhere with s to work on them. "
                "Never edit them in place (not even after a chmod): the bundle would no longer check out.",
                markup=False,
                classes="dialog-line",
            )
            with Horizontal(id="dialog-buttons"):
                yield Button("Copy path", id="yes", variant="primary")
                yield Button("Close", id="no", variant="default")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.value != str(self.path):  # shown to copy, not to edit
            event.input.value = str(self.path)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "yes":
            self.action_copy()
        self.dismiss(None)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(str(self.path))
        self.app.notify("Copied the folder's path.", markup=False, timeout=3)

    def action_close(self) -> None:
        self.dismiss(None)


class SaveDialog(SubmitsOnEnter, ModalScreen[Path | None]):
    """Ask which folder to save the files in (prefilled, so Enter alone saves)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, bundle_id: str, default: Path, cwd: Path) -> None:
        super().__init__(classes="dialog")
        self.bundle_id = bundle_id
        self.default = default
        self.cwd = cwd

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = "Save the files"
            yield Static(
                Content.assemble(
                    Content.styled(self.bundle_id[:12], "bold"),
                    ": its files are copied into this folder (made if missing), each checked as it is copied.",
                ),
                markup=False,
                classes="dialog-line",
            )
            yield Input(value=str(self.default), id="save-path")
            yield Static("", markup=False, id="save-problem", classes="dialog-line sev-bad")
            with Horizontal(id="dialog-buttons"):
                yield Button("Save", id="yes", variant="primary")
                yield Button("Cancel", id="no", variant="default")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#save-problem", Static).display = False
        self.query_one("#save-path", Input).focus()

    def _submit(self) -> None:
        path = resolve_path(self.query_one("#save-path", Input).value, self.cwd)
        if path is None:
            problem = self.query_one("#save-problem", Static)
            problem.update("Give a folder.")
            problem.display = True
            return
        self.dismiss(path)



def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:  # the working directory was removed under us
        return Path.home()


def default_folder(bundle_id: str) -> Path:
    """~/Downloads/<id12> where there is a Downloads folder, else <id12> in the working directory."""
    downloads = Path.home() / "Downloads"
    return (downloads if downloads.is_dir() else _cwd()) / bundle_id[:12]


def show_folder(screen: Screen, bundle_id: str | None) -> None:
    """`o`: the payload folder of an accepted bundle (or one of yours)."""
    app = screen.app
    home: Home = app.home  # type: ignore[attr-defined]
    stored = listing.find(home, bundle_id) if bundle_id else None
    if stored is None:
        app.notify("No bundle here.", severity="warning", markup=False)
        return
    if stored.state not in SHOWN_STATES:
        why = (
            "It is pending: accept it first, or press s to save a checked copy of its files."
            if stored.state == "pending"
            else "It is rejected: its files are not for use."
        )
        app.notify(why, title="Not shown", severity="warning", markup=False, timeout=6)
        return
    app.push_screen(FolderDialog(stored.id, stored.path / PAYLOAD))


def _clashes(home: Home, bundle_id: str, dest: Path) -> list[str]:
    """Files of the bundle that already exist in `dest` (asked about before anything is written)."""
    stored = listing.find(home, bundle_id)
    if stored is None:
        return []
    manifest: Manifest | None = stored.manifest()
    if manifest is None or not dest.is_dir():
        return []
    return [f.path for f in manifest.files if (dest / f.path).exists() or (dest / f.path).is_symlink()]


def _extract(home: Home, bundle_id: str, dest: Path, force: bool, allow_pending: bool) -> tuple[list[str], int]:
    """In a thread worker: ([], files written), or (clashing files, 0) when it would overwrite."""
    if not force:
        clash = _clashes(home, bundle_id, dest)
        if clash:
            return clash, 0
    stored = listing.find(home, bundle_id)
    if stored is None:
        raise NotFoundError("is no longer in this home (moved or removed); nothing was saved", path=f"bundle {bundle_id[:12]}")
    return [], len(extract_mod.extract(home, stored, dest, force=force, allow_pending=allow_pending))


def save(screen: Screen, bundle_id: str | None) -> None:
    """`s`: ask for a folder, confirm a pending bundle, then copy its files (asking before overwriting)."""
    app = screen.app
    home: Home = app.home  # type: ignore[attr-defined]
    stored = listing.find(home, bundle_id) if bundle_id else None
    if stored is None or bundle_id is None:
        app.notify("No bundle here.", severity="warning", markup=False)
        return
    if stored.state == "rejected":
        app.notify("It is rejected: its files are not saved.", title="Not saved", severity="warning", markup=False, timeout=6)
        return
    bid = bundle_id

    def run(dest: Path, force: bool, allow_pending: bool) -> None:
        def done(result: tuple[list[str], int]) -> None:
            clash, written = result
            if clash:
                shown = ", ".join(safe.one_line(p, limit=60) for p in clash[:3]) + (f" and {len(clash) - 3} more" if len(clash) > 3 else "")
                body = [
                    safe.trusted("$n file(s) already exist in $dest: $shown.", n=str(len(clash)), dest=str(dest), shown=shown),
                    Content("Overwrite them with this bundle's files?"),
                ]
                app.push_screen(
                    ConfirmDialog("Overwrite?", body, yes="Overwrite"),
                    lambda yes: run(dest, True, allow_pending) if yes else None,
                )
                return
            app.notify(f"Saved {written} file(s) of {bid[:12]} in {safe.one_line(str(dest), limit=300)}", title="Saved", markup=False, timeout=8)

        def failed(message: str) -> None:
            app.notify(message, title="Not saved", severity="error", markup=False, timeout=10)

        background.change(app, f"save {bid[:12]}", lambda: _extract(home, bid, dest, force, allow_pending), done, failed, lock=False)

    def chosen(dest: Path | None) -> None:
        if dest is None:
            return
        if stored.state != "pending":
            run(dest, False, False)
            return
        body = [
            Content.styled("This bundle is PENDING: you have not accepted it.", "bold $warning"),
            Content("Its files are checked against the signed manifest as they are copied, but nobody has decided to use them."),
            Content("Save a copy anyway?"),
        ]
        app.push_screen(ConfirmDialog("Save a pending bundle?", body, yes="Save anyway"), lambda yes: run(dest, False, True) if yes else None)

    app.push_screen(SaveDialog(bid, default_folder(bid), _cwd()), chosen)
