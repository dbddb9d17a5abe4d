"""The outbox in the interface: what waits is sent in the background while the interface is open, as
`gage watch` does (gage.carriers.outbox_loop), the header says how many wait, and a sent bundle's
view says what became of its deliveries. Every value shown (a contact's name, a relay's error) goes
through `safe`: a relay's words are untrusted text."""

from __future__ import annotations

import threading
from typing import Any

from gage.home import sendqueue
from gage.home.layout import Home
from gage.tui import safe


def start(app: Any, home: Home) -> threading.Event:
    """Send what waits, in a thread; the event stops it (set it when the interface closes)."""
    from gage.carriers import outbox_loop

    stop = threading.Event()

    def on_event(event: Any) -> None:
        if event.kind not in ("delivered", "cancelled", "error"):
            return
        if not app.is_running:
            stop.set()
            return
        text = safe.one_line(str(event.message), limit=300)
        try:
            app.call_from_thread(app.notify, text, title="outbox", severity="information" if event.kind == "delivered" else "warning")
            app.call_from_thread(app.show_queued)
        except RuntimeError:
            stop.set()

    threading.Thread(target=outbox_loop.run, args=(home, stop, on_event), name="gage-tui-outbox", daemon=True).start()
    return stop


def queued(home: Home) -> int:
    try:
        return sendqueue.queued_count(home)
    except Exception:  # noqa: BLE001 - a count in a header is never worth a crash
        return 0


def mailbox_line(home: Home) -> str | None:
    """This home's mailbox, short (its address's start, and the relay it is on), or None without one."""
    from gage.format import relayurl
    from gage.home import sealing, settings

    try:
        key = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
        url = settings.load(home).relay_url
    except Exception:  # noqa: BLE001 - a header is never worth a crash; the home's problems are shown elsewhere
        return None
    if key is None or not url:
        return None
    address = sealing.mailbox_address(key.recipient)
    return safe.one_line(f"mailbox {address[:10]}… on {relayurl.public(url)}", limit=80)


def header(name: str, waiting: int, *, relay_up: bool | None = None, mailbox: str | None = None) -> str:
    """The header's line: my name, how many deliveries wait for their way, this home's mailbox, and the relay when it is down."""
    parts = [safe.one_line(name, limit=40)]
    if waiting:
        parts.append(f"{waiting} waiting to be delivered (gage outbox)")
    if mailbox:
        parts.append(mailbox)
    if relay_up is False:
        parts.append("the relay is not reachable")
    return " · ".join(parts)


def delivery_line(home: Home, bundle_id: str) -> str | None:
    """A sent bundle's deliveries in one line (queued, delivered, cancelled, to whom), or None."""
    try:
        went = sendqueue.states_by_bundle(home).get(bundle_id)
    except Exception:  # noqa: BLE001
        return None
    if not went:
        return None
    parts = []
    for d in went["deliveries"]:
        part = f"{d['state']} to {d['to']}'s {d['route']}"
        if d["state"] == "queued":
            part += f" ({d['tries']} tries" + (f"; last: {d['last_error']}" if d.get("last_error") else "") + ")"
        parts.append(part)
    return safe.one_line("Delivery: " + "; ".join(parts), limit=600)
