"""The outbox: a delivery whose way is not there waits in the home, and goes when the way is back.

`deliver` writes the delivery (gage.home.sendqueue) before it first tries, then tries once. Done:
journaled `delivered`, naming who acknowledged it (the relay, the agent, the folder's rename).
The way not there (an error marked `retryable`: no node of the relay answered, the agent did
not, the drop folder is missing): journaled `delivery-queued`, and `gage watch` or `gage outbox
send` tries again, oldest first, with a bounded back-off. Any other refusal (the contact not
confirmed, a key retired, the relay refusing this user, the bundle over the receiver's limits)
is not something time fixes: a first try fails as before and keeps nothing; a later try cancels
the delivery with a `delivery-cancelled` line.

Every try looks the contact up again by name and seals to the binding on file then, so a key
rotated (and confirmed) or a mailbox moved in the meantime is followed, and a key retired or a
contact removed cancels. A try after a crash uses the delivery's own message id, so the relay's
deduplication window stores it once; after that window the receiver's import says "already
there". A try that a crash cut short after its `delivered` line is found in the journal and
not sent again. See spec/relay.md, "The outbox".
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from gage.carriers import route as route_mod
from gage.carriers.recipient import Recipient, delivery_json, recipient
from gage.carriers.testhook import kill_at
from gage.format.errors import Exit, GageError, RefusedError
from gage.format.keys import key_text
from gage.format.sanitize import visible
from gage.home import homefile, listing
from gage.home import sendqueue as sq
from gage.home.journal.lines import iter_lines_backwards, parse_line
from gage.home.layout import Home

# Seconds between tries of one delivery while something runs to send it: the first within
# seconds, then longer, never more than three minutes apart.
BACKOFF = (2, 5, 10, 20, 40, 80, 160, 180)
PLACE = {"mailbox": "mailbox", "a2a": "A2A agent", "folder": "drop folder"}
WHY = {
    "mailbox": "the relay is not reachable; it goes when it is",
    "a2a": "the agent is not answering; it goes when it answers",
    "folder": "the drop folder is not there; it goes when it is",
}
ACK_BY = {"mailbox": "relay", "a2a": "agent", "folder": "folder-rename"}
# How far back a try that a crash cut short looks in the journal for its own `delivered` line.
LOOK_BACK = 10_000


def backoff(tries: int) -> float:
    return float(BACKOFF[min(max(tries, 1), len(BACKOFF)) - 1])


@dataclass
class Outcome:
    """What one try of a delivery came to: delivered, queued (to go later) or cancelled."""

    state: str
    delivery: sq.Delivery
    sent: route_mod.Sent | None = None
    error: str | None = None
    head: dict[str, Any] | None = None  # who it is for, as `deliver --json` starts (recipient.delivery_json)

    @property
    def code(self) -> int:
        if self.state == "queued":
            return int(Exit.QUEUED)
        if self.state == "cancelled":
            return int(Exit.REFUSED)
        return self.sent.code if self.sent is not None else 0

    def summary(self) -> str:
        d = self.delivery
        who = visible(d.to, oneline=True)
        if self.state == "delivered" and self.sent is not None:
            return self.sent.summary()
        if self.state == "delivered":
            return f"{d.bundle[:12]}: delivered to {who}'s {PLACE[d.route]} (its journal line was found: not sent again)"
        if self.state == "queued":
            return f"queued for {who}'s {PLACE[d.route]}: {WHY[d.route]} (delivery {d.id[:8]}; `gage outbox` lists it)"
        return f"{d.bundle[:12]}: the delivery to {who} is cancelled: {visible(self.error or '', oneline=True)}"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = self.sent.to_json() if self.sent is not None else dict(self.head or {"id": self.delivery.bundle, "to": self.delivery.to})
        doc["delivery"] = view(self.delivery)
        doc["state"] = self.state
        if self.error is not None:
            doc["error"] = self.error
        return doc


def view(d: sq.Delivery, now: datetime | None = None) -> dict[str, Any]:
    """One delivery as `gage outbox --json` and `deliver --json` show it."""
    now = now or datetime.now(UTC)
    age = max(0, int(now.timestamp() - sq.parse_time(d.queued_at)))
    return {
        "id": d.id, "bundle": d.bundle, "to": d.to, "route": d.route, "state": "queued" if d.state == "sending" else d.state,
        "queued_at": d.queued_at, "age_seconds": age, "tries": d.tries, "last_try": d.last_try, "last_error": d.last_error,
        "next_try": d.next_try, "done_at": d.done_at, "ack": d.ack, "why": d.why,
    }


def _token(path: str | None) -> str | None:
    """The bearer token from the file named when the delivery was made, read again at each try."""
    if path is None:
        return None
    data = homefile.read_bytes(Path(path), "token", 4096)
    token = (data or b"").decode("utf-8", errors="replace").strip()
    if len(token) < 16 or any(c.isspace() for c in token):
        raise RefusedError("a bearer token must be one line of at least 16 characters, with no spaces", path=path)
    return token


def _creds(d: sq.Delivery) -> Any:
    if not any(d.creds.values()):
        return None
    from gage.carriers.relay.creds import Credentials

    return Credentials(**d.creds)


def deliver(
    home: Home, bundle_id: str, to: str, *, via: route_mod.Route | None = None, unconfirmed: bool = False,
    relay: str | None = None, creds: Any = None, token_file: str | None = None, now: bool = False,
) -> Outcome:
    """`gage deliver`: one try now; the way not there keeps it in the outbox (unless `now`)."""
    if via is not None:
        route_mod.need_extra(via)  # the missing extra first, before anything is looked up
    stored = listing.resolve(home, bundle_id)
    who = recipient(home, to, unconfirmed=unconfirmed)  # a refusal time cannot fix: raised, nothing kept
    way = route_mod.choose(who, via)
    route_mod.need_extra(way)
    given = {k: getattr(creds, k, None) for k in ("creds", "nkey", "user", "password_file")} if creds else {}
    given = {k: str(Path(v).absolute()) if v and k != "user" else v for k, v in given.items()}  # read again from anywhere
    values: dict[str, Any] = {
        "bundle": stored.id, "to": to, "key": key_text(who.key), "route": way, "via": via, "unconfirmed": unconfirmed,
        "relay": relay, "creds": given, "token_file": token_file,
    }
    if now:
        # Fail-fast, as before there was an outbox: nothing is kept until it is delivered, and then
        # the journal line first and the record after (a crash between loses only the record).
        d = sq.Delivery(id=sq.new_id(), msg_id=os.urandom(16).hex(), queued_at=sq.now_text(), **values)
        sent = route_mod.deliver(
            home, stored.path, stored.id, to, via=via, unconfirmed=unconfirmed, relay=relay, creds=creds,
            token=_token(token_file), msg_id=d.msg_id,
        )
        return _done(home, d, sent, who.key, kept=False)
    alike = ("bundle", "to", "via", "unconfirmed", "relay", "creds", "token_file")
    same = [d for d in sq.load_all(home)[0] if d.waiting and all(getattr(d, k) == values[k] for k in alike)]
    if same:  # already waiting for that contact, asked the same way: tried now, not kept twice
        with sq.held(home, same[0].id) as mine:
            if not mine:  # another gage is trying it at this moment
                return Outcome("queued", same[0], error="another gage is trying this delivery now")
            return attempt(home, sq.read(home, same[0].id))
    d = sq.new(home, **values, state="sending", attempt=sq.now_text())
    with sq.held(home, d.id):
        kill_at("queued")
        return attempt(home, d, first=True)


def attempt(home: Home, d: sq.Delivery, *, first: bool = False) -> Outcome:
    """One try of `d` (the caller holds its lock): delivered, queued again, or cancelled."""
    if d.attempt is not None and not first:
        line = _journaled(home, d)
        if line is not None:  # the last try was acknowledged and journaled, then cut short
            d.state, d.done_at, d.attempt, d.next_try = "delivered", sq.now_text(), None, None
            d.ack = {"ack": line.get("ack"), "target": line.get("target"), "journaled_at": line.get("time"), "found_in_journal": True}
            sq.save(home, d)
            return Outcome("delivered", d)
    who: Recipient | None = None
    # An earlier try (cut short, or failed on the way) may have published under this id: a duplicate is then its own.
    sent_before = not first and (d.tries > 0 or d.attempt is not None)
    try:
        stored = listing.resolve(home, d.bundle)
        who = recipient(home, d.to, unconfirmed=d.unconfirmed)
        d.attempt = sq.now_text()
        d.state = "sending"
        sq.save(home, d)
        sent = route_mod.deliver(
            home, stored.path, stored.id, d.to, via=cast("route_mod.Route | None", d.via), unconfirmed=d.unconfirmed, relay=d.relay, creds=_creds(d),
            token=_token(d.token_file), msg_id=d.msg_id, sent_before=sent_before,
        )
    except GageError as exc:
        if exc.retryable:
            queued = _queued(home, d, exc)
            if who is not None:
                queued.head = delivery_json(d.bundle, d.to, who.key, who.confirmed)
            return queued
        if first:
            shutil.rmtree(sq.folder(home) / d.id, ignore_errors=True)  # never queued: fails as before
            raise
        return cancel(home, d, str(exc), by="gage")
    kill_at("acknowledged")
    assert who is not None
    return _done(home, d, sent, who.key)


def _done(home: Home, d: sq.Delivery, sent: route_mod.Sent, key: bytes, *, kept: bool = True) -> Outcome:
    """Journal `delivered` (naming who acknowledged it), then mark the delivery done."""
    fields: dict[str, Any] = {
        "bundle": d.bundle, "delivery": d.id, "contact": d.to, "key": key_text(key), "route": sent.route,
        "target": sent.target, "ack": ACK_BY[sent.route], "tries": d.tries + 1,
    }
    if sent.route == "mailbox":
        fields["duplicate"] = bool(sent.detail.get("duplicate"))  # the relay already had it: an earlier try arrived
    elif sent.route == "folder":
        fields["already_there"] = not sent.detail.get("copied", True)
    elif sent.route == "a2a":
        fields["confirmed"] = bool(sent.detail.get("delivered"))
    if key_text(key) != d.key:
        fields["followed"] = d.key  # the contact's key changed while it waited: sent to the one confirmed now
    home.journal.append("delivered", **fields)
    kill_at("journaled")
    d.state, d.done_at, d.attempt, d.route = "delivered", sq.now_text(), None, sent.route
    d.ack = {k: fields[k] for k in ("ack", "target", "duplicate", "already_there", "confirmed") if k in fields}
    d.tries += 1
    d.last_error = None
    d.next_try = None
    if kept:
        sq.save(home, d)
    else:  # `--now`: the record written only now, done (a crash before it loses the record, never the line)
        sq.create(home, d)
    return Outcome("delivered", d, sent=sent)


def _queued(home: Home, d: sq.Delivery, exc: GageError) -> Outcome:
    first_time = d.tries == 0
    d.tries += 1
    d.state, d.attempt = "queued", None
    d.last_try = sq.now_text()
    d.last_error = str(exc)
    d.next_try = (datetime.now(UTC) + timedelta(seconds=backoff(d.tries))).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if first_time:
        home.journal.append(
            "delivery-queued", bundle=d.bundle, delivery=d.id, contact=d.to, key=d.key, route=d.route, why=WHY[d.route],
            error=str(exc),
        )
    sq.save(home, d)
    return Outcome("queued", d, error=str(exc))


def cancel(home: Home, d: sq.Delivery, why: str, *, by: str) -> Outcome:
    """Journal `delivery-cancelled` (by the person, or by gage for a refusal), then mark it so."""
    home.journal.append(
        "delivery-cancelled", bundle=d.bundle, delivery=d.id, contact=d.to, key=d.key, route=d.route, why=why, by=by,
    )
    d.state, d.why, d.done_at, d.attempt, d.next_try = "cancelled", why, sq.now_text(), None, None
    sq.save(home, d)
    return Outcome("cancelled", d, error=why)


def _journaled(home: Home, d: sq.Delivery) -> dict[str, Any] | None:
    """This delivery's `delivered` line, if a try wrote it and was killed before marking it done."""
    fd = home.journal.open_fd()
    if fd is None:
        return None
    since = (d.attempt or d.queued_at)[:19] + "Z"
    try:
        for n, (_at, raw) in enumerate(iter_lines_backwards(fd, os.fstat(fd).st_size)):
            entry = parse_line(raw)
            if entry is None:
                continue
            if entry.get("event") == "delivered" and entry.get("delivery") == d.id:
                return entry
            if n >= LOOK_BACK or str(entry.get("time", "")) < since:
                return None
    finally:
        os.close(fd)
    return None


