"""The newest directory record this home has seen, per handle and signing key: what stops a replay.

A directory record is signed by its publisher and dated by them (`published_at`), so whoever
runs the directory cannot forge one, but can serve an old one again: an address, a sealing
key or a relay the publisher has since left. A home that remembers the newest date it has
seen for each handle and key refuses an older record (spec/relay.md section 5), and flags
every record by a key other than the first it saw behind the handle (first by this home's
clock: a publisher's date is only its claim).

Kept in `directory-seen.json` in the home (gage writes it atomically, under the home lock).
Nothing here is trust: it only lets a lookup refuse; the verdict never reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gage.bundle import atomic
from gage.format import strictjson
from gage.format.errors import MalformedError, RefusedError
from gage.format.keys import key_text, parse_key, short_fingerprint
from gage.format.manifest import now_text, time_problem
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
    published_at: str  # the newest date this key's records for the handle claimed (the publisher's word)
    first_seen: str  # when this home first accepted a record by this key for the handle (this home's clock)


ROW = {"handle", "key", "published_at", "first_seen"}


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
            # `first_seen` came later: a row without it counts its published date instead.
            if not isinstance(row, dict) or set(row) not in (ROW, ROW - {"first_seen"}) or not isinstance(row["handle"], str):
                raise MalformedError("a row is {handle, key, published_at, first_seen}")
            first = row.get("first_seen", row["published_at"])
            for t in (row["published_at"], first):
                if time_problem(t) is not None:
                    raise MalformedError(f"not a time: {t!r}")
            out.append(Seen(row["handle"], parse_key(row["key"]), str(row["published_at"]), str(first)))
    except MalformedError as exc:
        raise MalformedError(f"directory-seen file is damaged: {exc}", path=str(p)) from exc
    return out


def new_key_note(seen: list[Seen], handle: str, key: bytes) -> str | None:
    """The warning for a record by a key other than the first this home saw behind `handle`.

    "First" is by this home's clock (`first_seen`), never by `published_at`: that is the
    signer's claim, so a record dated in the future would otherwise outrank the genuine one
    and move the warning onto it. Every record by a later key is flagged, however it is dated."""
    rows = [s for s in seen if s.handle == handle]
    if not rows:
        return None
    first = min(rows, key=lambda s: s.first_seen)
    if first.key == key:
        return None
    return (
        f"a new key behind this handle: this home first saw it under another key ({short_fingerprint(first.key)}, "
        f"{first.first_seen}); the handle changed hands, or one of them is not who you think"
    )


def admit(home: Home, handle: str, key: bytes, published_at: str, *, keep: bool = True) -> str | None:
    """Refuse a replayed record (exit 9), else keep its date (with `keep`); under the home lock, so
    two lookups at once cannot both pass an old record. Returns a note for a record by a key other
    than the first this home saw for the handle: not refused (a handle can change hands), but said."""
    with home.lock():
        seen = load(home)
        mine = [s for s in seen if s.handle == handle and s.key == key]
        problem = replay_problem(max(s.published_at for s in mine) if mine else None, published_at)
        if problem is not None:
            raise RefusedError(f"a replayed record: {problem}; refused, nothing was kept")
        note = new_key_note(seen, handle, key)
        if keep and (not mine or max(s.published_at for s in mine) < published_at):
            rows = {(s.handle, s.key): (s.published_at, s.first_seen) for s in seen}
            first = mine[0].first_seen if mine else now_text()
            rows[(handle, key)] = (published_at, first)
            doc = {
                "gage-directory-seen": VERSION,
                "seen": [
                    # In the order first seen (a new key last), so that two keys first seen in the same
                    # second still say which came first: `min` keeps the earlier row of a tie.
                    {"handle": h, "key": key_text(k), "published_at": t, "first_seen": f} for (h, k), (t, f) in rows.items()
                ],
            }
            atomic.write_bytes(home.root / FILE, strictjson.dumps(doc) + b"\n", mode=0o600)
    return note
