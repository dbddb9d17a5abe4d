"""One bundle: gage's frame on top, the sender's payload below, never mixed.

The frame is a bordered panel with a fixed title, filled only from `gage.trust.frame.fields`
(values already made visible) and coloured by severity through CSS classes, so nothing
in the bundle can choose how the frame looks. The payload panel below has its own
border and title; every preview line is literal text with controls escaped, drawn
with a bar on its left so a payload that imitates the frame still looks like payload.

Where a carrier (A2A) said the bundle came from is part of the frame (`via`, and a
`transport` line in the bad colour for each way it disagrees with the signature); the
summary bar, which stays in view while the payload scrolls, repeats it (gage.tui.via).
Any bundle shown here, yours from the outbox too, can be exported as an A2A artifact.

Nothing here grows with the bundle on the UI thread, so the interface never freezes: the verdict
(which hashes every byte) is computed in a thread worker, the frame shows at most
`MAX_PROBLEMS` problems, the file list is virtual and only one file is previewed at a
time, read in a worker and bounded (gage.tui.payload_view).
"""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from gage.format.errors import GageError
from gage.home import listing
from gage.home.listing import Stored
from gage.trust.frame import PREVIEW_LIMIT, Field, fields, payload_status
from gage.trust.verdict import Verdict, compute
from gage.tui import decide, export, files, safe, via
from gage.tui import outbox as tui_outbox
from gage.tui.applies import BUNDLE_ACTIONS, applies
from gage.tui.bindings import bindings_for
from gage.tui.frame_compact import (
    COMPACT_BELOW,
    CUT_SEVERITIES,
    NEVER_CUT,
    compact_fields,
)
from gage.tui.payload_view import FileList, Preview, PreviewLines, read_preview

FRAME_TITLE = "gage frame · written by gage, not by the sender"
PAYLOAD_TITLE = "payload · the sender's files, shown literally"
MAX_PROBLEMS = 20  # problems and notes shown in the frame; `gage verdict ID --json` lists them all
LOAD_GROUP = "bundle-load"
PREVIEW_GROUP = "bundle-preview"
STATUS_SECONDS = 6  # a message on the status line stays this long (unless it says otherwise)


