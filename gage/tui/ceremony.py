"""The word-pair ceremony: read my words aloud, type theirs, and let gage compare.

There is no "they match" button anywhere: the person types the eight words they hear
and `gage.trust.ceremony.confirm` compares them with the words derived from the key. The
marks beside each pair only help the person find a mishearing; they confirm nothing.
The key's claimed name and where it came from (a key file's name, a bundle) are shown
as unchecked claims, literally. The local name was asked, and checked for a clash, before
this screen opened (gage.tui.pair_name), so no words are read for a name that would be
refused.
"""

from __future__ import annotations

import re
from functools import partial

from textual.app import ComposeResult
from textual.containers import Grid, Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.suggester import Suggester
from textual.widgets import Footer, Header, Input, Static

from gage.format.keys import short_fingerprint
from gage.format.words import (
    PAIRS,
    WordPairs,
    derive,
    format_pairs,
    pair_text,
    parse_spoken,
)
from gage.format.words.wordlist import EVEN, ODD
from gage.trust import ceremony
from gage.tui import background, safe
from gage.tui.bindings import bindings_for
from gage.tui.messages import ContactsChanged

_SEP = re.compile(r"[\s,\-]")


class PairWordSuggester(Suggester):
    """Completes the word being typed from the list its position needs.

    Words 1, 3, 5, 7 come from the even list and 2, 4, 6, 8 from the odd list, so the
    completion never offers a word that could not be at that place.
    """

    def __init__(self, words: int = 2 * PAIRS) -> None:
        super().__init__(use_cache=True, case_sensitive=False)
        self.words = words  # how many words the field takes: eight, or one pair (the mutual ceremony)

    async def get_suggestion(self, value: str) -> str | None:
        if not value or _SEP.match(value[-1]):
            return None
        cut = max((m.end() for m in _SEP.finditer(value)), default=0)
        done, last = value[:cut], value[cut:]
        position = len(parse_spoken(done))
        if position >= self.words:
            return None
        for word in EVEN if position % 2 == 0 else ODD:
            if word.startswith(last) and word != last:
                return done + word
        return None


def pair_marks(expected: WordPairs, value: str) -> list[str]:
    """For each pair: "match", "mismatch", or "open" (not fully typed yet)."""
    typed = parse_spoken(value)
    still_typing = bool(value) and not _SEP.match(value[-1])
    # The word being typed counts as typed once it is a whole word of its list: the last
    # pair once stayed "waiting" after all eight words, as nothing follows the eighth.
    if still_typing and typed:
        still_typing = typed[-1] not in (EVEN if (len(typed) - 1) % 2 == 0 else ODD)
    marks = []
    for i, pair in enumerate(expected):
        got = typed[2 * i : 2 * i + 2]
        complete = len(got) == 2 and not (still_typing and len(typed) == 2 * i + 2)
        if got == list(pair):
            marks.append("match")
        elif complete:
            marks.append("mismatch")
        else:
            marks.append("open")
    return marks


MARK_TEXT = {"match": "✔ matches", "mismatch": "✘ differs", "open": "· waiting"}


def pairing_intro(key: bytes, claimed_name: str, source: str, name: str, *, heading: str) -> Content:
    """Whose key, the name it claims and where it came from (claims, shown literally), and my name for them."""
    return Content.assemble(
        Content.styled(heading, "bold"),
        Content.styled(short_fingerprint(key), "bold yellow"),
        "\n",
        "It claims the name \"",
        safe.literal(claimed_name, "bold", limit=80),
        "\" (unchecked), from ",
        safe.literal(source, limit=120),
        ". Known here as ",
        safe.literal(name, "bold", limit=64),
        ".",
    )


def demo_words(app: object, key: bytes) -> Content | None:
    """In `gage demo` only: the words the demo's other person would read to you, since the
    demo plays both people (the app is given them by the demo; any other home has none)."""
    for who, (their_key, words) in getattr(app, "demo_people", {}).items():
        if their_key == key:
            return Content.assemble(
                Content.styled("Demo: ", "bold magenta"),
                f"gage plays {safe.one_line(who, limit=40)} too; they would read you: ",
                Content.styled(format_pairs(words), "bold"),
            )
    return None


