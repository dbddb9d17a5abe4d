"""`gage deliver`: seal a bundle to a contact's sealing key and put it in their mailbox.

Sealed only to a key bound by a key this home trusts: a confirmed contact's, whose sealing
key is taken from the claim filed under the key the ceremony confirmed, and used only if
that key signed the binding. To a candidate (a key never confirmed) only when the person
says `--unconfirmed`, and the result says it was sealed to a claim. A directory or a card
that swaps the sealing key therefore makes the delivery fail, never go to someone else.
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gage.carriers import recipient as recipient_mod
from gage.carriers.relay import config, mailbox, seal
from gage.carriers.relay.creds import Creds
from gage.carriers.testhook import kill_at
from gage.format import relayurl
from gage.format.errors import RefusedError, UnknownKeyError, UsageError
from gage.format.keys import short_fingerprint
from gage.format.sanitize import visible
from gage.home import whereabouts
from gage.home.layout import Home


@dataclass
class Delivered:
    id: str
    to: str
    key: bytes
    confirmed: bool
    mailbox: str
    relay: str
    bytes: int
    via: str
    duplicate: bool = False  # the relay already had this message id: an earlier try got there

    def to_json(self) -> dict[str, Any]:
        return {
            **recipient_mod.delivery_json(self.id, self.to, self.key, self.confirmed),
            "mailbox": self.mailbox,
            "relay": self.relay,
            "bytes": self.bytes,
            "via": self.via,
            "duplicate": self.duplicate,
            "fetched": False,
        }

    def summary(self) -> str:
        who = visible(self.to, oneline=True)
        line = f"{self.id[:12]}: delivered to {who}'s mailbox; not yet fetched"
        if not self.confirmed:
            line += f" (sealed to a CLAIM: key {short_fingerprint(self.key)} was never confirmed by the ceremony)"
        return line


def recipient(home: Home, to: str, *, unconfirmed: bool) -> tuple[bytes, bool, whereabouts.Where]:
    """(signing key, confirmed?, where) for the name given to `--to`, when a mailbox can be sealed to."""
    who = recipient_mod.recipient(home, to, unconfirmed=unconfirmed)
    key, where = who.key, who.where
    if where is None or where.sealing is None:
        raise UnknownKeyError(f"no mailbox is known for {to!r}: pair from a key file that carries one, or `gage pair --directory`")
    if where.sealing_key() is None:
        raise RefusedError(
            f"the sealing key on file for {to!r} is not bound by their key {short_fingerprint(key)} (its binding is not "
            "signed by it): nothing was sealed"
        )
    if not where.mailbox_ok():
        raise RefusedError(f"the mailbox on file for {to!r} is not the one their sealing key derives: nothing was sealed")
    return key, who.confirmed, where


def connection(home: Home, claimed: str | None, *, relay: str | None, creds: Creds) -> tuple[str, Creds]:
    """(URL to connect to, credentials to present) for a delivery: this home's credentials go to
    this home's own relay (settings.toml) and nowhere else (spec/relay.md section 2).

    `relay` is the URL the person typed (`--relay`), `creds` the credential they gave (`--creds`, `--nkey` or `--user`);
    `claimed` is the relay the contact's "where" names, which a card, key file or directory
    record (or the contact) chose. To that one, unless it is this home's own relay, gage
    connects with no credentials at all, and without any user or password its URL carries.
    """
    own = config.relay_url(home)
    own_creds = config.relay_creds(home)
    if relay:
        # The person named the relay: their --creds go to it, this home's own only if it is the same relay.
        if own and relayurl.same_relay(relay, own):
            return own, creds or own_creds
        return relay, creds
    if claimed and not relayurl.same_relay(claimed, own):
        if creds:
            raise UsageError(
                "a credential (--creds, --nkey, --user) is presented only to this home's own relay or to one given with --relay; "
                f"{to_public(claimed)} is the relay the contact's claim names"
            )
        return relayurl.public(claimed), None
    if not own:
        return "", None
    return own, creds or own_creds


def to_public(url: str) -> str:
    return visible(relayurl.public(url), oneline=True)


def deliver(
    home: Home, bundle: Path, bundle_id: str, to: str, *, relay: str | None, unconfirmed: bool, creds: Creds, msg_id: str | None = None,
    sent_before: bool = False,
) -> Delivered:
    key, confirmed, where = recipient(home, to, unconfirmed=unconfirmed)
    url, present = connection(home, where.relay, relay=relay, creds=creds)
    if not url:
        raise UsageError(f"no relay is known for {to!r}: give --relay URL")
    sealing_key = where.sealing_key()
    assert sealing_key is not None and where.mailbox is not None
    home.staging.mkdir(parents=True, exist_ok=True)
    # A folder, not a file: reconcile tidies scratch folders a killed command leaves (tmp/build-*).
    scratch = home.staging / f"build-relay-{secrets.token_hex(8)}"
    scratch.mkdir(mode=0o700)
    tmp = scratch / "envelope.age"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            seal.seal_bundle(bundle, sealing_key, f)
            kill_at("sealing")
        ack = mailbox.run(mailbox.publish(url, where.mailbox, tmp, creds=present, msg_id=msg_id, sent_before=sent_before))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Delivered(
        id=bundle_id, to=to, key=key, confirmed=confirmed, mailbox=where.mailbox, relay=relayurl.public(url), bytes=ack["bytes"], via=ack["via"],
        duplicate=bool(ack.get("duplicate")),
    )
