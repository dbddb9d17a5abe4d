"""The buddy list: confirmed contacts, and candidates (keys seen but never confirmed).

A key gets `confirmed` only from the word-pair ceremony (gage/ceremony.py calls
`_confirm`; a test enforces that nothing else does). Key files, keys that came with
bundles, and agent cards only ever add candidates. The file is TOML the human may read;
gage rewrites it atomically.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from . import atomic
from .errors import MalformedError, RefusedError, UnknownKeyError
from .keys import check_local_name, key_text, parse_key
from .manifest import now_text


@dataclass
class Contact:
    name: str
    key: bytes
    confirmed_at: str
    method: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "key": key_text(self.key),
            "status": "confirmed",
            "confirmed_at": self.confirmed_at,
            "method": self.method,
        }


@dataclass
class Candidate:
    key: bytes
    claimed_name: str
    source: str
    seen_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": None,
            "claimed_name": self.claimed_name,
            "key": key_text(self.key),
            "status": "candidate",
            "source": self.source,
            "seen_at": self.seen_at,
            "confirmed_at": None,
            "method": None,
        }


class Contacts:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.confirmed: dict[str, Contact] = {}
        self.candidates: dict[bytes, Candidate] = {}

    @classmethod
    def load(cls, path: Path) -> Contacts:
        c = cls(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return c
        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise MalformedError(f"contacts file is not valid TOML: {exc}", path=str(path)) from exc
        for i, item in enumerate(doc.get("contact", [])):
            try:
                key = parse_key(item["key"])
                name = check_local_name(item["name"])
                c.confirmed[name] = Contact(name, key, str(item.get("confirmed_at", "")), str(item.get("method", "")))
            except (KeyError, TypeError, Exception) as exc:  # noqa: BLE001
                raise MalformedError(f"contact #{i + 1} is damaged: {exc}", path=str(path)) from exc
        for i, item in enumerate(doc.get("candidate", [])):
            try:
                key = parse_key(item["key"])
                c.candidates[key] = Candidate(
                    key, str(item.get("claimed_name", "")), str(item.get("source", "")), str(item.get("seen_at", ""))
                )
            except (KeyError, TypeError, MalformedError) as exc:
                raise MalformedError(f"candidate #{i + 1} is damaged: {exc}", path=str(path)) from exc
        return c

    def save(self) -> None:
        doc = {
            "contact": [
                {"name": c.name, "key": key_text(c.key), "confirmed_at": c.confirmed_at, "method": c.method}
                for c in sorted(self.confirmed.values(), key=lambda c: c.name.casefold())
            ],
            "candidate": [
                {"key": key_text(c.key), "claimed_name": c.claimed_name, "source": c.source, "seen_at": c.seen_at}
                for c in sorted(self.candidates.values(), key=lambda c: c.seen_at)
            ],
        }
        header = b"# gage contacts. Confirmed only by the word-pair ceremony (`gage pair`); edit with care.\n"
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

    def status_of(self, key: bytes) -> str:
        if self.by_key(key) is not None:
            return "confirmed"
        if key in self.candidates:
            return "candidate"
        return "unknown"

    # --- changes ---------------------------------------------------------------------

    def add_candidate(self, key: bytes, claimed_name: str, source: str) -> bool:
        """Remember a key we were shown. Never confirms; a confirmed key is left as it is."""
        if self.by_key(key) is not None or key in self.candidates:
            return False
        self.candidates[key] = Candidate(key, claimed_name[:200], source[:300], now_text())
        return True

    def _confirm(self, name: str, key: bytes, method: str) -> Contact:
        """Only the ceremony may call this (see module docstring)."""
        check_local_name(name)
        existing = self.confirmed.get(name)
        if existing is not None and existing.key != key:
            raise RefusedError(f"a different key is already confirmed as {name!r}; remove it first")
        other = self.by_key(key)
        if other is not None and other.name != name:
            raise RefusedError(f"this key is already confirmed as {other.name!r}")
        contact = Contact(name, key, now_text(), method)
        self.confirmed[name] = contact
        self.candidates.pop(key, None)
        return contact

    def remove(self, name: str) -> Contact:
        c = self.confirmed.pop(name, None)
        if c is None:
            raise UnknownKeyError(f"no confirmed contact named {name!r}")
        return c
