"""The newest directory record this home has seen, per handle and signing key: what stops a replay.

A directory record is signed by its publisher and dated by them (`published_at`), so whoever
runs the directory cannot forge one, but can serve an old one again: an address, a sealing
key or a relay the publisher has since left. A home that remembers the newest date it has
seen for each handle and key refuses an older record (spec/relay.md section 5), and notes
when a handle it has seen under another key comes back with an older record than that key's.

Kept in `directory-seen.json` in the home (gage writes it atomically, under the home lock).
Nothing here is trust: it only lets a lookup refuse; the verdict never reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gage.bundle import atomic
from gage.format import strictjson
from gage.format.errors import MalformedError, RefusedError
from gage.format.keys import key_text, parse_key
from gage.format.manifest import time_problem
from gage.home import homefile
from gage.home.layout import Home

FILE = "directory-seen.json"
VERSION = 1
LIMIT = 8 << 20


def replay_problem(newest_seen: str | None, published_at: str) -> str | None:
    """Why a record dated `published_at` is a replay, given the newest date seen for its handle and key.

    Dates are `YYYY-MM-DDTHH:MM:SSZ`, so text order is time order. The same date again is the
    same record served again (or one the publisher made in the same second): not refused.
    """
    if newest_seen is not None and published_at < newest_seen:
        return f"it was published {published_at}, older than the record by the same key this home has seen ({newest_seen})"
    return None


@dataclass(frozen=True)
class Seen:
    handle: str
    key: bytes
    published_at: str


def load(home: Home) -> list[Seen]:
    p = home.root / FILE
    raw = homefile.read_bytes(p, "directory-seen", LIMIT)
    if raw is None:
        return []
    try:
        obj = strictjson.loads(raw, limit=LIMIT, what="directory-seen")
        if not isinstance(obj, dict) or obj.get("gage-directory-seen") != VERSION or not isinstance(obj.get("seen"), list):
            raise MalformedError("not a gage directory-seen file (version 1)")
        out = []
        for row in obj["seen"]:
            if not isinstance(row, dict) or set(row) != {"handle", "key", "published_at"} or not isinstance(row["handle"], str):
                raise MalformedError("a row is {handle, key, published_at}")
            if time_problem(row["published_at"]) is not None:
                raise MalformedError(f"not a time: {row['published_at']!r}")
            out.append(Seen(row["handle"], parse_key(row["key"]), row["published_at"]))
    except MalformedError as exc:
        raise MalformedError(f"directory-seen file is damaged: {exc}", path=str(p)) from exc
    return out


def admit(home: Home, handle: str, key: bytes, published_at: str, *, keep: bool = True) -> str | None:
    """Refuse a replayed record (exit 9), else keep its date (with `keep`); under the home lock, so
    two lookups at once cannot both pass an old record. Returns a note for a handle this home has
    seen with a newer record under another key: not refused (a handle can change hands), but said."""
    with home.lock():
        seen = load(home)
        mine = [s.published_at for s in seen if s.handle == handle and s.key == key]
        problem = replay_problem(max(mine) if mine else None, published_at)
        if problem is not None:
            raise RefusedError(f"a replayed record: {problem}; refused, nothing was kept")
        others = [s.published_at for s in seen if s.handle == handle and s.key != key]
        note = None
        if others and max(others) > published_at:
            note = f"this home has seen a newer record for this handle ({max(others)}) under another key: one of them is not who you think"
        if keep and (not mine or max(mine) < published_at):
            rows = {(s.handle, s.key): s.published_at for s in seen}
            rows[(handle, key)] = published_at
            doc = {
                "gage-directory-seen": VERSION,
                "seen": [{"handle": h, "key": key_text(k), "published_at": t} for (h, k), t in sorted(rows.items())],
            }
            atomic.write_bytes(home.root / FILE, strictjson.dumps(doc) + b"\n", mode=0o600)
    return note
