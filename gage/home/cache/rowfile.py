"""The row index's file, `cache/rows.sqlite`: its tables, and the one way it is opened.

Two stores share it, each sealed under the home's cache key (gage.home.cache.sealkey): the kept
rows of a listing and their stamp (gage.home.cache.rowindex), and the parse of each trust file
the stamp's generation hashes (gage.home.cache.tomlparsed). Kept apart from both so that reading
`contacts.toml` does not import the row index's machinery (the journal, the layout).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gage.home.cache.sqlitefile import open_cache_db, open_cache_db_to_read

FILE_NAME = "rows.sqlite"
# 8: the trust files' parses kept here; 7: rows sealed under the home's cache key; 6: a row's parts in
# one sealed JSON text, its stat values packed beside it; 3: its arrival in its own column.
SCHEMA_VERSION = 8
_TABLES = ("rows", "meta", "parsed")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    state TEXT NOT NULL, id TEXT NOT NULL, arrived TEXT, parent TEXT, stats BLOB NOT NULL, data TEXT NOT NULL,
    generation TEXT NOT NULL, seal BLOB NOT NULL, arrived_seal BLOB NOT NULL,
    PRIMARY KEY (state, id)
);
CREATE TABLE IF NOT EXISTS parsed (
    name TEXT PRIMARY KEY, text_sha TEXT NOT NULL, parser TEXT NOT NULL, doc TEXT NOT NULL, seal BLOB NOT NULL
);
"""


def open_rows(path: Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """Opened as the journal index opens its file (gage.home.cache.sqlitefile): never through a link,
    FIFO or device, and a file that is not a database is removed and made again. Another layout's
    tables are dropped. Raises sqlite3.Error or OSError: the caller goes on without it."""

    def prepare(db: sqlite3.Connection) -> None:
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _TABLES) + f"PRAGMA user_version = {SCHEMA_VERSION};")
        db.executescript(_SCHEMA)

    return open_cache_db(path, "the row index", prepare=prepare, timeout=5, check_same_thread=check_same_thread)


def read_rows(path: Path) -> sqlite3.Connection | None:
    """The file for a read only (None: there is none yet). Raises sqlite3.Error or OSError."""
    return open_cache_db_to_read(path, "the row index")

