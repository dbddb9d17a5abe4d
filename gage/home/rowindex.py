"""The row index: inbox rows remembered across commands (issue 28), stored, never a source.

`gage list`, the interface and `gage mcp` show one row per held bundle (gage.inbox.rows). A row
depends on the bundle's bytes, on who this home trusts (identity, contacts, authority) and on
what the journal says of the bundle and of its parent. Computing 10,000 of them again on every
listing cost seconds; this file remembers each row with what it was computed from, and a row is
used only when all of that is what it was:

- the trust generation: a SHA-256 of the identity, contacts and authority files' bytes (and the
  gage version and this format), read on every use: any change, by any process, retires every row;
- the journal: the byte offset the rows were computed at and the hash of the last line before
  it. Lines appended since are read (only those) and every bundle they name, as itself or as a
  parent, has its row retired; a journal that is shorter, or whose line at the offset changed,
  retires every row;
- the bundle folder: the tree digest of gage.home.checkcache (mode, size, mtime, ctime, inode
  and device of the folder, manifest, signature and every listed entry; ctime cannot be set
  back), taken again with one lstat per entry, relative to the opened folder. A row is stored
  only with the digest the check cache stored for the check the row was computed from, so it
  inherits the cache's racy-window rule, and only rows of bundles that checked out are kept.

A sqlite file beside the journal index (`cache/rows.sqlite`), for the same reason: a listing
reads every row in one query and one command asks about one. Deleting it changes nothing but
speed; a damaged, foreign or unwritable one is ignored (the rows are computed).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from gage import __version__
from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.bundle.treestat import tree_digest_of
from gage.format import sha256
from gage.format.record import Frozen, set_field
from gage.home import homefile
from gage.home.cachedb import open_cache_db
from gage.home.journal.lines import (
    iter_lines,
    line_hash,
    open_journal,
    parse_line,
    rfind_newline,
)
from gage.home.layout import Home

TYPE_CHECKING = False  # importing typing costs start-up time (issue 28)
if TYPE_CHECKING:
    from typing import Any

FORMAT = f"gage-rowindex-3/{__version__}"  # 3: the sender carries its fingerprint (issue 27)
SCHEMA_VERSION = 3  # 3: each row's arrival in its own column, before the large ones (the interface orders by it)
FILE_NAME = "rows.sqlite"
_TRUST_FILES_LIMIT = 16 << 20
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    state TEXT NOT NULL, id TEXT NOT NULL, arrived TEXT, digest TEXT NOT NULL, parent TEXT,
    entries TEXT NOT NULL, warnings TEXT NOT NULL, row TEXT NOT NULL, PRIMARY KEY (state, id)
);
"""


class Stamp(Frozen):
    """What a set of rows was computed from, apart from each bundle's own folder."""

    __slots__ = ("generation", "journal_at", "journal_last")
    generation: str
    journal_at: int  # byte offset: the journal's length (to its last whole line)
    journal_last: str  # line_hash of the last line before journal_at ("" when none)

    def __init__(self, generation: str, journal_at: int, journal_last: str) -> None:
        set_field(self, "generation", generation)
        set_field(self, "journal_at", journal_at)
        set_field(self, "journal_last", journal_last)


class Kept(Frozen):
    __slots__ = ("digest", "parent", "entries", "warnings", "row")
    digest: str
    parent: str | None
    entries: list[str]  # the payload's folders and files, as the manifest lists them
    warnings: list[Any]  # the check's warnings (checkcache.dump_problems)
    row: dict[str, Any]

    def __init__(
        self,
        digest: str,
        parent: str | None,
        entries: list[str],
        warnings: list[Any],
        row: dict[str, Any],
    ) -> None:
        set_field(self, "digest", digest)
        set_field(self, "parent", parent)
        set_field(self, "entries", entries)
        set_field(self, "warnings", warnings)
        set_field(self, "row", row)


def generation(home: Home) -> str:
    """The trust inputs' generation: read every time, so an edit by any process is seen."""
    parts = [FORMAT.encode()]
    for path in (home.identity_path, home.contacts_path, home.authority_path):
        try:
            data = homefile.read_bytes(path, path.name, _TRUST_FILES_LIMIT)
        except Exception:  # noqa: BLE001 - an unreadable file is a generation of its own
            data = None
        parts.append(b"-" if data is None else b"%d:" % len(data) + data)
    return sha256.hexdigest(b"".join(parts))


def journal_end(home: Home) -> tuple[int, str]:
    """The journal's last whole line: where it ends, and its hash."""
    fd = open_journal(home.journal.path)
    if fd is None:
        return 0, ""
    try:
        size = os.fstat(fd).st_size
        nl = rfind_newline(fd, size)
        if nl < 0:
            return 0, ""
        start = rfind_newline(fd, nl) + 1
        return nl + 1, line_hash(os.pread(fd, nl - start, start))
    finally:
        os.close(fd)


