"""What `gage invite` / `gage join` do around the rendezvous, the same for the command line and the interface.

The steps on the relay are gage.carriers.relay.invite's (Inviter, Joiner); this holds the
sequence both interfaces run around them, with nothing printed: this home's claims made
(its mailbox first, if it has none), what came from the other side refused before any word
when it cannot be confirmed here, the other side watched for stopping while this one types,
told when this one stops, and their route kept only once the ceremony confirmed their key.
An interface says what happens in its own words; the order is kept here once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from gage.carriers.relay import config, mailbox
from gage.carriers.relay.invite import Claims
from gage.format import relayurl
from gage.format.errors import GageError, RefusedError, UsageError
from gage.format.keys.file import KeyFile
from gage.home import sealing, unlock, whereabouts
from gage.home.layout import Home
from gage.trust import ceremony


def _sealing_key(home: Home) -> sealing.SealingKey:
    signer = unlock.signing_identity(home)  # a protected home asks for its passphrase (the options, or the terminal)
    with home.lock():
        return sealing.ensure(home.root, signer)


def own_claims(home: Home, url: str, creds: Any, made: Callable[[str], None] | None = None) -> Claims:
    """This home's key file, mailbox and relay, making the mailbox first if it has none (as `gage mailbox create`).

    Unlocked here, before any code is made or spent: the key signs the route it claims. `made`
    hears the address of a mailbox made now (recorded in settings.toml)."""
    signer = unlock.signing_identity(home).secret
    key = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
    if key is not None and key.binding.signing_key != home.identity.key:
        key = _sealing_key(home)  # the same sealing key, bound again by the current key after a rotation
    relay = config.relay_url(home)
    if key is None or relay is None:
        if home.identity.current_retirement is not None:
            raise UsageError("this home's key is retired; it opens no new mailbox")
        key = _sealing_key(home)
        address = sealing.mailbox_address(key.recipient)
        mailbox.run(mailbox.create(url, address, creds=creds))
        config.record(home, url, creds)
        relay = url
        if made is not None:
            made(address)
    kf = KeyFile(key=home.identity.key, name=home.identity.name, sealing=key.binding.to_carried())
    return Claims(kf, sealing.mailbox_address(key.recipient), relayurl.public(relay), signer)


def refuse_before_words(home: Home, theirs: Claims) -> None:
    """What came cannot be confirmed here (this home's own key; the weaker half of a confirmed hybrid key): refused."""
    key = theirs.keyfile.key
    if home.identity.owns(key):
        raise RefusedError("the other side sent this home's own key: nothing was confirmed")
    down = ceremony.downgrade(home, key)
    if down is not None:
        raise RefusedError(ceremony.mismatch_message(down))


def source(command: str, url: str) -> str:
    """Where a key and route came from, as the journal and where.json say it."""
    return f"gage {command} on {relayurl.public(url)}"


def keep_route(home: Home, theirs: Claims, came_from: str) -> None:
    """Their route into where.json: only once the ceremony confirmed their key (the caller's to know)."""
    whereabouts.remember(home, theirs.where(came_from))


def tell(side: Any, why: str) -> None:
    """Best effort: the other side hears that this one stopped, so it confirms nothing and stops waiting."""
    with contextlib.suppress(GageError, KeyboardInterrupt):
        side.outcome(False, why)


class Watch:
    """Looks on the relay, in the background, for the other side saying it stopped, while this side types."""

    def __init__(self, side: Any, every: float = 1.0) -> None:
        self.side, self.why, self.done, self.every = side, None, threading.Event(), every
        self.thread = threading.Thread(target=self._run, daemon=True, name="gage-invite-watch")
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(self.every):
            try:
                why = self.side.stopped()
            except Exception:  # noqa: BLE001 - the relay gone or slow: this side finds out when it says its own outcome
                return
            if why is not None:
                self.why = why
                return

    def stopped(self) -> str | None:
        return self.why

    def stop(self) -> None:
        self.done.set()
