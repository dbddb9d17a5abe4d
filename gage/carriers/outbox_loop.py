"""What `gage watch` runs beside the drop folders and the mailbox: the outbox sent as the way comes back.

A thread of its own, waking every `tick` seconds to try the deliveries that are due
(gage.carriers.outbox: oldest first, each at its own back-off, so a way back is used within
seconds and a try is never more than three minutes from the last). It says what changed, not
each failed try: a delivery done or cancelled, the first time a way is found not there in this
run, and a damaged delivery file once, by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from gage.carriers import outbox
from gage.carriers.events import WatchEvent
from gage.format.errors import GageError
from gage.format.sanitize import visible
from gage.home import sendqueue
from gage.home.layout import Home

TICK = 1.0


def run(home: Home, stop: threading.Event, on_event: Callable[[WatchEvent], None], *, tick: float = TICK) -> None:
    said_waiting: set[str] = set()
    said_damaged: set[Path] = set()

    def on_outcome(o: outbox.Outcome) -> None:
        d = o.delivery
        if o.state == "queued":
            if d.id not in said_waiting:
                said_waiting.add(d.id)
                on_event(WatchEvent("queued", f"still {o.summary()} (tried {d.tries} times: {o.error})", id=d.bundle))
            return
        said_waiting.discard(d.id)
        on_event(WatchEvent("delivered" if o.state == "delivered" else "cancelled", o.summary(), id=d.bundle))

    def on_damaged(bad: sendqueue.Damaged) -> None:
        if bad.path not in said_damaged:
            said_damaged.add(bad.path)
            on_event(WatchEvent("error", f"a delivery file is damaged and is not sent: {bad.path}: {visible(bad.problem, oneline=True)}", path=bad.path))

    while not stop.is_set():
        try:
            outbox.send_waiting(home, on_outcome=on_outcome, on_damaged=on_damaged)
        except GageError as exc:  # the home itself failed (a full disk): said, and tried again later
            on_event(WatchEvent("error", f"the outbox: {exc}"))
        stop.wait(tick)


def start(home: Home, stop: threading.Event, on_event: Callable[[WatchEvent], None]) -> threading.Thread:
    t = threading.Thread(target=run, args=(home, stop, on_event), name="gage-outbox", daemon=True)
    t.start()
    return t