def due(d: sq.Delivery, now: datetime) -> bool:
    return d.next_try is None or sq.parse_time(d.next_try) <= now.timestamp()


def send_waiting(
    home: Home, *, only: str | None = None, force: bool = False, on_outcome: Callable[[Outcome], None] | None = None,
    on_damaged: Callable[[sq.Damaged], None] | None = None,
) -> list[Outcome]:
    """Try every waiting delivery that is due (all with `force`), oldest first; a damaged file is
    reported and skipped, a delivery another process is trying is left to it."""
    deliveries, damaged = sq.load_all(home)
    for bad in damaged:
        if on_damaged is not None:
            on_damaged(bad)
    done: list[Outcome] = []
    down: set[tuple[str, str]] = set()  # (contact, way) found not there in this pass: the others to it wait
    for d in deliveries:
        if not d.waiting or (only is not None and d.id != only) or (d.to, d.route) in down:
            continue
        if not force and not due(d, datetime.now(UTC)):
            continue
        with sq.held(home, d.id) as mine:
            if not mine:
                continue
            try:
                fresh = sq.read(home, d.id)  # as it is now that it is ours
            except GageError as exc:
                if on_damaged is not None:
                    on_damaged(sq.Damaged(Path(exc.path or d.id), exc.message))
                continue
            if not fresh.waiting:
                continue
            outcome = attempt(home, fresh)
        if outcome.state == "queued":
            down.add((d.to, d.route))
        done.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return done
