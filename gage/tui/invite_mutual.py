"""The mutual ceremony of an invite: the same dialog as `pair --mutual` (gage.tui.mutual), told by the relay.

As `gage invite` / `gage join` at a terminal (spec/ceremony.md): the four pairs, then the closing
pair read and typed BEFORE anything is confirmed, then this side says on the relay that it
matched and waits for the other's outcome; only if both matched is their key confirmed here
(`ceremony.confirm`, over the eight words typed) and their route kept. A side that stops
(Esc, `give up`) tells the other at once, and the other side stopping is shown here at once.
The relay's steps are gage.carriers.relay.invite's, the sequence around them
gage.carriers.relay.meet's; what the other side says (a reason) is shown literally.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from textual.content import Content
from textual.widgets import Input, Static

from gage.format.keys import key_text
from gage.format.words import hearing, pair_text
from gage.trust import ceremony
from gage.tui import background, safe
from gage.tui.messages import ContactsChanged
from gage.tui.mutual import MutualScreen


def how_to_finish(key: bytes, name: str) -> str:
    """An interrupted ceremony can be finished without the relay: `pair --mutual` on both sides."""
    return (
        "To finish without the relay, both run `gage pair KEY --name NAME --mutual` on a call (or P in Contacts); here:"
        f" gage pair {key_text(key)} --name {safe.one_line(name, limit=64)} --mutual"
    )


class InviteMutualScreen(MutualScreen):
    """Dismissed with True once both sides matched and their key is confirmed here, else False."""

    def __init__(self, key: bytes, claimed_name: str, source: str, name: str, *, side: Any, theirs: Any, came_from: str) -> None:
        super().__init__(key, claimed_name, source, name)
        self.side, self.theirs, self.came_from = side, theirs, came_from
        self.phase = "pairs"  # then "closing" (typing their closing pair), "waiting" (their outcome), "ended"
        self.leave = threading.Event()  # this screen left (or the interface closed): the waits on the relay end

    def on_mount(self) -> None:
        super().on_mount()
        from gage.carriers.relay import meet

        self.watch = meet.Watch(self.side)
        self.set_interval(0.25, self._look)

    def on_unmount(self) -> None:
        self.watch.stop()
        self.leave.set()

    def _look(self) -> None:
        """The other side said it stopped, while this side types: nothing is confirmed, said at once."""
        why = self.watch.stopped()
        if why is None or self.phase not in ("pairs", "closing"):
            return
        self.phase = "ended"
        self.app.notify(
            f"NOT confirmed: the other side stopped ({safe.one_line(why, limit=200)}). Nothing was confirmed. "
            + how_to_finish(self.key, self.local_name),
            title="Not confirmed", severity="warning", timeout=15, markup=False,
        )
        self.dismiss(False)

    def finish(self) -> None:
        """All four pairs matched: the closing pair next, read and typed before anything is confirmed."""
        self.phase = "closing"
        c1, c2 = hearing.closing_pair(self.app.home.identity.key, self.key)  # type: ignore[attr-defined]
        self.closing_words = (c1, c2)
        self.query_one("#mutual-prompt", Static).update(
            Content.assemble("All four pairs match. Last, read each other the closing pair, then type THEIRS as they read it:")
        )
        closing = self.query_one("#closing", Static)
        closing.update(Content.assemble(
            Content.styled(f"  {pair_text(c1, c2)}  ", "bold reverse"),
            "\nIt is the same on both screens only if each of you holds the other's key. Nothing is confirmed yet.",
        ))
        closing.display = True
        field = self.query_one("#heard", Input)
        field.placeholder = "their closing pair: two words (or `give up`)"
        field.value = ""

    def action_submit(self) -> None:
        if self.phase == "pairs":
            super().action_submit()
            return
        if self.phase != "closing":
            if self.confirmed:
                self.dismiss(True)
            return
        field = self.query_one("#heard", Input)
        typed = self.heard(field)
        if not typed:
            return
        field.value = ""
        check = hearing.check_pair((self.closing_words,), 0, typed)
        if not check.ok:
            self.say(f"Closing pair: \"{safe.one_line(' '.join(check.typed), limit=80)}\": {check.why}. Type it again as they read it.",
                     "bold $text-error")
            return
        self.say("")
        self._agree()

    def _agree(self) -> None:
        """Say on the relay that this side matched and wait (off the UI thread) for theirs; confirm only if both did."""
        self.phase = "waiting"
        self.watch.stop()  # from here the wait for their outcome is the relay step's own
        self.query_one("#heard", Input).display = False
        self.query_one("#mutual-prompt", Static).update("Your side matched. Waiting for theirs (nothing is confirmed until both sides match)…")
        side = self.side

        def work() -> None:
            try:
                held: str | None = side.outcome(True, "", cancelled=self.leave.is_set)
            except Exception as exc:  # noqa: BLE001 - the relay lost: nothing is confirmed, and it is said
                held = f"the relay was lost while waiting for the other side ({safe.error_text(exc)})"
            with contextlib.suppress(RuntimeError):  # the interface closed meanwhile
                self.app.call_from_thread(self.both_matched, held)

        self.app.run_worker(work, thread=True, group="invite-outcome", exit_on_error=False)

    def give_up(self, why: str) -> None:
        """The other side hears at once (its `outcome`, not matched), off the UI thread; then as `pair --mutual`."""
        from gage.carriers.relay import meet

        self.phase = "ended"
        self.watch.stop()
        self.leave.set()
        side = self.side
        self.app.run_worker(lambda: meet.tell(side, why), thread=True, group="invite-tell", exit_on_error=False)
        super().give_up(why)
        self.app.notify(how_to_finish(self.key, self.local_name), title="To finish later", timeout=15, markup=False)

    def action_back(self) -> None:
        if self.phase == "ended" and not self.confirmed:
            self.dismiss(False)  # it ended (refused, or they stopped): Esc only closes
            return
        if self.phase == "waiting":
            self.give_up("left while waiting for the other side")
            return
        super().action_back()

    def both_matched(self, held: str | None) -> None:
        """Their outcome came: confirm here only if they matched too (and this screen was not left meanwhile)."""
        if self.phase != "waiting":
            return
        if held is not None:
            self.phase = "ended"
            self._failed(f"NOT confirmed: {safe.one_line(held, limit=300)}. Nothing was confirmed on this side either.")
            return
        home, name, key, theirs, came_from = self.app.home, self.local_name, self.key, self.theirs, self.came_from  # type: ignore[attr-defined]
        heard = " ".join(w for pair in self.got for w in (pair or []))

        def work() -> ceremony.Outcome:
            from gage.carriers.relay import meet

            outcome = ceremony.confirm(home, name, key, heard, method=ceremony.MUTUAL_METHOD)
            if outcome.confirmed:
                meet.keep_route(home, theirs, came_from)
            return outcome

        background.change(self.app, "ceremony", work, self._both_confirmed, self._failed, small=True)

    def _both_confirmed(self, outcome: ceremony.Outcome) -> None:
        self.phase = "ended"
        if not outcome.confirmed:
            self._failed(outcome.message)
            return
        name = safe.one_line(self.local_name, limit=64)
        self.app.post_message(ContactsChanged(self.local_name))
        if not self.is_attached:
            self.app.notify(f"Confirmed: {name} is now a contact.", title="Paired", markup=False)
            return
        self.confirmed = True
        self.refresh_bindings()
        self.query_one("#mutual-prompt", Static).update(
            Content.styled(f"Confirmed: {name} is now a contact, on both sides. Mail now flows (D delivers to them). Enter or Esc closes.",
                           "bold $text-success")
        )
