"""The buddy list: confirmed contacts, and candidates (keys seen but never confirmed).

A key gets `confirmed` only from the word-pair ceremony (gage/trust/ceremony.py calls
`_confirm`; a test enforces that nothing else does). Key files, keys that came with
bundles, and agent cards only ever add candidates. The file is TOML the human may read;
gage rewrites it atomically.

A contact's key can be `retired` by a statement it signed (gage/trust/retirement.py): the
contact keeps its name, the key keeps its place in the contact's history, and a
replacement the statement names is only a candidate linked to the contact, until the
ceremony confirms it under that name.
"""

from __future__ import annotations

from pathlib import Path

from gage.bundle import atomic
from gage.format.errors import GageError, MalformedError, RefusedError, UnknownKeyError
from gage.format.keys import check_local_name, key_text, parse_key
from gage.format.manifest import now_text
from gage.home import homefile
from gage.home.cache import tomlparsed
from gage.home.clash import Clash
from gage.home.contactrecords import Candidate as Candidate
from gage.home.contactrecords import Contact as Contact
from gage.home.contactrecords import PreviousKey as PreviousKey
from gage.home.contactrecords import Retirement as Retirement
from gage.home.contactrecords import text_field as _text

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import KeyStatus

CONTACTS_LIMIT = 16 << 20


