"""The help screen: every key, generated from gage.tui.bindings, and what verdicts mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from gage.trust.frame import VERDICT_MEANING
from gage.tui.bindings import GROUPS, key_name

TITLES = {
    "everywhere": "Everywhere",
    "inbox": "Inbox",
    "bundle": "A bundle",
    "ceremony": "Pairing (word-pair ceremony)",
    "contacts": "Contacts",
}


def help_content() -> Content:
    """The whole help text, from the same table the footer and the palette use."""
    parts: list[Content | str] = []
    for group, keys in GROUPS.items():
        parts.append(Content.styled(TITLES[group] + "\n", "bold underline"))
        for k in keys:
            parts.append(Content.assemble(Content.styled(f"  {key_name(k):<9}", "bold $accent"), f" {k.help}\n"))
        parts.append("\n")
    parts.append(Content.styled("Verdicts (computed by gage on your machine)\n", "bold underline"))
    for name, style in (("verified", "bold green"), ("unverified", "bold yellow"), ("invalid", "bold red")):
        parts.append(Content.assemble(Content.styled(f"  {name:<11}", style), f"{VERDICT_MEANING[name]}\n"))
    parts.append(
        "\nThe frame (top of a bundle) is drawn by gage; the payload below it is the sender's and is shown\n"
        "literally. Nothing arrives accepted: only a/accept moves a bundle out of pending.\n"
        "A2A in the Via column: it arrived over A2A. Who the transport says sent it is a claim; the\n"
        "signature decides, and A2A! (and a red transport line in the frame) means they disagree.\n"
        "The mouse works too: click tabs, rows and buttons. Ctrl+P searches all commands."
    )
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "gage · keys"
            box.border_subtitle = "Esc closes"
            yield Static(help_content(), markup=False, id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
