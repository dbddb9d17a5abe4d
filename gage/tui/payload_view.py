"""The payload panel's parts: a virtual file list and one bounded preview at a time.

A bundle may list 10,000 files, and a text file may be a few MiB of short lines. Nothing
here grows with the bundle on the UI thread, so the interface never freezes: the file list holds the
names and draws only the rows in view (Textual's Line API, as toolong does), and the
preview holds one file's first `PREVIEW_LIMIT` bytes as lines, read in a thread worker
by `read_preview`, and draws only the lines in view. Lines are not wrapped: a line wider
than the panel is cut, and says so (`gage read` prints it whole).

Every name and line is made visible first (controls as escapes; a payload line as
`gage read` prints it, through `gage.format.sanitize.payload_lines`), then drawn as plain
segments: nothing is parsed as markup.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from gage.bundle import PAYLOAD, safeopen
from gage.format.manifest import FileEntry
from gage.format.sanitize import TEXT_SAMPLE, looks_binary, payload_lines
from gage.trust.frame import PREVIEW_LIMIT
from gage.tui import safe

CUT = "→"  # ends a line cut at the panel's edge
LIST_HEIGHT = 8  # rows of the file list shown at once


@dataclass
class Preview:
    """What can be shown of one payload file: at most PREVIEW_LIMIT bytes of it, as lines."""

    name: str
    size: int
    kind: str  # text, binary, unreadable
    lines: list[str] = field(default_factory=list)  # as `gage read` prints them after "| "
    more: int = 0  # bytes not shown
    why: str = ""  # for an unreadable file
    source_bytes: int = 0  # bytes the lines were made from (at most PREVIEW_LIMIT)


def read_preview(root: os.PathLike[str] | str, path: str, size: int) -> Preview:
    """One payload file for display: never through a symlink, never blocking on a FIFO, at
    most PREVIEW_LIMIT bytes, by the text-or-binary rule of spec/frame.md. Runs in a worker."""
    try:
        data, size_if_more = safeopen.read_head(root, f"{PAYLOAD}/{path}", PREVIEW_LIMIT)
    except OSError as exc:
        return Preview(path, size, "unreadable", why=exc.strerror or "cannot open")
    more = size_if_more is not None
    if looks_binary(data[:TEXT_SAMPLE], more=more or len(data) > TEXT_SAMPLE):
        return Preview(path, size, "binary")
    lines, shown = payload_lines(data, more=more)
    left = max(size_if_more - shown, 1) if size_if_more is not None else 0
    return Preview(path, size, "text", lines, more=left, source_bytes=len(data))


def _row(text: str, width: int, style: Style | None = None) -> Strip:
    """One row of plain text, cut to `width` cells with CUT when it goes on."""
    head = text[: width * 2 + 2]  # never measure more than a row could show
    strip = Strip([Segment(head, style)])
    if strip.cell_length > width or len(head) < len(text):
        strip = Strip([Segment(head, style)]).crop(0, max(width - 1, 0))
        strip = Strip([*strip, Segment(CUT, Style(dim=True))])
    return strip.extend_cell_length(width, style)


class FileList(ScrollView, can_focus=True):
    """Every file the manifest lists, drawn only where in view; the cursor picks the preview."""

    BINDINGS = [
        Binding("up", "move(-1)", "Previous file", show=False),
        Binding("down", "move(1)", "Next file", show=False),
        Binding("pageup", "move(-8)", show=False),
        Binding("pagedown", "move(8)", show=False),
        Binding("home", "move(-1000000)", show=False),
        Binding("end", "move(1000000)", show=False),
    ]

    class Chosen(Message):
        """The cursor moved to file `index`."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, entries: list[FileEntry] | tuple[FileEntry, ...], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries = entries
        self.cursor = 0
        self.styles.height = min(len(entries), LIST_HEIGHT) or 1

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.entries))

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.entries))

    def text_of(self, index: int) -> str:
        e = self.entries[index]
        return f"{'▶' if index == self.cursor else ' '} {safe.one_line(e.path, limit=400)}  ({e.size} bytes)"

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_offset.y) + y
        width = self.size.width
        if index >= len(self.entries):
            return Strip.blank(width)
        style = Style(reverse=True, bold=True) if index == self.cursor and self.has_focus else None
        if index == self.cursor and not self.has_focus:
            style = Style(bold=True)
        return _row(self.text_of(index), width, style)

    def action_move(self, step: int) -> None:
        self.select(self.cursor + step)

    def select(self, index: int) -> None:
        index = max(0, min(index, len(self.entries) - 1))
        if index == self.cursor:
            return
        self.cursor = index
        height = self.size.height or 1
        top = round(self.scroll_offset.y)
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False)
        self.refresh()
        self.post_message(self.Chosen(index))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


class PreviewLines(Widget):
    """One preview's lines, as tall as the lines (behind the CSS bar of `.preview`); only rows in view are drawn."""

    DEFAULT_CSS = "PreviewLines { height: auto; }"

    def __init__(self, preview: Preview, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.preview = preview

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(len(self.preview.lines), 1)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self.preview.lines
        if y >= len(lines):
            return Strip.blank(width)
        return _row(lines[y], max(width, 1))
