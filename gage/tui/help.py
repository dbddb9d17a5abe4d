"""The help screen: every key, generated from gage.tui.bindings, and what verdicts mean.

Each key is a row of two columns (the key, then what it does), so a long sentence wraps
under its own column at any width instead of under the key; paragraphs carry no hard
line breaks, so they re-wrap evenly at 80 columns and at 200.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Static

from gage.trust.frame import VERDICT_MEANING
from gage.tui.bindings import GROUPS, key_name

TITLES = {
    "everywhere": "Everywhere",
    "inbox": "Inbox",
    "bundle": "A bundle",
    "ceremony": "Pairing (word-pair ceremony)",
    "mutual": "Pairing both ways (the mutual ceremony)",
    "contacts": "Contacts",
    "invite": "Pairing through a relay (everywhere)",
}
VERDICT_STYLES = (("verified", "bold green"), ("unverified", "bold yellow"), ("invalid", "bold red"))
NOTES = (
    "The frame (top of a bundle) is drawn by gage; the payload below it is the sender's and is shown literally.",
    "Nothing arrives accepted: only accepting, confirmed in a dialog that opens with Cancel focused, moves a bundle"
    " out of pending. Space marks several bundles (* marks every row shown); a or r then acts on all of them,"
    " after one confirmation, with a progress bar while it works.",
    "S sorts the inbox by the next column; a click on a column's header sorts by it, a second click the other way."
    " j, k, g and G move as Down, Up, Home and End.",
    "A2A in the Via column: it arrived over A2A. Who the transport says sent it is a claim; the signature decides,"
    " and A2A! (and a red transport line in the frame) means they disagree.",
    "The mouse works too: click tabs, rows and buttons. Ctrl+P searches all commands.",
)


def help_rows() -> list[tuple[str, str, str]]:
    """(section, key, what it does) for every key, from the same table the footer and the palette use."""
    return [(group, key_name(k), k.help) for group, keys in GROUPS.items() for k in keys]


def help_widgets() -> list[Widget]:
    out: list[Widget] = []
    for group, keys in GROUPS.items():
        out.append(Static(Content.styled(TITLES[group], "bold underline"), markup=False, classes="help-title"))
        for k in keys:
            out.append(
                Horizontal(
                    Static(Content.styled(key_name(k), "bold $accent"), markup=False, classes="help-key"),
                    Static(k.help, markup=False, classes="help-what"),
                    classes="help-row",
                )
            )
    out.append(Static(Content.styled("Verdicts (computed by gage on your machine)", "bold underline"), markup=False, classes="help-title"))
    for name, style in VERDICT_STYLES:
        out.append(
            Horizontal(
                Static(Content.styled(name, style), markup=False, classes="help-key"),
                Static(VERDICT_MEANING[name], markup=False, classes="help-what"),
                classes="help-row",
            )
        )
    for note in NOTES:
        out.append(Static(note, markup=False, classes="help-note"))
    return out


def help_text() -> str:
    """The whole help as plain text (what the screen shows, for tests and search)."""
    lines = [f"{TITLES[g]}: {key} {what}" for g, key, what in help_rows()]
    lines += [f"{n}: {VERDICT_MEANING[n]}" for n, _ in VERDICT_STYLES]
    return "\n".join([*lines, *NOTES])


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "gage · keys"
            box.border_subtitle = "Esc closes"
            yield from help_widgets()
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
