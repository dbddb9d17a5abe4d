"""Keys in JSON for a reader: the key text with, beside it, the fingerprint every screen shows for it
(a hybrid key's text is too long to read), so a script never derives one from the other and an agent can be given the label alone.

`key_json` for objects gage builds; `with_fingerprints` for objects written elsewhere (a journal
entry, a manifest's party, a key statement), whose own fields are kept as they were.
"""

from __future__ import annotations

from gage.format.errors import MalformedError
from gage.format.keys import (
    HYBRID_PREFIX,
    KEY_PREFIX,
    key_text,
    parse_key,
    short_fingerprint,
)

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any


def key_json(key: bytes | None) -> dict[str, str | None]:
    """A key in JSON for a reader: its text and, beside it, the fingerprint every screen shows for it
    (a hybrid key's text is too long to read), so a script never derives one from the other. `None` for no key."""
    return {"key": key_text(key) if key else None, "fingerprint": short_fingerprint(key) if key else None}


def with_fingerprints(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a JSON object written elsewhere (a journal entry, a manifest's party, a statement)
    with each field that holds a key text followed by its fingerprint: `fingerprint` after `key`,
    `<field>_fingerprint` after any other. The object's own fields are kept as they were."""
    out: dict[str, Any] = {}
    for name, value in obj.items():
        out[name] = value
        fp = _fingerprint_or_none(value)
        if fp is not None:
            out["fingerprint" if name == "key" else f"{name}_fingerprint"] = fp
        elif isinstance(value, list) and value and all(_fingerprint_or_none(v) for v in value):
            out[f"{name}_fingerprints"] = [_fingerprint_or_none(v) for v in value]
    return out


def _fingerprint_or_none(value: object) -> str | None:
    if not isinstance(value, str) or not value.startswith((KEY_PREFIX, HYBRID_PREFIX)):
        return None
    try:
        return short_fingerprint(parse_key(value))
    except MalformedError:
        return None