def named_since(home: Home, stamp: Stamp) -> set[str] | None:
    """Every bundle id the journal's lines after `stamp` name; None when the journal is not
    the one the stamp saw (shorter, or changed at the stamp), or a line names no bundle."""
    fd = open_journal(home.journal.path)
    if fd is None:
        return None if stamp.journal_at else set()
    try:
        size = os.fstat(fd).st_size
        if size < stamp.journal_at:
            return None
        if stamp.journal_at:
            nl = stamp.journal_at - 1
            start = rfind_newline(fd, nl) + 1
            if os.pread(fd, 1, nl) != b"\n" or line_hash(os.pread(fd, nl - start, start)) != stamp.journal_last:
                return None
        named: set[str] = set()
        for _at, line in iter_lines(fd, stamp.journal_at, size):
            obj = parse_line(line)
            bundle = obj.get("bundle") if obj is not None else None
            if not isinstance(bundle, str):
                return None  # pairing, a key statement, a repair, damage: retire everything
            named.add(bundle)
        return named
    finally:
        os.close(fd)


def digest_now(root: Path, entries: list[str]) -> str | None:
    """The folder's tree digest now (as the check cache takes it), or None if it cannot be taken."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        stat_ = os.stat
        top = os.fstat(fd)
        listed = [(".", top)] + [(n, stat_(n, dir_fd=fd, follow_symlinks=False)) for n in (MANIFEST, SIGNATURE, PAYLOAD)]
        listed += [(f"{PAYLOAD}/{rel}", stat_(f"{PAYLOAD}/{rel}", dir_fd=fd, follow_symlinks=False)) for rel in entries]
        return tree_digest_of(listed)
    except OSError:
        return None
    finally:
        os.close(fd)


class RowIndex:
    """The file. Every failure to read or write it is a miss, never an error."""

    def __init__(self, home: Home) -> None:
        self.path = home.cache / FILE_NAME
        self.db: sqlite3.Connection | None = None
        with contextlib.suppress(sqlite3.Error, OSError):
            self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        """Opened as the journal index opens its file (gage.home.cachedb): never through a link,
        FIFO or device, and a file that is not a database is removed and made again."""

        def prepare(db: sqlite3.Connection) -> None:
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                db.executescript(f"DROP TABLE IF EXISTS rows; DROP TABLE IF EXISTS meta; PRAGMA user_version = {SCHEMA_VERSION};")
            db.executescript(_SCHEMA)

        return open_cache_db(self.path, "the row index", prepare=prepare, timeout=5)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def stamp(self) -> Stamp | None:
        if self.db is None:
            return None
        try:
            got = dict(self.db.execute("SELECT k, v FROM meta").fetchall())
            return Stamp(got["generation"], int(got["journal_at"]), got["journal_last"]) if got.get("format") == FORMAT else None
        except (sqlite3.Error, KeyError, ValueError):
            return None

    def rows(self, states: Iterable[str]) -> dict[tuple[str, str], Kept]:
        if self.db is None:
            return {}
        out = {}
        try:
            marks = ",".join("?" for _ in states)
            for state, bid, digest, parent, entries, warnings, row in self.db.execute(
                f"SELECT state, id, digest, parent, entries, warnings, row FROM rows WHERE state IN ({marks})", tuple(states)
            ):
                out[(state, bid)] = Kept(digest, parent, json.loads(entries), json.loads(warnings), json.loads(row))
        except (sqlite3.Error, ValueError):
            return {}
        return out

    def arrivals(self, state: str) -> dict[str, str | None]:
        """Each kept row's arrival time (the journal's first `received`, or None) in `state`, by
        id: what the interface orders its first screenful by, without a journal lookup each.
        Only that column is read, not 10,000 rows' JSON."""
        if self.db is None:
            return {}
        try:
            return dict(self.db.execute("SELECT id, arrived FROM rows WHERE state = ?", (state,)).fetchall())
        except sqlite3.Error:
            return {}

    def row(self, state: str, bundle_id: str) -> Kept | None:
        """One kept row, by one keyed lookup (flat in the inbox's size)."""
        if self.db is None:
            return None
        try:
            got = self.db.execute(
                "SELECT digest, parent, entries, warnings, row FROM rows WHERE state = ? AND id = ?", (state, bundle_id)
            ).fetchone()
            return None if got is None else Kept(got[0], got[1], json.loads(got[2]), json.loads(got[3]), json.loads(got[4]))
        except (sqlite3.Error, ValueError):
            return None

    def save(
        self,
        stamp: Stamp,
        fresh: dict[tuple[str, str], Kept],
        gone: Iterable[tuple[str, str]],
        *,
        clear: bool,
        named: Iterable[str] = (),
    ) -> None:
        """Store rows computed at `stamp`, forget `gone` ones (all others, with `clear`), in one transaction.
        `named`: the bundles the journal named since the last stamp; their rows and their children's are
        forgotten in every state (a listing of one state must not carry another's stale rows past the stamp)."""
        if self.db is None:
            return
        with contextlib.suppress(sqlite3.Error):
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                if clear:
                    db.execute("DELETE FROM rows")
                db.executemany("DELETE FROM rows WHERE state = ? AND id = ?", list(gone))
                db.executemany("DELETE FROM rows WHERE id = ? OR parent = ?", [(n, n) for n in named])
                db.executemany(
                    "INSERT OR REPLACE INTO rows (state, id, digest, parent, entries, warnings, row, arrived) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (s, i, k.digest, k.parent, json.dumps(k.entries), json.dumps(k.warnings), json.dumps(k.row), k.row.get("arrived"))
                        for (s, i), k in fresh.items()
                    ],
                )
                meta = {"format": FORMAT, "generation": stamp.generation, "journal_at": str(stamp.journal_at), "journal_last": stamp.journal_last}
                db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
