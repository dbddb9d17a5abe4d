"""The one confirmation in front of the gate: accept or reject, one bundle or several.

Accepting is the act the whole of gage rests on, so no single key may do it. A stray
letter typed into the interface (a word meant for a pairing field, after a toast took
the focus) must never move a bundle. This dialog therefore has no letter bindings at
all: it opens with Cancel focused, so Enter or Space cancels, Escape cancels, and the
act itself needs the focus moved to its button (Tab, Shift+Tab, the arrows) and then
Enter, or a click. Every bundle it will act on is listed, by id, verdict, sender (as the
verdict names it) and subject (the sender's words, literally), so what is confirmed is
what is seen.

For a reject the dialog also asks for an optional reason; Enter in the reason field is
the deliberate act there (the person moved into the field and typed).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from gage.trust.verdict import Verdict
from gage.tui import safe

VERDICT_STYLE = {"verified": "bold green", "unverified": "bold yellow", "invalid": "bold red"}


@dataclass(frozen=True)
class GateAnswer:
    """The person confirmed: `why` is the reject reason ("" for none; unused for accept)."""

    why: str = ""


def bundle_line(v: Verdict) -> Content:
    """One bundle as the dialog lists it: id, verdict, sender as the verdict names it, subject."""
    subject = v.manifest.subject if v.manifest and v.manifest.subject is not None else "(no subject)"
    return Content.assemble(
        Content.styled((v.id or "?")[:12], "bold"),
        "  ",
        Content.styled(v.verdict.upper(), VERDICT_STYLE.get(v.verdict, "bold")),
        "  from ",
        safe.literal(v.sender.describe(), "bold", limit=60),
        "  \"",
        safe.literal(subject, limit=80),
        "\"",
    )


class GateDialog(ModalScreen[GateAnswer | None]):
    """Accept or reject the listed bundles; None when cancelled. Cancel has the focus."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("tab", "app.focus_next", "Next"),
        Binding("shift+tab", "app.focus_previous", "Previous", show=False),
        Binding("left", "app.focus_previous", "Previous", show=False),
        Binding("right", "app.focus_next", "Next", show=False),
    ]

    def __init__(
        self,
        title: str,
        bundles: list[Verdict],
        *,
        act: str,
        notes: list[Content] | None = None,
        reason: bool = False,
    ) -> None:
        super().__init__(classes="dialog")
        self._title = title  # gage's own words
        self._bundles = bundles
        self._act = act  # the button's label: gage's own words
        self._notes = notes or []
        self._reason = reason

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box") as box:
            box.border_title = self._title
            with VerticalScroll(id="gate-list", can_focus=False):
                for v in self._bundles:
                    yield Static(bundle_line(v), markup=False, classes="dialog-line gate-bundle")
            for line in self._notes:
                yield Static(line, markup=False, classes="dialog-line")
            if self._reason:
                yield Static("Reason (optional; kept in your journal), then Enter:", markup=False, classes="dialog-line")
                yield Input(placeholder="why (optional)", id="reason")
            yield Static(
                f"Cancel has the focus: Tab to \"{self._act}\", then Enter. Esc cancels.",
                markup=False,
                classes="dialog-line gate-hint",
            )
            with Horizontal(id="dialog-buttons"):
                yield Button(self._act, id="yes", variant="error")
                yield Button("Cancel", id="no", variant="default")
        yield Footer()

    AUTO_FOCUS = "#no"  # whatever else happens, the focus starts on Cancel, never on the act

    def on_mount(self) -> None:
        for button in self.query("#no"):
            button.focus()

    def _why(self) -> str:
        found = self.query("#reason")
        return found.first(Input).value.strip() if found else ""

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(GateAnswer(self._why()))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(GateAnswer(self._why()) if event.button.id == "yes" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