def _tables(doc: dict[str, Any], name: str, path: Path) -> list[dict[str, Any]]:
    """`[[name]]` entries: a list of tables, or the file is damaged."""
    items = doc.get(name, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise MalformedError(f"`{name}` must be written as [[{name}]] tables", path=str(path), field=name)
    return items


class Contacts:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.confirmed: dict[str, Contact] = {}
        self.candidates: dict[bytes, Candidate] = {}

    @classmethod
    def load(cls, path: Path) -> Contacts:
        """Read contacts.toml. A file that is damaged in any way (not TOML, not UTF-8, a folder,
        a field of the wrong type) is a MalformedError or GageIOError naming the file and what
        is wrong: never a silent default, never a traceback."""
        c = cls(path)
        text = homefile.read_text(path, "contacts", CONTACTS_LIMIT)
        if text is None:
            return c
        try:
            doc = tomlparsed.loads(text, path)
        except ValueError as exc:  # tomllib's TOMLDecodeError, or an integer too long to convert
            raise MalformedError(f"contacts file is not valid TOML: {exc}", path=str(path)) from exc
        unknown = sorted(set(doc) - {"contact", "candidate"})
        if unknown:
            raise MalformedError(f"unknown entry {unknown[0]!r} (only [[contact]] and [[candidate]] tables)", path=str(path))
        for i, item in enumerate(_tables(doc, "contact", path)):
            where = f"contact #{i + 1}"
            try:
                key = parse_key(_text(item, "key", where))
                name = check_local_name(_text(item, "name", where))
                retired = Retirement.from_toml(item["retired"]) if "retired" in item else None
                previous_items = item.get("previous", [])
                if not isinstance(previous_items, list):
                    raise MalformedError(f"{where}: field previous must be a list of tables")
                previous = []
                for j, p in enumerate(previous_items):
                    pw = f"{where}, previous key #{j + 1}"
                    if not isinstance(p, dict):
                        raise MalformedError(f"{pw} is not a table")
                    previous.append(
                        PreviousKey(
                            parse_key(_text(p, "key", pw)),
                            _text(p, "confirmed_at", pw, ""),
                            _text(p, "method", pw, ""),
                            Retirement.from_toml(p.get("retired")),
                        )
                    )
                c.confirmed[name] = Contact(
                    name, key, _text(item, "confirmed_at", where, ""), _text(item, "method", where, ""), retired, previous
                )
            except MalformedError as exc:
                raise MalformedError(f"{where} is damaged: {exc.message}", path=str(path), field=exc.field) from exc
            except (KeyError, TypeError, ValueError, GageError) as exc:
                raise MalformedError(f"{where} is damaged: {exc}", path=str(path)) from exc
        for i, item in enumerate(_tables(doc, "candidate", path)):
            where = f"candidate #{i + 1}"
            try:
                key = parse_key(_text(item, "key", where))
                replaces = item.get("replaces")
                c.candidates[key] = Candidate(
                    key,
                    _text(item, "claimed_name", where, ""),
                    _text(item, "source", where, ""),
                    _text(item, "seen_at", where, ""),
                    parse_key(_text(item, "replaces", where)) if replaces is not None else None,
                    _text(item, "replaces_contact", where) if "replaces_contact" in item else None,
                )
            except MalformedError as exc:
                raise MalformedError(f"{where} is damaged: {exc.message}", path=str(path), field=exc.field) from exc
            except (KeyError, TypeError, ValueError, GageError) as exc:
                raise MalformedError(f"{where} is damaged: {exc}", path=str(path)) from exc
        return c

    def save(self) -> None:
        doc = {
            "contact": [_contact_toml(c) for c in sorted(self.confirmed.values(), key=lambda c: c.name.casefold())],
            "candidate": [_candidate_toml(c) for c in sorted(self.candidates.values(), key=lambda c: c.seen_at)],
        }
        header = b"# gage contacts. Confirmed only by the word-pair ceremony (`gage pair`); edit with care.\n"
        import tomli_w  # writing only: a reading command never loads it

        atomic.write_bytes(self.path, header + tomli_w.dumps(doc).encode("utf-8"), 0o600)

    # --- queries ---------------------------------------------------------------------

    def by_key(self, key: bytes) -> Contact | None:
        for c in self.confirmed.values():
            if c.key == key:
                return c
        return None

    def by_name(self, name: str) -> Contact | None:
        return self.confirmed.get(name)

    def require(self, name: str) -> Contact:
        c = self.by_name(name)
        if c is None:
            raise UnknownKeyError(f"no confirmed contact named {name!r} (see `gage contacts`)")
        return c

    def status_of(self, key: bytes) -> KeyStatus:
        """confirmed, retired (a contact's key a statement retired), candidate or unknown."""
        c = self.by_key(key)
        if c is not None:
            return c.status
        if self.retirement_of(key) is not None:
            return "retired"
        if key in self.candidates:
            return "candidate"
        return "unknown"

    def retirement_of(self, key: bytes) -> tuple[Contact, Retirement] | None:
        """The contact whose key this is (its current one or an earlier one), if it is retired."""
        for c in self.confirmed.values():
            if c.key == key and c.retired is not None:
                return c, c.retired
            for p in c.previous:
                if p.key == key:
                    return c, p.retirement
        return None

    def owner_of(self, key: bytes) -> Contact | None:
        """The contact this key is or was confirmed for: its current key or a previous one."""
        c = self.by_key(key)
        if c is not None:
            return c
        for c in self.confirmed.values():
            if any(p.key == key for p in c.previous):
                return c
        return None

    # --- changes ---------------------------------------------------------------------

    def add_candidate(self, key: bytes, claimed_name: str, source: str) -> bool:
        """Remember a key we were shown. Never confirms; a contact's key (current or previous) is left as it is."""
        if self.owner_of(key) is not None or key in self.candidates:
            return False
        self.candidates[key] = Candidate(key, claimed_name[:200], source[:300], now_text())
        return True

    def set_retirement(self, key: bytes, retirement: Retirement) -> Contact:
        """Record a retirement for a contact's key (gage/trust/retirement.py decides whether it applies)."""
        for c in self.confirmed.values():
            if c.key == key:
                c.retired = retirement
                return c
            for p in c.previous:
                if p.key == key:
                    p.retirement = retirement
                    return c
        raise UnknownKeyError("no contact has this key")

    def link_replacement(self, key: bytes, claimed_name: str, source: str, *, replaces: bytes, contact: str) -> bool:
        """A replacement named by `contact`'s retired key: a candidate linked to the contact, never more.

        False when the key is already a contact's (nothing to link: it was confirmed by the ceremony).
        """
        if self.owner_of(key) is not None:
            return False
        cand = self.candidates.get(key)
        if cand is None:
            cand = Candidate(key, claimed_name[:200], source[:300], now_text())
            self.candidates[key] = cand
        cand.replaces = replaces
        cand.replaces_contact = contact
        return True

    def _confirm(self, name: str, key: bytes, method: str) -> Contact:
        """Only the ceremony may call this (see module docstring).

        A contact whose key is retired can be given a new key under the same name: the
        retired key moves into the contact's history. A retired key is never confirmed again.
        """
        self.confirmable(name, key)
        existing = self.confirmed.get(name)
        previous: list[PreviousKey] = []
        if existing is not None and existing.retired is not None:
            previous = [*existing.previous, PreviousKey(existing.key, existing.confirmed_at, existing.method, existing.retired)]
        elif existing is not None:
            previous = existing.previous
        contact = Contact(name, key, now_text(), method, None, previous)
        self.confirmed[name] = contact
        self.candidates.pop(key, None)
        return contact

    def confirmable(self, name: str, key: bytes) -> None:
        """Raise RefusedError, saying what to do, if confirming `key` as `name` would be refused.

        The ceremony asks this before any word is read, and `_confirm` again under
        the lock, so a clash is never found only after both people have read their words."""
        found = self.clash(name, key)
        if found is not None:
            raise RefusedError(found.cli_text())

    def clash(self, name: str, key: bytes) -> Clash | None:
        """Why confirming `key` as `name` would be refused, or None: one rule, worded by each interface."""
        check_local_name(name)
        if self.retirement_of(key) is not None:
            return Clash("retired", name)
        existing = self.confirmed.get(name)
        if existing is not None and existing.key != key and existing.retired is None:
            return Clash("name-taken", name)
        other = self.by_key(key)
        if other is not None and other.name != name:
            return Clash("key-named", other.name)
        return None

    def remove(self, name: str) -> Contact:
        c = self.confirmed.pop(name, None)
        if c is None:
            raise UnknownKeyError(f"no confirmed contact named {name!r}")
        return c


def _contact_toml(c: Contact) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "key": key_text(c.key), "confirmed_at": c.confirmed_at, "method": c.method}
    if c.retired is not None:
        out["retired"] = c.retired.to_toml()
    if c.previous:
        out["previous"] = [
            {"key": key_text(p.key), "confirmed_at": p.confirmed_at, "method": p.method, "retired": p.retirement.to_toml()}
            for p in c.previous
        ]
    return out


def _candidate_toml(c: Candidate) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key_text(c.key), "claimed_name": c.claimed_name, "source": c.source, "seen_at": c.seen_at}
    if c.replaces is not None:
        out["replaces"] = key_text(c.replaces)
    if c.replaces_contact is not None:
        out["replaces_contact"] = c.replaces_contact
    return out
