"""The open interface fetches this home's mailbox itself: mail arrives with nothing else run.

A background thread runs the very fetch `gage watch` runs (gage.carriers.relay.follow): envelopes
land in pending in batches through the ordinary import (gage.inbox.landmany), and each is
acknowledged only after its batch landed.
The inbox's own file watcher then shows the bundle like any other arrival; this only says, as a
notification, that mail came (made safe: the sender's label may be a claim). Nothing happens
for a home with no mailbox, or without the relay extra.
"""

from __future__ import annotations

import threading
from typing import Any

from gage.home import sealing, settings
from gage.home.layout import Home
from gage.tui import safe


def start(app: Any, home: Home) -> threading.Event | None:
    """Start fetching in the background; the event stops it (set it when the interface closes)."""
    key = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
    url = settings.load(home).relay_url
    if key is None or not url:
        return None
    try:
        from gage.carriers.relay import (
            config,
            follow,  # the relay extra: absent, the interface simply does not fetch
        )
    except ImportError:
        return None
    stop = threading.Event()

    def on_event(event: Any) -> None:
        if event.kind not in ("imported", "error", "reconnected"):
            return
        text = safe.one_line(("Mail arrived: " if event.kind == "imported" else "") + str(event.message), limit=300)
        severity = "warning" if event.kind == "error" else "information"
        if not app.is_running:
            stop.set()  # the interface has closed
            return
        try:
            app.call_from_thread(app.notify, text, title="mailbox", severity=severity)
            if event.kind in ("error", "reconnected") and hasattr(app, "relay_state"):
                # The header says it beside the inbox's name, both times: gone, and back.
                app.call_from_thread(app.relay_state, event.kind == "reconnected")
        except RuntimeError:
            stop.set()  # it closed meanwhile

    threading.Thread(
        target=follow.follow,
        args=(home, url, sealing.mailbox_address(key.recipient)),
        # This home's credential for its own relay, in whichever form settings.toml names (a creds
        # file, an nkey seed, or a user and password file: spec/relay.md section 8).
        kwargs={"creds": config.relay_creds(home), "budget": None, "on_event": on_event, "stop": stop},
        name="gage-tui-mailbox",
        daemon=True,
    ).start()
    return stop