class BundleScreen(Screen[None]):
    BINDINGS = bindings_for("bundle")
    GROUP = "bundle"

    def __init__(self, bundle_id: str) -> None:
        super().__init__(id="bundle")
        self.bundle_id = bundle_id
        self.verdict: Verdict | None = None
        self.preview: Preview | None = None  # the one file previewed now
        self.delivery: str | None = None  # a bundle I made: what became of its deliveries, in one line
        self._status_timer: Timer | None = None
        self._drawing = asyncio.Lock()  # one redraw at a time (see _show); bound to the loop at first use

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", markup=False, id="bundle-status")  # in the header's place while it shows
        yield Static("", markup=False, id="verdict-bar")
        with VerticalScroll(id="bundle-body"):
            frame = Vertical(id="frame")
            frame.border_title = FRAME_TITLE
            yield frame
            payload = Vertical(id="payload")
            payload.border_title = PAYLOAD_TITLE
            yield payload
        yield Footer(compact=True, show_command_palette=False)  # Ctrl+P still opens it; the space is for keys

    def status(self, message: str, title: str, severity: str, timeout: float | None) -> None:
        """A message for this screen, on one line in the header's place: toasts would cover the payload
        (gage.tui.app.notify sends them here; they are not drawn as toasts on this screen)."""
        line = self.query_one("#bundle-status", Static)
        style = {"error": "bold $text-error", "warning": "$text-warning"}.get(severity, "$text-success")
        line.update(Content.assemble(Content.styled(f"{title}: " if title else "", style + " bold"), safe.literal(message, style, limit=400)))
        line.display = True
        self.query_one(Header).display = False  # the line takes the header's place: the payload keeps its room
        if self._status_timer is not None:
            self._status_timer.stop()
        self._status_timer = self.set_timer(timeout or STATUS_SECONDS, self._clear_status)

    def _clear_status(self) -> None:
        self._status_timer = None
        self.query_one("#bundle-status", Static).display = False
        self.query_one(Header).display = True

    async def on_mount(self) -> None:
        self.query_one("#bundle-status", Static).display = False
        self.query_one("#frame", Vertical).mount(Static("Checking the bundle…", markup=False, classes="loading"))
        await self.reload()
        self.query_one("#bundle-body").focus()

    async def reload(self) -> None:
        """Recompute the verdict from the bundle as it is now, in a thread worker; redraw when it is ready."""
        home = self.app.home  # type: ignore[attr-defined]
        self.run_worker(
            partial(self._load, home),
            thread=True,
            exclusive=True,
            group=LOAD_GROUP,
            name=f"bundle {self.bundle_id[:12]}",
            description=f"check bundle {self.bundle_id[:12]}",
            exit_on_error=False,
        )

    def _load(self, home: object) -> None:
        """In the worker: find and check the bundle (hashing every byte), then hand the result to the UI thread."""
        worker = get_current_worker()
        stored: Stored | None = None
        result: tuple[Verdict, list[Field]] | str | None
        try:
            stored = listing.find(home, self.bundle_id)  # type: ignore[arg-type]
            v = compute(home, stored) if stored is not None else None  # type: ignore[arg-type]
            self.delivery = tui_outbox.delivery_line(home, self.bundle_id) if stored and stored.state == "outbox" else None  # type: ignore[arg-type]
            # The frame's fields too: a problem per file (10,000) is work that grows with the bundle.
            result = (v, fields(v)) if v is not None else None
        except (GageError, OSError) as exc:
            result = safe.error_text(exc)
        except Exception as exc:  # noqa: BLE001 - shown, never a crash of the interface
            result = safe.error_text(exc) or type(exc).__name__
        if not worker.is_cancelled:
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.app.call_from_thread(self._show, result)

    async def _show(self, result: tuple[Verdict, list[Field]] | str | None) -> None:
        """On the UI thread: a bounded number of widgets, whatever the bundle holds.

        One redraw at a time: a reload after an accept, a resize and a check finishing can each
        ask for one, and two interleaved at their awaits would remove the widgets the other is
        mounting (seen as a file heading left attached but never started, under CI load)."""
        async with self._drawing:
            await self._draw(result)

    async def _draw(self, result: tuple[Verdict, list[Field]] | str | None) -> None:
        if not self.is_attached:
            return  # the person left before the check finished
        frame = self.query_one("#frame", Vertical)
        payload = self.query_one("#payload", Vertical)
        bar = self.query_one("#verdict-bar", Static)
        await frame.remove_children()
        await payload.remove_children()
        self.preview = None
        if result is None:
            self.verdict = None
            await frame.mount(Static("This bundle is no longer in your home (moved or removed).", markup=False, classes="sev-bad"))
            return
        if isinstance(result, str):
            self.verdict = None
            await frame.mount(Static(Content.styled(result, "bold"), markup=False, classes="sev-bad"))
            return
        v, frame_fields = result
        self.verdict = v
        self.refresh_bindings()  # accept and reject are hidden for a bundle of your own (outbox)
        for name in ("verified", "unverified", "invalid"):
            frame.set_class(name == v.verdict, f"verdict-{name}")
            bar.set_class(name == v.verdict, f"verdict-{name}")
        bar.update(self.summary(v))
        self._last = result
        self.set_class(self.compact(), "compact")
        await frame.mount_all(self.frame_widgets(v, frame_fields, compact=self.compact()))
        if v.state == "outbox" and self.delivery:
            await frame.mount(Static(safe.literal(self.delivery, limit=600), markup=False, classes="action-line", id="delivery-line"))
        await payload.mount_all(self.payload_widgets(v))
        if self.previewing():
            self.load_preview(0)

    # --- the payload: one file previewed at a time ---------------------------------------

    def previewing(self) -> bool:
        v = self.verdict
        return v is not None and v.manifest is not None and bool(v.manifest.files) and payload_status(v, show_pending=True)[0]

    def on_file_list_chosen(self, message: FileList.Chosen) -> None:
        message.stop()
        if self.previewing():
            self.load_preview(message.index)

    def action_file(self, step: int) -> None:
        """n / N: the next or previous file's preview, wherever the focus is."""
        lists = self.query(FileList)
        if lists:
            lists.first().select(lists.first().cursor + step)

    def load_preview(self, index: int) -> None:
        v = self.verdict
        if v is None or v.manifest is None:
            return
        entry = v.manifest.files[index]
        head = self.query("#preview-head")
        if head:
            head.first(Static).update(Content.assemble("── ", safe.literal(entry.path, "bold"), " ── reading…"))
        # The file before goes with its name: its lines under the next file's name, for as
        # long as that read takes, would say they are that file's.
        self.preview = None
        for old in self.query("PreviewLines, #preview-tail"):
            old.display = False
        self.run_worker(
            partial(self._read, v, index),
            thread=True,
            exclusive=True,
            group=PREVIEW_GROUP,
            name=f"preview {index}",
            description=f"preview file {index}",  # not repr(work): that would print the whole verdict
            exit_on_error=False,
        )

    def _read(self, v: Verdict, index: int) -> None:
        """In the worker: one file, at most PREVIEW_LIMIT bytes (gage.tui.payload_view)."""
        assert v.manifest is not None
        entry = v.manifest.files[index]
        preview = read_preview(v.path, entry.path, entry.size)
        if not get_current_worker().is_cancelled:
            with contextlib.suppress(RuntimeError):
                self.app.call_from_thread(self._show_preview, v, index, preview)

    async def _show_preview(self, v: Verdict, index: int, preview: Preview) -> None:
        async with self._drawing:  # never while a redraw is removing and mounting the payload
            await self._draw_preview(v, index, preview)

    async def _draw_preview(self, v: Verdict, index: int, preview: Preview) -> None:
        if not self.is_attached:
            return
        lists = self.query(FileList)
        if v is not self.verdict or not lists or lists.first().cursor != index:
            return  # a newer verdict or another file was chosen meanwhile
        self.preview = preview
        head = self.query_one("#preview-head", Static)
        what = {"text": "text", "binary": "binary: not shown", "unreadable": f"cannot be read ({preview.why})"}[preview.kind]
        more = f"; {preview.more} more bytes not shown" if preview.more else ""
        cut = "; long lines are cut at the edge (→)" if preview.kind == "text" else ""
        head.update(
            Content.assemble("── ", safe.literal(preview.name, "bold"), f" ── {preview.size} bytes, {what}{more}{cut}")
        )
        for old in self.query("PreviewLines, #preview-tail"):
            await old.remove()
        payload = self.query_one("#payload", Vertical)
        if preview.kind == "text":
            await payload.mount(PreviewLines(preview, id="preview", classes="preview"))
        if preview.more:
            tail = f"({preview.more} more bytes not shown: the preview stops at {PREVIEW_LIMIT // 1024} KiB)"
            await payload.mount(Static(tail, markup=False, id="preview-tail", classes="preview-head"))

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

    def compact(self) -> bool:
        """A short terminal (80x24): the frame is drawn compactly, so the first payload lines show."""
        return self.app.size.height < COMPACT_BELOW

    async def on_resize(self) -> None:
        last = getattr(self, "_last", None)
        if last is not None and self.has_class("compact") != self.compact():
            await self._show(last)

    @staticmethod
    def frame_widgets(v: Verdict, frame_fields: list[Field] | None = None, *, compact: bool = False) -> list[Widget]:
        out: list[Widget] = []
        shown: dict[str, int] = {}
        all_fields = fields(v) if frame_fields is None else frame_fields
        for f in compact_fields(all_fields) if compact else all_fields:
            if f.label in ("problem", "note"):
                # A bundle can have a problem per file (10,000): the frame shows a bounded few.
                shown[f.label] = shown.get(f.label, 0) + 1
                if shown[f.label] > MAX_PROBLEMS:
                    continue
            out.append(_field(f.label, f.value, f.severity, cut=compact and f.severity in CUT_SEVERITIES and f.label not in NEVER_CUT))
        for label, n in shown.items():
            if n > MAX_PROBLEMS:
                more = f"… and {n - MAX_PROBLEMS} more ({n} in all): `gage verdict ID --json` lists every one"
                out.append(_field(label, more, "bad" if label == "problem" else "warn"))
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
            out.append(Static("a: accept (after one confirmation) · r: reject", markup=False, classes="action-line"))
        return out

    @staticmethod
    def payload_widgets(v: Verdict) -> list[Widget]:
        """A bounded handful of widgets: banners, the virtual file list, the preview's heading."""
        m = v.manifest
        show, why = payload_status(v, show_pending=True)
        out: list[Widget] = []
        if not show:
            out.append(Static(why, markup=False, classes="payload-banner sev-bad"))
            if m is not None:
                out.append(Static("Files it lists (names only, nothing opened):", markup=False))
                out.append(FileList(m.files, id="files"))
            return out
        if v.state == "pending":
            out.append(
                Static(
                    "NOT ACCEPTED: a pending bundle, under review. Nothing in it was acted on.",
                    markup=False,
                    classes="payload-banner sev-warn",
                )
            )
        elif v.state == "rejected":
            out.append(Static("REJECTED: shown for reference only.", markup=False, classes="payload-banner sev-warn"))
        assert m is not None
        n = len(m.files)
        out.append(
            Static(
                f"{n} file{'s' if n != 1 else ''}, {m.total_size} bytes · n / N (or ↑ ↓ in the list): next or previous file",
                markup=False,
                classes="files-head",
            )
        )
        out.append(FileList(m.files, id="files"))
        if m.files:
            out.append(Static("", markup=False, id="preview-head", classes="preview-head"))
        return out

    # --- actions ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer exactly what applies to this bundle (gage.tui.applies): nothing to decide on
        while it is being checked, on an invalid bundle, or on one already decided or yours;
        the file keys only when there is more than one file to preview."""
        v = self.verdict
        if action == "file":
            return v is not None and v.manifest is not None and len(v.manifest.files) > 1 and self.previewing()
        if action not in BUNDLE_ACTIONS or action == "export":
            return True  # export says why it cannot, even with no verdict shown
        if v is None:
            return False
        return applies(action, v.state, v)

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

    def action_folder(self) -> None:
        files.show_folder(self, self.bundle_id)

    def action_save(self) -> None:
        files.save(self, self.bundle_id)


def _field(label: str, value: str, severity: str, *, cut: bool = False) -> Widget:
    return Horizontal(
        Static(label + ":", markup=False, classes="flabel"),
        Static(safe.literal(value, limit=2000), markup=False, classes=f"fvalue sev-{severity}" + (" cut" if cut else "")),
        classes="field",
    )
