"""The directory: a JetStream key-value bucket of signed records, one per handle, with history.

Untrusted by construction (spec/relay.md section 5): it answers *where* and carries a
*claim*. A record read here is checked (gage.carriers.relay.dirrecord.parse) and then only ever becomes
a candidate key and a whereabouts claim; nothing the directory holds is read by the verdict,
and nothing but the word-pair ceremony confirms its key. Whoever runs the directory can
drop, replay or rewrite records: then a lookup fails, or offers a key that fails the compare.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import nats.errors
import nats.js.errors

from gage.carriers.relay import dirrecord, mailbox, streams
from gage.carriers.relay.creds import Creds
from gage.carriers.relay.errors import RelayError
from gage.format import relayurl
from gage.format.errors import GageError, NotFoundError, RefusedError
from gage.home import dirseen, sealing, unlock, whereabouts
from gage.home.layout import Home
from gage.trust import ceremony

BUCKET = streams.DIRECTORY
HISTORY = streams.DIRECTORY_HISTORY


async def _kv(js: Any, *, create: bool) -> Any:
    try:
        return await js.key_value(BUCKET)
    except (nats.js.errors.BucketNotFoundError, nats.js.errors.NotFoundError):
        if not create:
            raise NotFoundError("this relay has no gage directory (nobody has published to it)") from None
    # Made as gage.carriers.relay.streams says (rollups, deletes and purges off), never with
    # nats-py's defaults: a rollup from one person's key would wipe everyone's records.
    try:
        await streams.ensure(js, streams.directory_config(replicas=1))
    except streams.NotPermitted:
        raise RelayError("this relay has no gage directory, and only its operator may make one (`gage mailbox create` makes it)") from None
    return await js.key_value(BUCKET)


async def put_raw(url: str, handle: str, data: bytes, *, creds: Creds = None) -> int:
    """Write bytes under a handle, checked by nobody: what `publish` uses, and what a test's hostile directory does."""
    async with mailbox.connected(url, creds) as nc:
        kv = await _kv(nc.jetstream(), create=True)
        try:
            seq: int = await kv.put(handle, data)
        except nats.js.errors.NoStreamResponseError:
            raise RelayError(
                f"this relay does not let this user write the directory record for the handle {handle!r}: "
                "on a shared relay each person writes only their own handle, the one the relay's operator "
                "gave them (spec/relay.md section 8)"
            ) from None
        except (TimeoutError, nats.errors.Error) as exc:
            raise RelayError(f"the directory did not take the record: {exc or type(exc).__name__}") from None
        return seq


async def get_raw(url: str, handle: str, *, creds: Creds = None) -> bytes:
    async with mailbox.connected(url, creds) as nc:
        kv = await _kv(nc.jetstream(), create=False)
        try:
            entry = await kv.get(handle)
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError, nats.js.errors.NotFoundError):
            raise NotFoundError(f"the directory has no record for {handle!r}") from None
        except (TimeoutError, nats.errors.Error) as exc:
            raise RelayError(f"the directory did not answer: {exc or type(exc).__name__}") from None
        value: bytes = entry.value or b""
        return value


def publish(home: Home, handle: str, url: str, *, relay_for_record: str | None, creds: Creds = None) -> dirrecord.Record:
    """Sign this home's record (handle -> mailbox, sealing key, signing key) and put it in the directory."""
    dirrecord.check_handle(handle)
    if home.identity.current_retirement is not None:
        raise RefusedError("this home's key is retired; it publishes nothing")
    me = unlock.signing_identity(home)  # a protected home asks for its passphrase
    with home.lock():
        # The same sealing key, bound again by the current key after a rotation (spec/keys.md section 6).
        key = sealing.ensure(home.root, me)
    rec = dirrecord.build(me.secret, handle, key.binding, relay_for_record)
    mailbox.run(put_raw(url, handle, rec.to_bytes(), creds=creds))
    return rec


def route_of(rec: dirrecord.Record, url: str) -> whereabouts.Where | None:
    """The route a record offers its own key: its mailbox, on its relay (or the one it was read from)."""
    source = f"directory {relayurl.public(url)} handle {rec.handle}"
    return whereabouts.claim_of(rec.signing_key, rec.binding, relay=rec.relay or relayurl.public(url), source=source)


def lookup(home: Home, handle: str, url: str, *, creds: Creds = None, remember: bool = True, route: bool = True) -> dirrecord.Record:
    """What the directory says for `handle`, checked, and kept as a claim (a candidate key, and with
    `route` a whereabouts; `gage pair --directory` keeps that only after the ceremony).

    Refused records are remembered nowhere, and so is a record older than one this home has seen
    for the handle and key (a replay, spec/relay.md section 5). An accepted one's key is only a candidate.
    """
    dirrecord.check_handle(handle)
    data = mailbox.run(get_raw(url, handle, creds=creds))
    try:
        rec = dirrecord.parse(data, handle=handle)
    except GageError as exc:
        exc.message = f"the directory's record for {handle!r}: {exc.message}"
        raise
    # A replay (an older record than this home has seen for the handle and key) is refused here,
    # before anything is kept; the newest date is kept even for this home's own record.
    note = dirseen.admit(home, handle, rec.signing_key, rec.published_at, keep=remember)
    if note is not None:
        rec = dataclasses.replace(rec, note=note)
    if remember and not home.identity.owns(rec.signing_key):
        ceremony.add_candidate(home, rec.signing_key, handle, f"directory {relayurl.public(url)} handle {handle}")
        if route:
            whereabouts.remember(home, route_of(rec, url))
    return rec
