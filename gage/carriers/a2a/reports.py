"""What `gage a2a serve` reports: its landings, refusals and key statements as watch events.

The server reports through the same event type as the drop-folder watcher and the mailbox
follower (gage.carriers.events), so one printer (the command line's watch log) prints them
all alike: a landing is `imported` with the same words as the watcher's (`received ID ...
into pending: VERDICT, sender NAME`), a bundle held already is `skipped` as the mailbox's
is, a request refused (by the gatekeeper, the limits, the reader, a busy home) is `error`,
as the watcher's "could not import" is. A message keeps a peer's words as they came, cut to
a bound; whoever prints it makes it visible (`WatchEvent`'s rule), and the claimed name is
quoted so it cannot end its own quotes.

It imports no SDK, starlette or uvicorn, as the gatekeeper does not: the events are made
where the request is read, before the optional extra's code sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gage.carriers.a2a.landing import Landed
from gage.carriers.a2a.reader import Carried
from gage.carriers.events import WatchEvent
from gage.format.sanitize import clip, quoted
from gage.home.layout import Home
from gage.home.listing import find
from gage.trust import verdict as verdict_mod
from gage.trust.retirement import Outcome

log = logging.getLogger("gage.carriers.a2a.serve")

WHY_SHOWN = 500  # the most of a refusal's text one event repeats
NOTE_SHOWN = 300  # of a landing's problem or note
NAME_SHOWN = 200  # of the name a peer claims


class Events:
    """The events `on_event` gets, one per landing, refusal, key statement or connection report."""

    def __init__(self, on_event: Callable[[WatchEvent], None] | None) -> None:
        self.on_event = on_event

    def emit(self, event: WatchEvent) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # a broken printer must not turn a delivery into an error reply
            log.exception("on_event failed")

    def error(self, line: str) -> None:
        """A line about the server itself (connections turned away, the event loop's errors)."""
        self.emit(WatchEvent("error", line))

    def refused(self, peer: str, why: str) -> None:
        self.emit(WatchEvent("error", f"refused a request via A2A from {peer}: {clip(why, WHY_SHOWN)}; nothing was written"))

    def landed(self, home: Home, peer: str, c: Carried, landed: Landed) -> None:
        """One bundle of a delivery. Its verdict is computed here, as the watcher's is, only
        when someone listens: the sender's name on the line is the verdict's, never the claim."""
        if self.on_event is None:
            return
        short = landed.id[:12]
        notes = "".join(f"; {clip(note, NOTE_SHOWN)}" for note in landed.notes)
        if not landed.new:
            # As the mailbox's: nothing changed, so no claim about who sent this copy.
            self.emit(WatchEvent("skipped", f"{short} via A2A from {peer}: already there ({landed.state}){notes}", id=landed.id))
            return
        claim = f"; the peer claims to be {quoted(clip(c.claims['from_name'], NAME_SHOWN))}" if c.claims.get("from_name") else ""
        verdict, label = "invalid", ""
        stored = find(home, landed.id)
        if stored is not None:
            v = verdict_mod.compute(home, stored)
            verdict, label = v.verdict, v.sender.label()
        line = f"received {short} via A2A from {peer} into pending: {verdict.upper()}, sender {label}{claim}"
        if not landed.ok:
            line += f"; it does NOT verify: {clip(landed.problem or 'see its verdict', NOTE_SHOWN)}"
        self.emit(WatchEvent("imported", line + notes, id=landed.id))

    def statement(self, outcome: Outcome) -> None:
        """A key statement a delivery carried, applied or refused: the watcher's `key-statement` line."""
        carrier = outcome.carrier or ""
        what = "key statement applied" if outcome.applied else "key statement"
        self.emit(WatchEvent("key-statement", f"{carrier[:12]}: {what}: {outcome.message}", id=carrier or None))
