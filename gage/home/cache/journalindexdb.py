"""The journal index's database: its layout and how each fact is stored (spec/journal.md, "The
index"). Split out of gage.home.cache.journalindex, which keeps it in step with the journal."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator

from gage.home.cache import sealkey

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.home.journal.facts import Row

VERSION = 4  # 4: every row sealed under the home's cache key; 3: by a CRC-32, columns without affinity so values read back exactly
FILE_NAME = "journal-index.sqlite"
# Ids per query when looking many up at once.
BATCH = 500
COLUMNS = "decision, location, received, first_received, transport, accepted_how, sent, arrival"
# Ids, threads and digests are stored as UTF-8 blobs (lone surrogates included, which a JSON
# string can hold); a fact that is an ASCII string as text; any other fact (a dict, any other
# string) as a JSON blob, so every value the journal holds is read back exactly.

SCHEMA = """
CREATE TABLE IF NOT EXISTS state (
    one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL, dev INTEGER NOT NULL, ino INTEGER NOT NULL,
    covered INTEGER NOT NULL, last_start INTEGER NOT NULL, last_hash TEXT, ctime_ns INTEGER, sent_count INTEGER NOT NULL,
    seal BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS bundle (
    id TEXT PRIMARY KEY, decision, location, received, first_received, transport, accepted_how, sent, arrival,
    seal BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS placed ON bundle(id) WHERE decision IS NOT NULL AND coalesce(location, decision) != 'missing';
CREATE TABLE IF NOT EXISTS thread (id TEXT PRIMARY KEY, unattended, seal BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS torn (digest TEXT PRIMARY KEY, seal BLOB NOT NULL) WITHOUT ROWID;
"""
PLACED = "decision IS NOT NULL AND coalesce(location, decision) != 'missing'"


def key(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def unkey(blob: bytes) -> str:
    return blob.decode("utf-8", "surrogatepass")


def encode(row: Row) -> tuple[Any, ...]:
    return tuple(v if v is None or type(v) is int or (type(v) is str and v.isascii()) else json.dumps(v).encode() for v in row)


def decode(values: Iterable[Any]) -> Row:
    # Decoded to text first: json.loads on bytes sniffs the encoding every time (a listing
    # decodes tens of thousands of these); encode wrote them as UTF-8 JSON.
    return [_loads(v.decode("utf-8", "surrogatepass")) if type(v) is bytes else v for v in values]


_loads = json.JSONDecoder().decode


class Damaged(sqlite3.DatabaseError):
    """A row whose seal does not hold: written in place by something other than gage, or planted
    without the home's cache key. The index is rebuilt from the journal
    (gage.home.cache.journalindex), as for any index that is not current."""


def _text(values: tuple[Any, ...]) -> bytes:
    return repr(values).encode("utf-8", "surrogatepass")


def sealed(k: bytes, *values: Any) -> tuple[Any, ...]:
    """The values to store, their seal last: a keyed hash of their values (None, int, str or bytes,
    read back exactly, the columns having no affinity) under the home's cache key
    (gage.home.cache.sealkey), so a fact planted by whoever cannot read that key does not hold."""
    return (*values, sealkey.seal(k, _text(values)))


def unsealed(k: bytes, got: Iterable[Any]) -> list[Any]:
    """A row read back (its seal last) without its seal, or Damaged."""
    *values, kept = got
    if not sealkey.holds(k, kept, _text(tuple(values))):
        raise Damaged("a row of the journal index does not hold its seal")
    return values


def batches(ids: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(ids), BATCH):
        yield ids[i : i + BATCH]


@contextlib.contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (BEGIN IMMEDIATE: taken before anything is read, so two processes
    never both update from the same old state); committed, or rolled back on any exception."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


def reset(db: sqlite3.Connection) -> None:
    """A fresh file, or another version's layout: it is only a cache, so it starts again."""
    with immediate(db):
        if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:  # not done by another process meanwhile
            for table in ("state", "bundle", "thread", "torn"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {VERSION}")
