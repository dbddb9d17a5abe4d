"""The mutual ceremony: two people on one call pair both ways in one flow (spec/ceremony.md).

As `gage pair --mutual` does it: for each pair i, the screen shows MY pair i to read aloud,
then asks for THEIR pair i, and asks it again until it matches or the person gives up
(`give up`, or Esc). Each home confirms only the other's key, only from the words its own
person typed, through `ceremony.confirm` (method `word-pairs, mutual`) over all eight words,
derived afresh; there is no "they match" button, and the marks confirm nothing. A misheard
pair is explained with the list words nearest to a word that is not on the list, never the
expected words (gage.format.words.hearing). At the end both screens show the closing pair, which
the two read to each other: the same on both only if each holds the other's key.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from gage.format.words import PAIRS, WordPairs, derive, hearing, pair_text
from gage.trust import ceremony
from gage.tui import background, safe
from gage.tui.bindings import bindings_for
from gage.tui.ceremony import PairWordSuggester, demo_words, pairing_intro
from gage.tui.messages import ContactsChanged


def explain(check: hearing.PairCheck) -> str:
    """Why a typed pair is not the pair asked for, and the nearest list words to a word not on the list."""
    typed = " ".join(check.typed) or "(nothing)"
    out = f"Pair {check.index + 1}: \"{safe.one_line(typed, limit=80)}\": {check.why}."
    for word, near in check.suggestions.items():
        shown = safe.one_line(word, limit=40)
        if near:
            out += f" \"{shown}\" is not on the list; did you mean {' or '.join(near)}? Ask them to spell it if unsure."
        else:
            out += f" \"{shown}\" is not on the list, nor close to a word on it."
    return out


class MutualScreen(Screen[bool]):
    """Dismissed with True once their key is confirmed here (after the closing pair), False if the person gives up."""

    BINDINGS = bindings_for("mutual")
    GROUP = "mutual"

    def __init__(self, key: bytes, claimed_name: str, source: str, name: str) -> None:
        super().__init__(id="mutual")
        self.key = key
        self.claimed_name = claimed_name
        self.source = source  # untrusted in part (a key file's name): shown through safe
        self.local_name = name  # checked for a clash before this screen opened (gage.tui.pair_name)
        self.expected: WordPairs = derive(key)
        self.got: list[list[str] | None] = [None] * PAIRS
        self.tried: set[int] = set()
        self.index = 0  # the pair being read now; PAIRS once all four matched
        self.confirmed = False
        self.busy = False  # ceremony.confirm is running

    def compose(self) -> ComposeResult:
        self.mine = ceremony.my_words(self.app.home)  # type: ignore[attr-defined]
        yield Header()
        yield Static(
            pairing_intro(self.key, self.claimed_name, self.source, self.local_name, heading="Pairing both ways with key "),
            markup=False,
            id="ceremony-intro",
        )
        yield Static(
            "They pair with your key now too (Both ways, or `gage pair --mutual`). In turn, pair by pair: read"
            " YOUR pair, then type THEIR pair as they read it. Esc (or `give up`) stops.",
            markup=False,
            classes="step",
        )
        demo = demo_words(self.app, self.key)
        if demo is not None:
            yield Static(demo, markup=False, id="demo-words")
        with Vertical(id="mutual-pairs"):
            for i in range(PAIRS):
                yield Static("", markup=False, id=f"mutual-row-{i}", classes="mutual-row")
        yield Static("", markup=False, id="mutual-prompt")
        yield Input(id="heard", suggester=PairWordSuggester(words=2))
        yield Static("", markup=False, id="explain")
        yield Static("", markup=False, id="closing")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#closing", Static).display = False
        self.show_rows()
        self.query_one("#heard", Input).focus()

    def show_rows(self) -> None:
        """Each pair: mine to read, and theirs as typed (✔ once it matched); the current one marked."""
        for i, (a, b) in enumerate(self.mine):
            got = self.got[i]
            if got is not None:
                theirs = Content.styled(f"✔ {' '.join(got)}", "bold $text-success")
            elif i == self.index:
                theirs = Content.styled("← type it below" if i not in self.tried else "✘ asked again", "bold $text-warning")
            else:
                theirs = Content.styled("· waiting", "$text-muted")
            current = i == self.index
            row = Content.assemble(
                Content.styled("▶ " if current else "  ", "bold"),
                f"pair {i + 1}  yours: ",
                Content.styled(pair_text(a, b).ljust(22), "bold $accent" if current else ""),
                "  theirs: ",
                theirs,
            )
            w = self.query_one(f"#mutual-row-{i}", Static)
            w.update(row)
            w.set_class(current, "current")
        if self.index < PAIRS:
            a, b = self.mine[self.index]
            n = self.index + 1
            again = self.index in self.tried
            self.query_one("#mutual-prompt", Static).update(
                Content.assemble(
                    f"Read YOUR pair {n}: ",
                    Content.styled(pair_text(a, b), "bold"),
                    f", then type THEIR pair {n}{' again, as they read it' if again else ''}:",
                )
            )
            self.query_one("#heard", Input).placeholder = f"their pair {n}: two words (or `give up`)"

    def say(self, text: str, style: str = "") -> None:
        self.query_one("#explain", Static).update(Content.styled(safe.one_line(text, limit=800), style))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def action_submit(self) -> None:
        if self.confirmed:
            self.dismiss(True)
            return
        if self.index >= PAIRS:
            return  # all four typed: confirming, or it was refused (the reason is shown)
        field = self.query_one("#heard", Input)
        typed = self.heard(field)
        if not typed:
            return
        check = hearing.check_pair(self.expected, self.index, typed)
        self.tried.add(self.index)
        field.value = ""
        if not check.ok:
            self.say(explain(check), "bold $text-error")
            self.show_rows()
            return
        self.got[self.index] = typed
        self.index += 1
        self.say("")
        self.show_rows()
        if self.index == PAIRS:
            self.finish()

    def finish(self) -> None:
        """All four pairs typed and matched: `ceremony.confirm` compares all eight again, off the UI thread."""
        self.query_one("#heard", Input).display = False
        self.query_one("#mutual-prompt", Static).update("All four pairs match; confirming…")
        self.busy = True
        home = self.app.home  # type: ignore[attr-defined]
        heard = " ".join(w for pair in self.got for w in (pair or []))
        name, key = self.local_name, self.key

        def work() -> tuple[ceremony.Outcome, tuple[str, str]]:
            outcome = ceremony.confirm(home, name, key, heard, method=ceremony.MUTUAL_METHOD)
            return outcome, hearing.closing_pair(home.identity.key, key)

        background.change(self.app, "ceremony", work, self._confirmed, self._failed, small=True)

    def _failed(self, message: str) -> None:
        self.busy = False
        if not self.is_attached:
            self.app.notify(message, title="Not confirmed", severity="error", markup=False)
            return
        self.query_one("#mutual-prompt", Static).update(Content.styled("NOT confirmed. Nothing was confirmed.", "bold $text-error"))
        self.say(message, "bold $text-error")

    def _confirmed(self, result: tuple[ceremony.Outcome, tuple[str, str]]) -> None:
        outcome, (c1, c2) = result
        self.busy = False
        name = safe.one_line(self.local_name, limit=64)
        if not outcome.confirmed:  # cannot happen after four exact pairs; the compare is confirm's
            self._failed(outcome.message)
            return
        self.app.post_message(ContactsChanged(self.local_name))
        if not self.is_attached:  # the person left while it waited for the home: say what happened all the same
            self.app.notify(f"Confirmed: {name} is now a contact.", title="Paired", markup=False)
            return
        self.confirmed = True  # said on the screen, not in a toast that would cover the closing pair
        self.query_one("#explain", Static).display = False
        self.refresh_bindings()
        self.query_one("#mutual-prompt", Static).update(
            Content.styled(f"Confirmed here: {name} is now a contact. Last, read each other the closing pair:", "bold $text-success")
        )
        closing = self.query_one("#closing", Static)
        closing.update(
            Content.assemble(
                Content.styled(f"  {pair_text(c1, c2)}  ", "bold reverse"),
                "\nIt is the same on both screens only if each of you now holds the other's key. If theirs differs, or"
                f" they did not finish, their side is not confirmed: run it again together (and remove {name} here:"
                " d in Contacts). Enter or Esc closes.",
            )
        )
        closing.display = True

    def heard(self, field: Input) -> list[str]:
        """The words typed into `field`; none when it is empty, or says `give up` (which gives up)."""
        if hearing.is_give_up(field.value):
            self.give_up("gave up")
            return []
        return hearing.words_of(field.value)

    def give_up(self, why: str) -> None:
        """Only a deliberate act ends the ceremony: nothing is confirmed, and the pairs not matched are named."""
        missing = [
            f"pair {i + 1} {'did not match' if i in self.tried else 'was not heard'}" for i in range(PAIRS) if self.got[i] is None
        ]
        self.app.notify(
            f"NOT confirmed: {why}. Nothing was confirmed; this may not be their key. " + "; ".join(missing) + ".",
            title="Not confirmed",
            severity="warning",
            markup=False,
            timeout=10,
        )
        self.dismiss(False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc gives up until their key is confirmed here; after that it only closes the screen (Done)."""
        if action == "back":
            return not self.confirmed
        if action == "done":
            return self.confirmed
        return True

    def action_done(self) -> None:
        self.dismiss(True)

    def action_back(self) -> None:
        if self.confirmed:
            self.dismiss(True)
        elif self.busy:
            return  # confirming now: it finishes (and says so) in a moment
        else:
            self.give_up("left the ceremony" if self.index < PAIRS else "refused")
