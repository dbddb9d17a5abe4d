"""Limits the receiver sets for itself, in the home's `settings.toml`.

Every setting has a documented default (spec/settings.md), so a home without the file works;
a file that is there but wrong is an error naming the file and the setting, never a
silent fall back to a default the person did not choose.

```toml
[a2a]
max_bytes = 67108864            # one A2A request (spec/a2a.md section 7)

[limits]                        # every import: gage import, watch, A2A (spec/settings.md)
max_bundle_bytes = 4294967296   # manifest + signature + declared payload sizes, per bundle
max_files = 10000               # files listed in one bundle
max_path_bytes = 1024           # one payload path, in UTF-8 bytes
pending_per_key = 100           # bundles in inbox/pending per key that is not a confirmed contact
pending_bytes_per_key = 2147483648
pending_unconfirmed = 1000      # bundles in inbox/pending from all such keys together
pending_unconfirmed_bytes = 8589934592

[relay]                         # this home's mailbox relay (spec/relay.md); written by `gage mailbox create`
url = "nats://127.0.0.1:4222"  # never with a user or password in it: refused
creds = "/path/to/user.creds"   # optional, one of: a NATS creds file,
# nkey = "/path/to/user.nk"     #   an nkey seed file,
# user = "bob"                  #   a user name with
# password_file = "/path/pw"    #   a file holding the password; every file 0600 or refused
```
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gage.format.errors import MalformedError, RefusedError
from gage.format.manifest import MAX_FILES, MAX_PATH
from gage.home.layout import Home

FILE = "settings.toml"
DEFAULT_A2A_MAX_BYTES = 64 << 20
SETTINGS_LIMIT = 64 * 1024

# [limits]: name -> (default, lowest, highest). Bytes are counted as a receiver counts a
# bundle: manifest bytes + the signature its key makes (64, or 3373 hybrid) + every file's declared size (no copy ever
# writes more than that: spec/bundle.md section 10).
LIMITS: dict[str, tuple[int, int, int]] = {
    "max_bundle_bytes": (4 << 30, 1024, 1 << 50),
    "max_files": (MAX_FILES, 0, MAX_FILES),
    "max_path_bytes": (MAX_PATH, 1, MAX_PATH),
    "pending_per_key": (100, 0, 1 << 30),
    "pending_bytes_per_key": (2 << 30, 0, 1 << 50),
    "pending_unconfirmed": (1000, 0, 1 << 30),
    "pending_unconfirmed_bytes": (8 << 30, 0, 1 << 50),
}


@dataclass(frozen=True)
class Limits:
    """What one import may bring in (spec/settings.md). Defaults as in `LIMITS`."""

    max_bundle_bytes: int = LIMITS["max_bundle_bytes"][0]
    max_files: int = LIMITS["max_files"][0]
    max_path_bytes: int = LIMITS["max_path_bytes"][0]
    pending_per_key: int = LIMITS["pending_per_key"][0]
    pending_bytes_per_key: int = LIMITS["pending_bytes_per_key"][0]
    pending_unconfirmed: int = LIMITS["pending_unconfirmed"][0]
    pending_unconfirmed_bytes: int = LIMITS["pending_unconfirmed_bytes"][0]


assert {f.name for f in fields(Limits)} == set(LIMITS)


@dataclass(frozen=True)
class Settings:
    a2a_max_bytes: int = DEFAULT_A2A_MAX_BYTES
    limits: Limits = Limits()
    relay_url: str | None = None
    relay_creds: str | None = None
    relay_nkey: str | None = None
    relay_user: str | None = None
    relay_password_file: str | None = None


RELAY_CREDENTIALS = ("creds", "nkey", "user", "password_file")


def relay_url_problem(url: str) -> str | None:
    """Why `url` may not name a relay, or None: a user or password in it would travel wherever the
    URL goes (records, cards, journal lines, printed lines), so it is refused, naming the fix."""
    for one in url.split(","):
        netloc = one.strip().partition("://")[2].partition("/")[0]
        if "@" in netloc:
            return (
                "a relay URL may not carry a user or password (it would be printed, journaled and published "
                "with the URL): give the URL without them, and the credential as a file: --creds FILE, "
                "--nkey FILE, or --user NAME --password-file FILE (each file 0600)"
            )
    return None


class LimitError(RefusedError):
    """An import over one of the receiver's limits: nothing was written (exit 9).

    `setting` is the name in settings.toml (`limits.max_files`), `limit` its value here.
    """

    def __init__(self, message: str, *, setting: str, limit: int, path: str | None = None) -> None:
        super().__init__(message, path=path)
        self.setting = setting
        self.limit = limit


def path_of(home: Home) -> Path:
    return home.root / FILE


def _table(doc: dict[str, Any], name: str, allowed: set[str], p: Path) -> dict[str, Any]:
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise MalformedError("must be a table", path=str(p), field=name)
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise MalformedError(f"unknown setting {unknown[0]!r}", path=str(p), field=name)
    return table


def _whole(table: dict[str, Any], name: str, default: int, low: int, high: int, p: Path, field: str) -> int:
    value = table.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise MalformedError(f"must be a whole number from {low} to {high}", path=str(p), field=field)
    return value


def load(home: Home) -> Settings:
    p = path_of(home)
    # Non-blocking, regular files only: a FIFO, a folder or an unreadable file here is an
    # error naming the file (gage.home.homefile), never a hang or a traceback.
    from gage.home import homefile

    raw = homefile.read_bytes(p, "settings", SETTINGS_LIMIT)
    if raw is None:
        return Settings()
    return parse(raw, p)


def parse(raw: bytes, p: Path) -> Settings:
    """The settings in `raw` (the bytes of the file at `p`, named in every error)."""
    if len(raw) > SETTINGS_LIMIT:
        raise MalformedError(f"is over {SETTINGS_LIMIT} bytes", path=str(p))
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, tomllib's TOMLDecodeError, or an integer too long to convert
        raise MalformedError(f"is not valid TOML: {exc}", path=str(p)) from exc
    unknown = sorted(set(doc) - {"a2a", "limits", "relay"})
    if unknown:
        raise MalformedError(f"unknown section {unknown[0]!r}", path=str(p))
    a2a = _table(doc, "a2a", {"max_bytes"}, p)
    value = a2a.get("max_bytes", DEFAULT_A2A_MAX_BYTES)
    if not isinstance(value, int) or isinstance(value, bool) or not 1024 <= value <= 1 << 40:
        raise MalformedError("must be a whole number of bytes from 1024 to 2**40", path=str(p), field="a2a.max_bytes")
    table = _table(doc, "limits", set(LIMITS), p)
    limits = Limits(**{name: _whole(table, name, d, lo, hi, p, f"limits.{name}") for name, (d, lo, hi) in LIMITS.items()})
    relay = _table(doc, "relay", {"url", *RELAY_CREDENTIALS}, p)
    for name in ("url", *RELAY_CREDENTIALS):
        v = relay.get(name)
        if v is not None and (not isinstance(v, str) or not v or len(v) > 2000):
            raise MalformedError("must be text of 1 to 2000 characters", path=str(p), field=f"relay.{name}")
    problem = relay_url_problem(relay.get("url") or "")
    if problem is not None:
        raise MalformedError(problem, path=str(p), field="relay.url")
    forms = ("creds" in relay) + ("nkey" in relay) + ("user" in relay or "password_file" in relay)
    if forms > 1 or ("user" in relay) != ("password_file" in relay):
        raise MalformedError("one relay credential: creds, or nkey, or user with password_file", path=str(p), field="relay")
    return Settings(
        a2a_max_bytes=value, limits=limits, relay_url=relay.get("url"), relay_creds=relay.get("creds"),
        relay_nkey=relay.get("nkey"), relay_user=relay.get("user"), relay_password_file=relay.get("password_file"),
    )
