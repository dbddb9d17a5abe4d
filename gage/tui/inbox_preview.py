"""The preview pane beside the inbox list, at wide sizes: the frame first, then a bounded preview.

At 140 columns and more there is room to see what a bundle is before opening it. The pane
shows the selected bundle's frame (gage.trust.frame.fields: gage's words, bordered, with a fixed
title) and under it, in its own border, the first lines of its first file, read in a
thread worker through the same bounded, never-following-links reader as the bundle view
(gage.tui.payload_view.read_preview), so a large or slow file never blocks the list. The
payload part follows the same rule as the bundle view: nothing of an invalid bundle.

Only the frame is drawn on the UI thread, from the verdict the row already has; moving the
cursor cancels the read of the previous row (an exclusive worker group).

Both boxes are drawn by one widget, from one state changed in one step on the UI thread:
a paint shows the frame and the lines of one bundle, or neither changed. Mounting a new
lines widget per bundle was not (a removal completes some messages later), nor
were two widgets that stay mounted: Textual takes each widget's refresh to the screen at
that widget's own idle, so under load the frame of one bundle was painted over the lines
of the one before.
"""

from __future__ import annotations

import contextlib
from functools import partial

from textual.content import Content
from textual.widget import Widget
from textual.worker import get_current_worker

from gage.trust.frame import fields, payload_status
from gage.trust.verdict import Verdict
from gage.tui import safe
from gage.tui.payload_view import CUT, Preview, read_preview

WIDE = 140  # columns from which the pane is shown
PANE_WIDTH = 0.4  # of the screen's width
PREVIEW_LINES = 12  # lines of the first file shown (the bundle view shows the rest)
FRAME_FIELDS = 9  # fields of the frame shown (problems beyond are counted)
GROUP = "inbox-preview"


class PreviewPane(Widget):
    """The frame and a bounded preview of one bundle, or a line saying why nothing is shown.

    One widget draws both boxes, so a paint shows either both parts of one bundle or
    neither changed: Textual takes each widget's refresh to the screen at that widget's own
    idle, and two widgets (a frame box and a payload box) were painted a moment apart, the
    frame of one bundle over the lines of the one before (seen under load; the test makes
    the idles late on purpose)."""

    DEFAULT_CSS = "PreviewPane { text-wrap: nowrap; text-overflow: clip; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shown: str | None = None  # the bundle id shown, with its verdict
        self.payload_of: str | None = None  # the bundle whose lines are shown (always `shown`), if any
        self._verdict: Verdict | None = None
        self._frame: Content = Content("Nothing selected.")
        self._head: Content = Content("")
        self._lines: list[str] = []

    def _set(self, frame: Content, head: Content, lines: list[str], payload_of: str | None) -> None:
        """Everything the pane draws, changed in one step and painted in one refresh."""
        self._frame, self._head, self._lines, self.payload_of = frame, head, lines, payload_of
        self.refresh()

    def show(self, bundle_id: str | None, v: Verdict | None) -> None:
        """Show this bundle (None: nothing selected). Cheap on the UI thread; the file is read in a worker."""
        if bundle_id == self.shown and v is self._verdict:
            return
        self.shown, self._verdict = bundle_id, v
        if bundle_id is None:
            self._set(Content("Nothing selected."), Content(""), [], None)
            return
        if v is None:
            self._set(Content.assemble(Content.styled(bundle_id[:12], "bold"), "  checking… nothing verified yet"), Content(""), [], None)
            return
        frame = frame_content(v)
        ok, why = payload_status(v, show_pending=True)
        if not ok or v.manifest is None or not v.manifest.files:
            self._set(frame, Content(why if not ok else "(no files)"), [], None)
            return
        first = v.manifest.files[0]
        self._set(frame, Content.assemble(safe.literal(first.path, "bold", limit=80), " · reading…"), [], None)
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
        head = Content.assemble(safe.literal(preview.name, "bold", limit=80), f" · {preview.size} bytes{what}{others}")
        if preview.kind == "text":
            self._set(self._frame, head, preview.lines[:PREVIEW_LINES], bundle_id)
        else:
            self._set(self._frame, head, [], None)

    def render(self) -> Content:
        """Both boxes, line by line, each exactly the pane's width (nothing for Textual to wrap)."""
        width, height = self.size.width, self.size.height
        if width < 8 or height < 4:
            return Content("")
        inner = width - 4  # a border and a space each side
        verdict = self._verdict.verdict if self._verdict is not None else ""
        edge = FRAME_EDGE.get(verdict, "$primary")
        out: list[Content] = []
        frame_lines = [part for line in self._frame.rstrip("\n").split("\n", allow_blank=True) for part in (line.wrap(inner) or [Content("")])]
        out.append(_top("┏", "━", "┓", " gage frame ", width, edge, "bold $foreground"))
        out.extend(_side("┃", line, inner, edge) for line in frame_lines)
        out.append(_top("┗", "━", "┛", "", width, edge, ""))
        room = height - len(out) - 2  # the payload box's own top and bottom
        if room >= 1:
            head = self._head.wrap(inner)[:2] if self._head.plain else []
            bar = Content.styled("▌ ", "$secondary")  # the sender's lines, as in the bundle view
            body = [*head, *(Content.assemble(bar, _cut(line, inner - 2)) for line in self._lines)]
            body += [Content("")] * max(room - len(body), 0)
            out.append(_top("╭", "─", "╮", " payload · first lines, literally ", width, "$secondary", "$foreground-muted"))
            out.extend(_side("│", line, inner, "$secondary") for line in body[:room])
            out.append(_top("╰", "─", "╯", "", width, "$secondary", ""))
        return Content("\n").join(out[:height])


FRAME_EDGE = {"verified": "$success", "unverified": "$warning", "invalid": "$error"}


def _top(left: str, fill: str, right: str, title: str, width: int, edge: str, title_style: str) -> Content:
    """A box's top or bottom edge, a title set into it after two edge characters."""
    middle = width - 2
    if not title:
        return Content.styled(left + fill * middle + right, edge)
    title = title[: max(middle - 2, 0)]
    rest = max(middle - 1 - len(title), 0)
    return Content.assemble(Content.styled(left + fill, edge), Content.styled(title, title_style), Content.styled(fill * rest + right, edge))


def _side(edge_char: str, line: Content, inner: int, edge: str) -> Content:
    """One line inside a box: the edges in the box's colour, the line cut or padded to fit."""
    return Content.assemble(Content.styled(edge_char + " ", edge), line.truncate(inner, pad=True), Content.styled(" " + edge_char, edge))


def _cut(line: str, width: int) -> Content:
    """A payload line as literal text, cut to `width` with CUT when it goes on (never wrapped)."""
    text = Content(line)
    if text.cell_length <= width:
        return text
    return Content.assemble(text.truncate(max(width - 1, 0)), Content.styled(CUT, "dim"))


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
