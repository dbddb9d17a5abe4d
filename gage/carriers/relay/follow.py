"""`gage watch --mailbox`: fetch this home's mailbox live, beside the drop folders.

Every envelope lands through the same path as `gage mailbox fetch` (gage.carriers.relay.landing,
acknowledged only after the import), and is reported as a watch event. With `--unattended`,
an arrival goes to the same single unattended gate a drop-folder arrival does
(`gate.accept_unattended`, budgeted per thread): a relay's delivery is never consent.
A relay that goes away is reported once and tried again, with a growing pause; when it answers
again that is reported too (`reconnected`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from gage.carriers.events import WatchEvent
from gage.carriers.relay import landing, mailbox
from gage.carriers.relay.creds import Creds
from gage.format.errors import GageError, GageIOError
from gage.home.layout import Home
from gage.home.listing import find
from gage.inbox import gate
from gage.trust import verdict as verdict_mod

LOCAL_PAUSE_MAX = 300.0


def _reachable(url: str, creds: Creds) -> bool:
    """Whether the relay answers a connection now (a fetch that waits for envelopes says nothing while it does)."""

    async def probe() -> None:
        async with mailbox.connected(url, creds):
            pass

    try:
        mailbox.run(probe())
    except GageError:
        return False
    return True


def _events_of(home: Home, o: landing.Opened, budget: int | None) -> list[WatchEvent]:
    if o.dropped is not None:
        return [WatchEvent("error", f"a mailbox envelope was dropped ({o.stage}): {o.dropped}; journaled")]
    assert o.id is not None
    if not o.new:
        return [WatchEvent("skipped", f"{o.id[:12]} from the mailbox: already there ({o.state})", id=o.id)]
    stored = find(home, o.id)
    verdict, label = "invalid", ""
    if stored is not None:
        v = verdict_mod.compute(home, stored)
        verdict, label = v.verdict, v.sender.label()
    events = [WatchEvent("imported", f"received {o.id[:12]} from the mailbox into pending: {verdict.upper()}, sender {label}", id=o.id)]
    if budget is None:
        return events
    outcome = gate.accept_unattended(home, o.id, budget=budget)
    short = o.id[:12]
    if outcome.accepted is not None:
        thread = outcome.thread[:12] if outcome.thread else "?"
        events.append(WatchEvent("accepted", f"accepted UNATTENDED {short}: {outcome.reason}; thread {thread}: {outcome.used} of {outcome.budget} used", id=o.id, unattended=outcome))
    elif outcome.budget_spent:
        events.append(WatchEvent("budget-spent", f"stays pending {short}: BUDGET SPENT: {outcome.reason}; a person must accept or reject it", id=o.id, unattended=outcome))
    else:
        events.append(WatchEvent("pending", f"stays pending {short}: {outcome.reason}", id=o.id, unattended=outcome))
    return events


def follow(
    home: Home,
    url: str,
    address: str,
    *,
    creds: Creds,
    budget: int | None,
    on_event: Callable[[WatchEvent], None],
    stop: threading.Event,
) -> None:
    """Until `stop` is set: take envelopes as they arrive. Never raises: any failure of a round
    (the relay, this home, an unforeseen error) is reported as an event and the loop goes on."""
    on_event(WatchEvent("started", f"watching mailbox {address} on {url}"))
    pause = 1.0
    complained = False

    def report(o: landing.Opened) -> None:
        for e in _events_of(home, o, budget):
            on_event(e)

    while not stop.is_set():
        if complained and _reachable(url, creds):  # said when it went away: said when it is back
            on_event(WatchEvent("reconnected", f"mailbox: the relay at {url} is reachable again; watching mailbox {address}"))
            complained = False
        try:
            mailbox.run(
                mailbox.fetch(
                    home, url, address, creds=creds, forever=True, wait=1.0, stop=stop,
                    on_opened=report, keep=False,
                )
            )
            pause, complained = 1.0, False
        except GageIOError as exc:
            # This home's fault (a full disk): said each time, and tried again more slowly, up to
            # every LOCAL_PAUSE_MAX seconds: each try is a delivery the relay counts, and a
            # mailbox's consumer gives up on a message after its max_deliver.
            on_event(WatchEvent("error", f"mailbox: {exc}; the envelope stays on the relay"))
            stop.wait(pause)
            pause = min(pause * 2, LOCAL_PAUSE_MAX)
        except GageError as exc:
            if not complained:
                on_event(WatchEvent("error", f"mailbox: {exc}; trying again"))
                complained = True
            stop.wait(pause)
            pause = min(pause * 2, 30.0)
        except Exception as exc:  # noqa: BLE001 - nothing may end the mailbox loop unseen
            # An error nobody foresaw (a bug, a library's surprise): said every time, with its
            # type, and tried again after a pause; no envelope was acknowledged by the failed
            # round, so nothing is lost. The watcher goes on: one surprise does not stop delivery for good.
            why = f"{type(exc).__name__}: {str(exc)[:300]}".rstrip(": ")
            on_event(WatchEvent("error", f"mailbox: an unexpected error ({why}); the envelope stays on the relay, trying again"))
            stop.wait(pause)
            pause = min(pause * 2, 30.0)
