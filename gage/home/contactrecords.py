"""What a contacts file holds: confirmed contacts, their retired keys, and candidates.

Records (gage.format.record), not dataclasses: every command that reads a verdict loads
these, and a dataclass costs its compile at each import (start-up). Kept apart from
gage/home/contacts.py, which reads, changes and writes the file, so that stays small.
"""

from __future__ import annotations

from gage.format.errors import MalformedError
from gage.format.keys import key_text, parse_key, short_fingerprint
from gage.format.record import Record
from gage.format.vocab import REASONS

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import KeyStatus, Reason

_REQUIRED = object()


def text_field(
    item: dict[str, Any], name: str, where: str, default: Any = _REQUIRED
) -> str:
    """A text field of a hand-editable table; a number, a date or a list there is damage, not text."""
    if name not in item:
        if default is _REQUIRED:
            raise MalformedError(f"{where}: field {name} is missing")
        return str(default)
    value = item[name]
    if not isinstance(value, str):
        raise MalformedError(f"{where}: field {name} must be text, not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {
        bool: "true/false",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "a table",
    }.get(
        type(value),
        "a date or time" if hasattr(value, "isoformat") else type(value).__name__,
    )


class Retirement(Record):
    """A contact's key retired by a statement that key signed (spec/keys.md section 4)."""

    __slots__ = ("reason", "retired_at", "replacement", "statement", "applied_at")
    reason: Reason
    retired_at: str  # the contact's claim, never checked
    replacement: bytes | None
    statement: str  # the statement's id
    applied_at: str

    def __init__(
        self,
        reason: Reason,
        retired_at: str,
        replacement: bytes | None,
        statement: str,
        applied_at: str,
    ) -> None:
        self.reason = reason
        self.retired_at = retired_at
        self.replacement = replacement
        self.statement = statement
        self.applied_at = applied_at

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "retired_at": self.retired_at,
            "replacement": key_text(self.replacement) if self.replacement else None,
            "replacement_fingerprint": short_fingerprint(self.replacement)
            if self.replacement
            else None,
            "statement": self.statement,
            "applied_at": self.applied_at,
        }

    def to_toml(self) -> dict[str, str]:
        out = {
            "reason": self.reason,
            "retired_at": self.retired_at,
            "statement": self.statement,
            "applied_at": self.applied_at,
        }
        if self.replacement is not None:
            out["replacement"] = key_text(self.replacement)
        return out

    @classmethod
    def from_toml(cls, item: Any) -> Retirement:
        if not isinstance(item, dict) or item.get("reason") not in REASONS:
            raise MalformedError(
                "a retirement needs a reason: superseded or compromised"
            )
        replacement = item.get("replacement")
        return cls(
            reason=item["reason"],
            retired_at=text_field(item, "retired_at", "the retirement", ""),
            replacement=parse_key(text_field(item, "replacement", "the retirement"))
            if replacement is not None
            else None,
            statement=text_field(item, "statement", "the retirement", ""),
            applied_at=text_field(item, "applied_at", "the retirement", ""),
        )


class PreviousKey(Record):
    """A key a contact used before: retired, then replaced by one the ceremony confirmed."""

    __slots__ = ("key", "confirmed_at", "method", "retirement")
    key: bytes
    confirmed_at: str
    method: str
    retirement: Retirement

    def __init__(
        self, key: bytes, confirmed_at: str, method: str, retirement: Retirement
    ) -> None:
        self.key = key
        self.confirmed_at = confirmed_at
        self.method = method
        self.retirement = retirement

    def to_json(self) -> dict[str, Any]:
        return {
            "key": key_text(self.key),
            "fingerprint": short_fingerprint(self.key),
            "status": "retired",
            "confirmed_at": self.confirmed_at,
            "method": self.method,
            "retired": self.retirement.to_json(),
        }


class Contact(Record):
    __slots__ = ("name", "key", "confirmed_at", "method", "retired", "previous")
    name: str
    key: bytes
    confirmed_at: str
    method: str
    # Set when a statement signed by `key` retired it; the contact keeps its name until
    # the ceremony confirms a new key for it (or it is removed).
    retired: Retirement | None
    previous: list[PreviousKey]

    def __init__(
        self,
        name: str,
        key: bytes,
        confirmed_at: str,
        method: str,
        retired: Retirement | None = None,
        previous: list[PreviousKey] | None = None,
    ) -> None:
        self.name = name
        self.key = key
        self.confirmed_at = confirmed_at
        self.method = method
        self.retired = retired
        self.previous = [] if previous is None else previous

    @property
    def status(self) -> KeyStatus:
        return "retired" if self.retired is not None else "confirmed"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "key": key_text(self.key),
            "fingerprint": short_fingerprint(self.key),
            "status": self.status,
            "confirmed_at": self.confirmed_at,
            "method": self.method,
        }
        # The key history, only for a contact that has one (spec/keys.md section 8).
        if self.retired is not None:
            out["retired"] = self.retired.to_json()
        if self.previous:
            out["previous_keys"] = [p.to_json() for p in self.previous]
        return out


class Candidate(Record):
    __slots__ = (
        "key",
        "claimed_name",
        "source",
        "seen_at",
        "replaces",
        "replaces_contact",
    )
    key: bytes
    claimed_name: str
    source: str
    seen_at: str
    # A replacement named by a contact's retired key: the key it replaces and the contact's
    # local name. Still only a candidate: only the ceremony confirms it.
    replaces: bytes | None
    replaces_contact: str | None

    def __init__(
        self,
        key: bytes,
        claimed_name: str,
        source: str,
        seen_at: str,
        replaces: bytes | None = None,
        replaces_contact: str | None = None,
    ) -> None:
        self.key = key
        self.claimed_name = claimed_name
        self.source = source
        self.seen_at = seen_at
        self.replaces = replaces
        self.replaces_contact = replaces_contact

    def to_json(self) -> dict[str, Any]:
        return {
            "name": None,
            "claimed_name": self.claimed_name,
            "key": key_text(self.key),
            "fingerprint": short_fingerprint(self.key),
            "status": "candidate",
            "source": self.source,
            "seen_at": self.seen_at,
            "confirmed_at": None,
            "method": None,
        } | (
            # Only for a replacement a contact's retired key named (spec/keys.md section 4).
            {
                "replaces": key_text(self.replaces),
                "replaces_fingerprint": short_fingerprint(self.replaces),
                "replaces_contact": self.replaces_contact,
            }
            if self.replaces
            else {}
        )
