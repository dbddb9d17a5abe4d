"""Limits the receiver sets for itself, in the home's `settings.toml`.

Every setting has a documented default (spec/a2a.md), so a home without the file works;
a file that is there but wrong is an error naming the file and the setting, never a
silent fall back to a default the person did not choose.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import GageIOError, MalformedError
from .home import Home

FILE = "settings.toml"
DEFAULT_A2A_MAX_BYTES = 64 << 20
SETTINGS_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Settings:
    a2a_max_bytes: int = DEFAULT_A2A_MAX_BYTES


def path_of(home: Home) -> Path:
    return home.root / FILE


def load(home: Home) -> Settings:
    p = path_of(home)
    try:
        with open(p, "rb") as f:
            raw = f.read(SETTINGS_LIMIT + 1)
    except FileNotFoundError:
        return Settings()
    except IsADirectoryError as exc:
        raise GageIOError("is a folder, not a settings file", path=str(p)) from exc
    except OSError as exc:
        raise GageIOError(f"cannot read: {exc.strerror}", path=str(p)) from exc
    if len(raw) > SETTINGS_LIMIT:
        raise MalformedError(f"is over {SETTINGS_LIMIT} bytes", path=str(p))
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MalformedError(f"is not valid TOML: {exc}", path=str(p)) from exc
    unknown = sorted(set(doc) - {"a2a"})
    if unknown:
        raise MalformedError(f"unknown section {unknown[0]!r}", path=str(p))
    a2a = doc.get("a2a", {})
    if not isinstance(a2a, dict):
        raise MalformedError("must be a table", path=str(p), field="a2a")
    unknown = sorted(set(a2a) - {"max_bytes"})
    if unknown:
        raise MalformedError(f"unknown setting {unknown[0]!r}", path=str(p), field="a2a")
    value = a2a.get("max_bytes", DEFAULT_A2A_MAX_BYTES)
    if not isinstance(value, int) or isinstance(value, bool) or not 1024 <= value <= 1 << 40:
        raise MalformedError("must be a whole number of bytes from 1024 to 2**40", path=str(p), field="a2a.max_bytes")
    return Settings(a2a_max_bytes=value)
