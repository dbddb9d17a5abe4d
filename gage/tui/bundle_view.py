"""One bundle: gage's frame on top, the sender's payload below, never mixed.

The frame is a bordered panel with a fixed title, filled only from `gage.frame.fields`
(values already made visible) and coloured by severity through CSS classes, so nothing
in the bundle can choose how the frame looks. The payload panel below has its own
border and title; every preview line is literal text with controls escaped, drawn
with a bar on its left so a payload that imitates the frame still looks like payload.

Where a carrier (A2A) said the bundle came from is part of the frame (`via`, and a
`transport` line in the bad colour for each way it disagrees with the signature); the
summary bar, which stays in view while the payload scrolls, repeats it (gage.tui.via).
Any bundle shown here, yours from the outbox too, can be exported as an A2A artifact.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Static

from .. import store
from ..bundle import PAYLOAD
from ..errors import GageError
from ..frame import PREVIEW_LIMIT, fields, payload_status
from ..sanitize import looks_binary
from ..verdict import Verdict, compute
from . import decide, export, safe, via
from .bindings import bindings_for

FRAME_TITLE = "gage frame · written by gage, not by the sender"
PAYLOAD_TITLE = "payload · the sender's files, shown literally"
SAMPLE = 8192


@dataclass
class Preview:
    """What can be shown of one payload file."""

    name: str
    size: int
    kind: str  # text, binary, unreadable
    text: str = ""
    more: int = 0  # bytes not shown


def read_preview(root: os.PathLike[str] | str, path: str, size: int) -> Preview:
    """Read a payload file for display without following a symlink or blocking on a FIFO."""
    full = os.path.join(root, PAYLOAD, path)
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return Preview(path, size, "unreadable", exc.strerror or "cannot open")
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return Preview(path, size, "unreadable", "not a regular file")
        data = f.read(PREVIEW_LIMIT)
        rest = len(f.read(1))
    if looks_binary(data[:SAMPLE]):
        return Preview(path, size, "binary")
    text = data.decode("utf-8", errors="backslashreplace")
    return Preview(path, size, "text", text, more=max(0, size - PREVIEW_LIMIT) if rest else 0)


class BundleScreen(Screen[None]):
    BINDINGS = bindings_for("bundle")
    GROUP = "bundle"

    def __init__(self, bundle_id: str) -> None:
        super().__init__(id="bundle")
        self.bundle_id = bundle_id
        self.verdict: Verdict | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", markup=False, id="verdict-bar")
        with VerticalScroll(id="bundle-body"):
            frame = Vertical(id="frame")
            frame.border_title = FRAME_TITLE
            yield frame
            payload = Vertical(id="payload")
            payload.border_title = PAYLOAD_TITLE
            yield payload
        yield Footer()

    async def on_mount(self) -> None:
        await self.reload()
        self.query_one("#bundle-body").focus()

    async def reload(self) -> None:
        """Recompute the verdict from the bundle as it is now and redraw both panels."""
        home = self.app.home  # type: ignore[attr-defined]
        stored = store.find(home, self.bundle_id)
        frame = self.query_one("#frame", Vertical)
        payload = self.query_one("#payload", Vertical)
        bar = self.query_one("#verdict-bar", Static)
        await frame.remove_children()
        await payload.remove_children()
        if stored is None:
            self.verdict = None
            await frame.mount(Static("This bundle is no longer in your home (moved or removed).", markup=False, classes="sev-bad"))
            return
        try:
            v = compute(home, stored)
        except (GageError, OSError) as exc:
            self.verdict = None
            await frame.mount(Static(Content.styled(safe.error_text(exc), "bold"), markup=False, classes="sev-bad"))
            return
        self.verdict = v
        self.refresh_bindings()  # accept and reject are hidden for a bundle of your own (outbox)
        for name in ("verified", "unverified", "invalid"):
            frame.set_class(name == v.verdict, f"verdict-{name}")
            bar.set_class(name == v.verdict, f"verdict-{name}")
        bar.update(self.summary(v))
        await frame.mount_all(self.frame_widgets(v))
        await payload.mount_all(self.payload_widgets(v))

    @staticmethod
    def summary(v: Verdict) -> Content:
        """The one line that stays in view while the person scrolls the payload."""
        unattended = v.state == "accepted" and v.accepted_how == "unattended"
        return Content.assemble(
            Content.styled(f" {v.verdict.upper()} ", "bold reverse"),
            via.badge(v),  # where it cannot be cut off: the carrier contradicts the signature
            " from ",
            safe.literal(v.sender.label(), "bold", limit=40),
            f" · {v.kind or '?'} · ",
            # No person reviewed it: said here too, not only in the frame's state line.
            Content.styled(" accepted UNATTENDED ", "bold reverse") if unattended else (v.state or "not in this home"),
            via.summary_part(v),
        )

    @staticmethod
    def frame_widgets(v: Verdict) -> list[Widget]:
        out: list[Widget] = []
        for f in fields(v):
            out.append(
                Horizontal(
                    Static(f.label + ":", markup=False, classes="flabel"),
                    Static(safe.literal(f.value, limit=2000), markup=False, classes=f"fvalue sev-{f.severity}"),
                    classes="field",
                )
            )
        why = decide.why_not_acceptable(v)
        if v.state == "outbox" and v.verdict != "invalid":
            out.append(Static("You made this bundle. x: export it as an A2A artifact file", markup=False, classes="action-line"))
        elif v.verdict == "invalid":
            out.append(Static(safe.literal(why, limit=600), markup=False, classes="action-line sev-bad"))
        elif why:
            out.append(Static(safe.literal(why, limit=600), markup=False, classes="action-line"))
        elif v.verdict == "unverified":
            out.append(
                Static(
                    "a: accept (asks first: the sender is not confirmed) · r: reject · p: pair with this key",
                    markup=False,
                    classes="action-line sev-warn",
                )
            )
        else:
            out.append(Static("a: accept · r: reject", markup=False, classes="action-line"))
        return out

    @staticmethod
    def payload_widgets(v: Verdict) -> list[Widget]:
        m = v.manifest
        show, why = payload_status(v, show_pending=True)
        out: list[Widget] = []
        if not show:
            out.append(Static(why, markup=False, classes="payload-banner sev-bad"))
            if m is not None:
                out.append(Static("Files it lists (names only, nothing opened):", markup=False))
                for entry in m.files:
                    out.append(Static(safe.literal("  " + entry.path), markup=False, classes="file-name"))
            return out
        if v.state == "pending":
            out.append(
                Static(
                    "NOT ACCEPTED: you are reviewing a pending bundle. Nothing in it has been acted on.",
                    markup=False,
                    classes="payload-banner sev-warn",
                )
            )
        elif v.state == "rejected":
            out.append(Static("REJECTED: shown for reference only.", markup=False, classes="payload-banner sev-warn"))
        assert m is not None
        previews = [read_preview(v.path, e.path, e.size) for e in m.files]
        for p in previews:
            out.append(Static(Content.assemble(safe.literal(p.name, "bold"), f"  {p.size} bytes, {p.kind}"), markup=False, classes="file-name"))
        for p in previews:
            if p.kind != "text":
                continue
            out.append(Static(Content.assemble("── ", safe.literal(p.name, "bold"), " ──"), markup=False, classes="preview-head"))
            out.append(Static(safe.literal_lines(p.text), markup=False, classes="preview"))
            if p.more:
                out.append(Static(f"({p.more} more bytes not shown)", markup=False, classes="preview-head"))
        return out

    # --- actions ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide accept and reject for a bundle in your outbox: you made it, there is nothing to decide."""
        if action in ("accept", "reject") and self.verdict is not None and self.verdict.state == "outbox":
            return False
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def _after(self, state: str) -> None:
        self.run_worker(self.reload, exclusive=True, group="reload")

    def action_accept(self) -> None:
        if self.verdict is None:
            self.app.notify("Nothing to accept here.", severity="warning", markup=False)
            return
        decide.accept(self, self.verdict, self._after)

    def action_reject(self) -> None:
        if self.verdict is None:
            self.app.notify("Nothing to reject here.", severity="warning", markup=False)
            return
        decide.reject(self, self.verdict, self._after)

    def action_pair(self) -> None:
        self.app.pair_with_sender(self.verdict)  # type: ignore[attr-defined]

    def action_export(self) -> None:
        export.start(self, self.bundle_id)  # even with no verdict shown: the export says why it cannot
