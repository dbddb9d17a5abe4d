"""The preview pane beside the inbox list, at wide sizes: the frame first, then a bounded preview.

At 140 columns and more there is room to see what a bundle is before opening it. The pane
shows the selected bundle's frame (gage.trust.frame.fields: gage's words, bordered, with a fixed
title) and under it, in its own border, the first lines of its first file, read in a
thread worker through the same bounded, never-following-links reader as the bundle view
(gage.tui.payload_view.read_preview), so a large or slow file never blocks the list. The
payload part follows the same rule as the bundle view: nothing of an invalid bundle.

Only the frame is drawn on the UI thread, from the verdict the row already has; moving the
cursor cancels the read of the previous row (an exclusive worker group).

The frame and the payload lines are widgets that stay mounted; a move changes both in one
step on the UI thread (the lines are hidden with the frame's change, and shown again only
with the lines of the bundle the frame names). Mounting a new lines widget per bundle and
removing the old one was not: a removal completes some messages later, and a frame painted
in between stood over the previous bundle's payload (issue 27).
"""

from __future__ import annotations

import contextlib
from functools import partial

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static
from textual.worker import get_current_worker

from gage.trust.frame import fields, payload_status
from gage.trust.verdict import Verdict
from gage.tui import safe
from gage.tui.payload_view import Preview, PreviewLines, read_preview

WIDE = 140  # columns from which the pane is shown
PANE_WIDTH = 0.4  # of the screen's width
PREVIEW_LINES = 12  # lines of the first file shown (the bundle view shows the rest)
FRAME_FIELDS = 9  # fields of the frame shown (problems beyond are counted)
GROUP = "inbox-preview"


class PreviewPane(Vertical):
    """The frame and a bounded preview of one bundle, or a line saying why nothing is shown."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shown: str | None = None  # the bundle id shown, with its verdict
        self.payload_of: str | None = None  # the bundle whose lines are shown (always `shown`), if any
        self._verdict: Verdict | None = None

    def compose(self) -> ComposeResult:
        frame = Vertical(id="pane-frame")
        frame.border_title = "gage frame"
        with frame:
            yield Static("", markup=False, id="pane-frame-text")
        payload = Vertical(id="pane-payload")
        payload.border_title = "payload · first lines, literally"
        with payload:
            yield Static("", markup=False, id="pane-payload-head")
            lines = PreviewLines(Preview("", 0, "text"), classes="preview", id="pane-lines")
            lines.display = False
            yield lines

    def show(self, bundle_id: str | None, v: Verdict | None) -> None:
        """Show this bundle (None: nothing selected). Cheap on the UI thread; the file is read in a worker."""
        if bundle_id == self.shown and v is self._verdict:
            return
        self.shown, self._verdict = bundle_id, v
        text = self.query_one("#pane-frame-text", Static)
        head = self.query_one("#pane-payload-head", Static)
        self.payload_of = None
        self.query_one("#pane-lines", PreviewLines).display = False  # with the frame's change, in the same paint
        if bundle_id is None:
            text.update("Nothing selected.")
            head.update("")
            return
        if v is None:
            text.update(Content.assemble(Content.styled(bundle_id[:12], "bold"), "  checking… nothing verified yet"))
            head.update("")
            return
        text.update(frame_content(v))
        for name in ("verified", "unverified", "invalid"):
            self.query_one("#pane-frame").set_class(name == v.verdict, f"verdict-{name}")
        ok, why = payload_status(v, show_pending=True)
        if not ok or v.manifest is None or not v.manifest.files:
            head.update(Content(why if not ok else "(no files)"))
            return
        first = v.manifest.files[0]
        head.update(Content.assemble(safe.literal(first.path, "bold", limit=80), " · reading…"))
        self.run_worker(
            partial(self._read, v, bundle_id, first.path, first.size),
            thread=True,
            exclusive=True,
            group=GROUP,
            name=f"pane {bundle_id[:12]}",
            description=f"preview {bundle_id[:12]}",
            exit_on_error=False,
        )

    def _read(self, v: Verdict, bundle_id: str, path: str, size: int) -> None:
        preview = read_preview(v.path, path, size)
        if not get_current_worker().is_cancelled:
            with contextlib.suppress(RuntimeError):
                self.app.call_from_thread(self._shown, v, bundle_id, preview)

    def _shown(self, v: Verdict, bundle_id: str, preview: Preview) -> None:
        if not self.is_attached or self.shown != bundle_id or self._verdict is not v:
            return  # the cursor moved on meanwhile
        n = len(v.manifest.files) if v.manifest else 0
        others = f" · {n - 1} more file(s): Enter opens the bundle" if n > 1 else ""
        what = {"text": "", "binary": " · binary: not shown", "unreadable": f" · cannot be read ({preview.why})"}[preview.kind]
        self.query_one("#pane-payload-head", Static).update(
            Content.assemble(safe.literal(preview.name, "bold", limit=80), f" · {preview.size} bytes{what}{others}")
        )
        if preview.kind == "text":
            lines = self.query_one("#pane-lines", PreviewLines)
            lines.preview = Preview(preview.name, preview.size, "text", preview.lines[:PREVIEW_LINES])
            self.payload_of = bundle_id
            lines.display = True
            lines.refresh(layout=True)


def frame_content(v: Verdict) -> Content:
    """The frame's first fields, one per line, values literal (already made visible by gage.trust.frame)."""
    styles = {"good": "$text-success", "warn": "$text-warning", "bad": "bold $text-error"}
    parts: list[Content | str] = []
    all_fields = fields(v)
    for f in all_fields[:FRAME_FIELDS]:
        parts.append(Content.styled(f"{f.label + ':':<10} ", "bold"))
        parts.append(Content.styled(safe.one_line(f.value, limit=300), styles.get(f.severity, "")))
        parts.append("\n")
    if len(all_fields) > FRAME_FIELDS:
        parts.append(Content.styled(f"… {len(all_fields) - FRAME_FIELDS} more lines: Enter opens the bundle", "dim"))
    return Content.assemble(*parts)
