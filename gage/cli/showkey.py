"""A key on one line, as `gage init` and `gage id` show it."""

from __future__ import annotations

from gage.format.keys import key_shown, key_text


def whole_key_hint(key: bytes) -> str:
    """The key as a person reads it on one line: a hybrid key's 3984 characters would bury the
    rest of `gage id`, so it is named by its fingerprint and where the whole text is."""
    shown = key_shown(key)
    return shown if shown == key_text(key) else f"{shown} (the whole key: `gage id --full` or `gage key export`)"