class CeremonyScreen(Screen[bool]):
    """Dismissed with True once the key is confirmed, False if the person leaves."""

    BINDINGS = bindings_for("ceremony")
    GROUP = "ceremony"

    def __init__(self, key: bytes, claimed_name: str, source: str, name: str) -> None:
        super().__init__(id="ceremony")
        self.key = key
        self.claimed_name = claimed_name
        self.local_name = name  # checked for a clash before this screen opened; confirm checks again under the lock
        self.source = source  # untrusted in part (a key file's name): shown through safe
        self.expected: WordPairs = derive(key)

    def compose(self) -> ComposeResult:
        home = self.app.home  # type: ignore[attr-defined]
        mine = ceremony.my_words(home)
        yield Header()
        yield Static(
            pairing_intro(self.key, self.claimed_name, self.source, self.local_name, heading="Pairing with key "),
            markup=False,
            id="ceremony-intro",
        )
        demo = demo_words(self.app, self.key)
        if demo is not None:
            yield Static(demo, markup=False, id="demo-words")
        yield Static("1. Read YOUR four word-pairs to them, over a call or in person:", markup=False, classes="step")
        with Grid(id="my-words"):
            for i, (a, b) in enumerate(mine):
                box = Static(pair_text(a, b), markup=False, classes="word-pair")
                box.border_title = f"pair {i + 1}"
                yield box
        yield Static("2. Type the eight words THEY read to you, then Enter (→ completes a word):", markup=False, classes="step")
        yield Input(placeholder="eight words, e.g. aardvark adroitness …", id="heard", suggester=PairWordSuggester())
        with Horizontal(id="marks"):
            for i in range(PAIRS):
                yield Static(f"pair {i + 1} {MARK_TEXT['open']}", markup=False, id=f"mark-{i}", classes="mark open")
        yield Static("", markup=False, id="explain")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#heard", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "heard":
            return
        for i, mark in enumerate(pair_marks(self.expected, event.value)):
            w = self.query_one(f"#mark-{i}", Static)
            w.update(f"pair {i + 1} {MARK_TEXT[mark]}")
            for cls in MARK_TEXT:
                w.set_class(cls == mark, cls)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def say(self, text: str, style: str = "") -> None:
        self.query_one("#explain", Static).update(Content.styled(safe.one_line(text, limit=600), style))

    def action_submit(self) -> None:
        heard = self.query_one("#heard", Input).value
        typed = parse_spoken(heard)
        if len(typed) != 2 * PAIRS:
            self.say(f"Type all eight words you hear ({len(typed)} so far), then Enter.", "yellow")
            self.query_one("#heard", Input).focus()
            return
        name = self.local_name
        home = self.app.home  # type: ignore[attr-defined]
        # Off the UI thread whenever the home lock is taken (a watcher importing): gage.tui.background.
        background.change(
            self.app,
            "ceremony",
            lambda: ceremony.confirm(home, name, self.key, heard),
            partial(self._confirmed, name),
            self._failed,
            small=True,
        )

    def _failed(self, message: str) -> None:
        if self.is_attached:
            self.say(message, "bold red")
        else:  # the person left the ceremony while it waited for the home
            self.app.notify(message, title="Not confirmed", severity="error", markup=False)

    def _confirmed(self, name: str, outcome: ceremony.Outcome) -> None:
        if not self.is_attached:
            # The person left while it waited for the home: say what happened all the same.
            if outcome.confirmed:
                self.app.notify(f"Confirmed: {safe.one_line(name)} is now a contact.", title="Paired", markup=False)
                self.app.post_message(ContactsChanged(name))
            return
        if not outcome.confirmed:
            for i in outcome.mismatched:
                w = self.query_one(f"#mark-{i}", Static)
                w.update(f"pair {i + 1} {MARK_TEXT['mismatch']}")
                for cls in MARK_TEXT:
                    w.set_class(cls == "mismatch", cls)
            self.say(outcome.message, "bold red")
            return
        self.app.notify(f"Confirmed: {safe.one_line(name)} is now a contact.", title="Paired", markup=False)
        self.app.post_message(ContactsChanged(name))
        self.dismiss(True)

    def action_back(self) -> None:
        self.dismiss(False)
