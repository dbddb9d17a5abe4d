"""Sending from the interface: make a bundle from files, deliver a bundle I made, reply to the one open.

Each is a dialog, then the work in a thread worker (signing hashes every byte; a delivery may wait
on the network): the bundle is made as `gage bundle` makes it (gage.inbox.send) and delivered as
`gage deliver` delivers it (gage.carriers.outbox), so a way that is not there keeps it in the
outbox, and it goes when the way is back. A reply names its parent, so the contact's unattended
budget can apply, and goes only to the confirmed contact who signed the bundle it answers.
Everything shown back (a contact's name, a relay's error) is untrusted text, through `safe`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from gage.format.errors import GageError, RefusedError, UsageError
from gage.home import listing
from gage.home.layout import Home
from gage.tui import safe
from gage.tui.dialogs import SubmitsOnEnter

Fields = list[tuple[str, str, str]]  # (id, label, value)


class SendDialog(SubmitsOnEnter, ModalScreen[dict[str, str] | None]):
    """A few fields and Send: Enter in any field (or Send) sends; Esc (or Cancel) sends nothing."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, intro: str, fields: Fields, *, send: str = "Send") -> None:
        super().__init__(classes="dialog")
        self._title, self._intro, self._fields, self._send = title, intro, fields, send

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = self._title  # gage's own words
            yield Static(self._intro, markup=False, classes="dialog-line")
            for fid, label, value in self._fields:
                yield Static(label, markup=False, classes="dialog-line")
                yield Input(value=value, id=f"send-{fid}")
            with Horizontal(id="dialog-buttons"):
                yield Button(self._send, id="yes", variant="primary")
                yield Button("Cancel", id="no", variant="default")
        yield Footer()

    def on_mount(self) -> None:
        self.query(Input).first().focus()

    def _submit(self) -> None:
        self.dismiss({fid: self.query_one(f"#send-{fid}", Input).value.strip() for fid, _label, _value in self._fields})


def _deliver(home: Home, bundle_id: str, to: str) -> tuple[str, str]:
    """(what to say, severity) for one delivery, as `gage deliver` does it."""
    from gage.carriers import outbox

    done = outbox.deliver(home, bundle_id, to)
    severity = "information" if done.state == "delivered" and done.code == 0 else "warning"
    return done.summary(), severity


def deliver_work(home: Home, bundle_id: str, answers: dict[str, str]) -> tuple[str, str]:
    to = answers.get("to", "")
    if not to:
        raise UsageError("give the name of a confirmed contact to deliver to")
    return _deliver(home, bundle_id, to)


def new_bundle_work(home: Home, answers: dict[str, str]) -> tuple[str, str]:
    from gage.inbox import send

    paths = [Path(p.strip()).expanduser() for p in answers.get("files", "").split(",") if p.strip()]
    if not paths:
        raise UsageError("give the files to bundle, separated by commas")
    to = answers.get("to", "")
    manifest, _dest = send.create(
        home, paths, kind=answers.get("kind") or "share", to=[to] if to else None,  # type: ignore[arg-type]
        subject=answers.get("subject") or None,
    )
    if not to:
        return f"{manifest.id[:12]}: made in your outbox (Outbox, 4); D delivers it", "information"
    said, severity = _deliver(home, manifest.id, to)
    return f"made {manifest.id[:12]}; {said}", severity


def reply_to(home: Home, bundle_id: str) -> str:
    """The confirmed contact who signed the bundle (the reply goes to them alone), or a refusal."""
    from gage.trust.verdict import compute

    stored = listing.find(home, bundle_id)
    if stored is None:
        raise UsageError("that bundle is no longer in your home")
    if stored.state == "outbox":
        raise RefusedError("this is a bundle you made: D delivers it; a reply answers someone else's")
    v = compute(home, stored)
    if v.verdict != "verified" or not v.sender.name:
        raise RefusedError("a reply goes to a confirmed contact: this bundle's signer is not one (pair with them first)")
    return v.sender.name


def reply_work(home: Home, bundle_id: str, to: str, answers: dict[str, str]) -> tuple[str, str]:
    from gage.inbox import send

    text = answers.get("text", "")
    if not text:
        raise UsageError("write the reply's text")
    with tempfile.TemporaryDirectory(prefix="gage-reply-") as tmp:
        src = Path(tmp) / "reply.txt"
        src.write_text(text + "\n", encoding="utf-8")
        manifest, _dest = send.create(home, [src], kind="answer", to=[to], parent=bundle_id, subject=answers.get("subject") or None)
    said, severity = _deliver(home, manifest.id, to)
    return f"reply {manifest.id[:12]} made; {said}", severity


def run(app: Any, work: Callable[[], tuple[str, str]]) -> None:
    """`work` in a thread worker; what it said (or the error) as a toast."""

    def job() -> None:
        try:
            said, severity = work()
        except GageError as exc:
            said, severity = f"{exc.stage}: {exc}", "error"
        except OSError as exc:
            said, severity = f"io: {exc.strerror or exc}", "error"
        try:
            app.call_from_thread(app.notify, safe.one_line(said, limit=400), title="send", severity=severity)
            app.call_from_thread(app.show_queued)
        except RuntimeError:
            pass  # the interface closed meanwhile

    app.run_worker(job, thread=True, group="send", exit_on_error=False)
