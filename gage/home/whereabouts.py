"""Where a contact (or a candidate) can be reached: a claim kept beside the confirmed key.

A mailbox on a relay (with the sealing key that opens envelopes sent there, and the
signed binding that ties it to the signing key), an A2A URL, a drop folder. Each came
from somewhere (a key file, a directory record, a card, the person) and says so. None of
it is trust: nothing here is read by the verdict, and a contact's key is confirmed only by
the ceremony. A sealing key is used only when its binding verifies under the key it is
filed under, so a claim that swaps the sealing key cannot be sealed to by mistake.

Kept in `where.json` in the home (gage writes it atomically, under the home lock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gage.bundle import atomic
from gage.format import relayurl, strictjson
from gage.format.errors import MalformedError
from gage.format.keys import key_text, parse_key, short_fingerprint
from gage.format.manifest import now_text
from gage.home import homefile, sealing
from gage.home.layout import Home

FILE = "where.json"
VERSION = 1
LIMIT = 8 << 20
MAX_TEXT = 2000
# What `gage contacts where` records: the person's own claim about where a contact is.
YOU = "you"
FIELDS = ("mailbox", "relay", "sealing", "a2a", "drop")


@dataclass(frozen=True)
class Where:
    """The claimed whereabouts of one signing key."""

    key: bytes
    mailbox: str | None = None
    relay: str | None = None
    sealing: sealing.Binding | None = None
    a2a: str | None = None
    drop: str | None = None
    source: str = ""
    seen_at: str = ""
    # Per field, who claimed it when not `source` (an A2A URL the person typed: "you").
    sources: Mapping[str, str] = field(default_factory=dict)

    def source_of(self, name: str) -> str:
        return self.sources.get(name) or self.source or "unknown"

    def sealing_key(self) -> str | None:
        """The sealing key to seal to, only if its binding is signed by the key this is filed under."""
        b = self.sealing
        if b is None or b.signing_key != self.key or not b.verifies():
            return None
        return b.sealing_key

    def mailbox_ok(self) -> bool:
        """The mailbox is the one the bound sealing key derives (a record cannot point elsewhere)."""
        k = self.sealing_key()
        return k is not None and self.mailbox == sealing.mailbox_address(k)

    def summary(self) -> str:
        """One line for people (untrusted parts included: the caller makes it safe to show)."""
        head = self.source_of("mailbox" if self.mailbox else "a2a" if self.a2a else "drop")

        def by(name: str) -> str:
            s = self.source_of(name)
            return "" if s == head else f" (from {s})"

        parts = []
        relay = relayurl.public(self.relay) if self.relay else None
        if self.mailbox:
            state = "" if self.mailbox_ok() else " (NOT bound by this key: deliver refuses it)"
            parts.append(f"mailbox {self.mailbox}" + (f" on {relay}{by('relay')}" if relay else "") + state)
        elif relay:
            parts.append(f"relay {relay}{by('relay')}")
        if self.a2a:
            parts.append(f"A2A {self.a2a}{by('a2a')}")
        if self.drop:
            parts.append(f"drop folder {self.drop}{by('drop')}")
        where = "; ".join(parts) or "nowhere known"
        return f"where (a claim, from {head}): {where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": key_text(self.key),
            "fingerprint": short_fingerprint(self.key),  # beside every key in JSON (spec/cli.md)
            "status": "claim",
            "mailbox": self.mailbox,
            "relay": relayurl.public(self.relay) if self.relay else None,
            "sealing_key": self.sealing.sealing_key if self.sealing else None,
            "sealing_bound": self.sealing_key() is not None,
            "a2a": self.a2a,
            "drop": self.drop,
            "source": self.source,
            "sources": {n: self.source_of(n) for n in FIELDS if getattr(self, n) is not None},
            "seen_at": self.seen_at,
        }

    def _store(self) -> dict[str, Any]:
        return {
            "mailbox": self.mailbox,
            "relay": self.relay,
            "sealing": self.sealing.to_carried() if self.sealing else None,
            "a2a": self.a2a,
            "drop": self.drop,
            "source": self.source,
            "sources": dict(sorted(self.sources.items())),
            "seen_at": self.seen_at,
        }


def _text(obj: dict[str, Any], name: str) -> str | None:
    v = obj.get(name)
    if v is None:
        return None
    if not isinstance(v, str) or len(v) > MAX_TEXT:
        raise MalformedError(f"{name} must be text of at most {MAX_TEXT} characters", field=name)
    return v


def load(home: Home) -> dict[bytes, Where]:
    p = home.root / FILE
    raw = homefile.read_bytes(p, "whereabouts", LIMIT)
    if raw is None:
        return {}
    try:
        obj = strictjson.loads(raw, limit=LIMIT, what="whereabouts")
        if not isinstance(obj, dict) or obj.get("gage-where") != VERSION or not isinstance(obj.get("keys"), dict):
            raise MalformedError("not a gage whereabouts file (version 1)")
        out: dict[bytes, Where] = {}
        for k, v in obj["keys"].items():
            key = parse_key(k)
            if not isinstance(v, dict):
                raise MalformedError(f"{k}: must be an object")
            b = v.get("sealing")
            srcs = v.get("sources") or {}
            if not isinstance(srcs, dict) or any(n not in FIELDS or not isinstance(t, str) or len(t) > MAX_TEXT for n, t in srcs.items()):
                raise MalformedError(f"{k}: sources must map a field to text")
            out[key] = Where(
                key=key,
                mailbox=_text(v, "mailbox"),
                relay=_text(v, "relay"),
                sealing=sealing.parse_carried(b) if b is not None else None,
                a2a=_text(v, "a2a"),
                drop=_text(v, "drop"),
                source=_text(v, "source") or "",
                seen_at=_text(v, "seen_at") or "",
                sources=srcs,
            )
    except MalformedError as exc:
        raise MalformedError(f"whereabouts file is damaged: {exc}", path=str(p)) from exc
    return out


def of(home: Home, key: bytes) -> Where | None:
    return load(home).get(key)


def remember(home: Home, where: Where | None) -> Where | None:
    """Keep the claim for `where.key`, over the earlier one field by field (a None keeps what was there).

    The one way a card, key file or directory record writes here, so its rules hold for all of
    them (spec/relay.md section 2): a sealing binding that is not signed by the key the claim is
    filed under is ignored, with the mailbox and relay that came with it; what the person set
    (source "you") is never overwritten; a relay URL is kept without a user or password.
    `None` (a claim `claim_of` ignored) writes nothing.
    """
    if where is None:
        return None
    if where.relay is not None:
        where = Where(**{**where.__dict__, "relay": relayurl.public(where.relay)})
    if where.sealing is not None and (where.sealing.signing_key != where.key or not where.sealing.verifies()):
        where = Where(**{**where.__dict__, "sealing": None, "mailbox": None, "relay": None})
        if all(getattr(where, n) is None for n in FIELDS):
            return None
    with home.lock():
        known = load(home)
        before = known.get(where.key)
        if before is not None:
            # What the person said (`gage contacts where`) stands: a claim never overwrites it.
            kept = {n: None for n in FIELDS if before.source_of(n) == YOU and getattr(before, n) is not None}
            if kept:
                where = Where(**{**where.__dict__, **kept})
        if before is not None and _older(where, before):
            # A replayed record (a directory serving an old one): keep the newer binding and its mailbox.
            where = Where(**{**where.__dict__, "sealing": before.sealing, "mailbox": before.mailbox, "source": before.source})
        if before is not None:
            where = _merged(where, before)
        elif not where.seen_at:
            where = Where(**{**where.__dict__, "seen_at": now_text()})
        known[where.key] = where
        _write(home, known)
    return where


def _merged(new: Where, before: Where) -> Where:
    """`new` over `before`, field by field: a None keeps the old value and who claimed it."""
    values = {n: getattr(new, n) if getattr(new, n) is not None else getattr(before, n) for n in FIELDS}
    by = {n: new.source_of(n) if getattr(new, n) is not None else before.source_of(n) for n in FIELDS if values[n] is not None}
    head = by.get("mailbox") or new.source or before.source
    return Where(
        key=new.key,
        **values,
        source=head,
        seen_at=new.seen_at or now_text(),
        sources={n: s for n, s in by.items() if s != head},
    )


def _write(home: Home, known: dict[bytes, Where]) -> None:
    """where.json, whole, atomically (the caller holds the home lock)."""
    doc = {"gage-where": VERSION, "keys": {key_text(k): w._store() for k, w in sorted(known.items())}}
    atomic.write_bytes(home.root / FILE, strictjson.dumps(doc) + b"\n", mode=0o600)


def set_own(home: Home, key: bytes, *, a2a: str | None = None, drop: str | None = None, relay: str | None = None, clear: Iterable[str] = ()) -> Where:
    """The person's own claim (source "you") about where `key` is: `gage contacts where`.

    Given values are set, fields in `clear` are removed ("mailbox" takes its relay and sealing
    binding with it); everything else, and who claimed it, stays as it was.
    """
    clear = set(clear)
    unknown = clear - {"mailbox", "relay", "a2a", "drop"}
    if unknown:
        raise MalformedError(f"cannot clear {sorted(unknown)}: one of mailbox, relay, a2a, drop")
    for name, value in (("a2a", a2a), ("drop", drop), ("relay", relay)):
        if value is not None and (not value or len(value) > MAX_TEXT or any(ord(c) < 32 for c in value)):
            raise MalformedError(f"must be one line of 1 to {MAX_TEXT} characters", field=name)
    if relay is not None and relayurl.has_userinfo(relay):
        raise MalformedError(
            "a relay URL with a user or password in it is refused: give it without them (this home's own credentials "
            "are in settings.toml, and are shown to no relay but this home's own)",
            field="relay",
        )
    with home.lock():
        known = load(home)
        w = known.get(key) or Where(key=key, source=YOU)
        values = {n: getattr(w, n) for n in FIELDS}
        by = {n: w.source_of(n) for n in FIELDS if values[n] is not None}
        for name in clear | ({"relay", "sealing"} if "mailbox" in clear else set()):
            values[name] = None
            by.pop(name, None)
        for name, value in (("a2a", a2a), ("drop", drop), ("relay", relay)):
            if value is not None:
                values[name], by[name] = value, YOU
        head = by.get("mailbox") or (w.source if values["mailbox"] else YOU)
        w = Where(key=key, **values, source=head, seen_at=now_text(), sources={n: s for n, s in by.items() if s != head})
        if all(v is None for v in values.values()):
            known.pop(key, None)
        else:
            known[key] = w
        _write(home, known)
    return w


def _older(new: Where, before: Where) -> bool:
    """`new` carries another binding, no newer than the one `before` holds, both bound by this key.

    Times are to the second: of two bindings made in the same second, the first seen stays."""
    if new.sealing is None or before.sealing is None or before.sealing_key() is None or new.sealing_key() is None:
        return False
    return new.sealing.raw != before.sealing.raw and new.sealing.bound_at <= before.sealing.bound_at


def from_binding(binding: sealing.Binding, *, relay: str | None, source: str) -> Where:
    """The claim a carried binding makes: the mailbox its sealing key derives, on `relay`."""
    return Where(
        key=binding.signing_key,
        mailbox=sealing.mailbox_address(binding.sealing_key),
        relay=relayurl.public(relay) if relay is not None else None,
        sealing=binding,
        source=source,
    )


def claim_of(carrier: bytes, binding: sealing.Binding, *, relay: str | None, source: str) -> Where | None:
    """The route a card, key file or directory record offers for `carrier`, the key it carries:
    None (nothing to keep) when its binding is not one `carrier` signed. A card with one key and
    another's binding cannot re-route that other."""
    if binding.signing_key != carrier or not binding.verifies():
        return None
    return from_binding(binding, relay=relay, source=source)
