"""The journal index: per-bundle facts derived from the journal, so a question about one bundle
(its decision, where it is, has it been seen, which thread, how much budget is used) costs the
same at 100,000 entries as at 100.

Derived, never a source. The journal is the one source of truth; the index is a cache in the
home's `cache/` folder that says which bytes of the journal it covers: the journal's inode,
the offset it has read up to (a line boundary), where its last line starts and that line's
SHA-256, and the file's ctime when the index reached its end. Before every use it is checked
against the journal (spec/journal.md, "The index"):

- same inode, same size, same ctime, and the last covered line still hashes to what was
  indexed: current;
- grown: only the new lines are read, and the first of them must chain (`prev`) from the
  last indexed line; otherwise it is rebuilt;
- shorter, replaced, rewritten in place, or its last covered line changed: rebuilt from scratch.

A missing, unreadable, corrupt or foreign index is rebuilt; a cache folder that cannot be
written gives an index in memory for the process. Deleting it changes nothing but speed. The
facts themselves are defined once, in gage/home/journal/facts.py.

Why sqlite3 (standard library): a command asks about one or two bundles, and a keyed lookup
in a B-tree file touches a few pages, where loading a JSON document of every bundle's facts
costs time in proportion to the history on every command (about 0.3 s at 100,000 entries, more
than the whole `gage import`; measured in bench/README.md). WAL mode with synchronous=NORMAL
keeps it consistent through a crash without an fsync per append (a crash can lose the last
updates, which the next use reads again from the journal), and readers never block the writer.
Concurrency: every update is one transaction taken with BEGIN IMMEDIATE, which re-checks the
index against the journal after it has the write lock, so two processes catching up at once
apply each line once.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from gage.home.cache import sealkey
from gage.home.cache.journalindexdb import (
    COLUMNS,
    PLACED,
    SCHEMA,
    VERSION,
    Damaged,
    batches,
    decode,
    encode,
    immediate,
    key,
    reset,
    sealed,
    unkey,
    unsealed,
)
from gage.home.cache.sqlitefile import open_cache_db
from gage.home.journal.facts import BundleFacts, Fold, JournalFacts, row_facts
from gage.home.journal.lines import iter_lines, line_hash, open_journal, parse_line
from gage.home.journal.views import Decisions, IndexedFacts

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from gage.home.journal.facts import Row

    T = TypeVar("T")

BUSY_SECONDS = 60.0


class _Stale(Exception):
    """The index does not continue the journal: it must be rebuilt."""


class JournalIndex:
    """The index of one journal. Thread-safe within a process; each process has its own connection."""

    def __init__(self, journal_path: Path, path: Path | None) -> None:
        # The journal's path only, not the journal: no reference cycle, so a dropped Home closes its connection.
        self.journal_path = journal_path
        self.path = path
        self._mutex = _thread.RLock()  # what threading.RLock() makes, without importing threading (start-up)
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._memory = path is None
        self._key_bytes: bytes | None = None

    @property
    def _key(self) -> bytes:
        """What each row is sealed with: the home's cache key (gage.home.cache.sealkey), read when first needed."""
        if self._key_bytes is None:
            self._key_bytes = sealkey.process_key() if self.path is None else sealkey.home_key(self.path.parent.parent)
        return self._key_bytes

    # --- the connection ----------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self._db is not None and self._pid == os.getpid():
            return self._db
        self._db = None  # a connection inherited across fork is never used
        db: sqlite3.Connection | None = None
        if not self._memory and self.path is not None:
            try:
                db = self._open_file(self.path)
            except (sqlite3.Error, OSError):
                self._memory = True
        if db is None:
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            db.executescript(SCHEMA)
        self._db, self._pid = db, os.getpid()
        # A connection is freed only by the cycle collector; close it as soon as its index goes,
        # so a process that opens many homes (a reader loop, the interface) holds no stale descriptors.
        weakref.finalize(self, db.close)
        return db

    @staticmethod
    def _open_file(path: Path) -> sqlite3.Connection:
        """Never through a link, FIFO or device at any of its names (gage.home.cache.sqlitefile says why);
        OSError means the index runs in memory."""

        def prepare(db: sqlite3.Connection) -> None:
            if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:
                reset(db)

        return open_cache_db(path, "the journal index", prepare=prepare, timeout=BUSY_SECONDS, check_same_thread=False)

    def _fall_back(self) -> None:
        """The file index failed mid-use (a full disk, a damaged file): go on in memory."""
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db, self._memory = None, True

    # --- keeping it current ----------------------------------------------------------

    def sync(self, *, rebuild: bool = True, before: tuple[int, int] | None = None) -> bool:
        """Bring the index up to the journal's last whole line; True when it is current.

        With `rebuild=False` (an append, under the home lock) only a cheap catch-up is done: an
        index that would need rebuilding is marked stale for the next reader. `before`: the
        journal's size and ctime before that append wrote, so an edit in place made since the
        index last saw the file is caught even though the file has grown since."""
        with self._mutex:
            try:
                return self._sync(rebuild, before)
            except sqlite3.Error:
                if self._memory:
                    raise
                self._fall_back()
                return self._sync(rebuild, before)

    def _sync(self, rebuild: bool, before: tuple[int, int] | None) -> bool:
        db = self._conn()
        fd = open_journal(self.journal_path)
        try:
            if before is None and self._current(db, fd):
                return True
            with immediate(db):
                done = self._update(db, fd, rebuild, before)
                if not done:
                    db.execute("DELETE FROM state")  # stale: whoever reads next rebuilds it
            return done
        finally:
            if fd is not None:
                os.close(fd)

    @staticmethod
    def _stat(fd: int | None) -> tuple[int, int, int, int]:
        if fd is None:
            return 0, 0, 0, 0
        st = os.fstat(fd)
        return st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns

    def _check(self, db: sqlite3.Connection, fd: int | None) -> tuple[Any, ...]:
        """The index's state row if it continues the journal (raises _Stale if not)."""
        found = db.execute("SELECT version, dev, ino, covered, last_start, last_hash, ctime_ns, sent_count, seal FROM state").fetchone()
        try:
            state: tuple[Any, ...] = tuple(unsealed(self._key, found)) if found is not None else ()
        except Damaged:
            raise _Stale from None
        if not state or state[0] != VERSION:
            raise _Stale
        _v, dev, ino, covered, last_start, last_hash, _m, _s = state
        sdev, sino, size, _mtime = self._stat(fd)
        if covered == 0:
            return state
        if fd is None or (dev, ino) != (sdev, sino) or size < covered:
            raise _Stale
        line = os.pread(fd, covered - last_start, last_start)
        if not line.endswith(b"\n") or line_hash(line[:-1]) != last_hash:
            raise _Stale
        if last_start > 0 and os.pread(fd, 1, last_start - 1) != b"\n":
            raise _Stale
        return state

    def _current(self, db: sqlite3.Connection, fd: int | None) -> bool:
        try:
            state = self._check(db, fd)
        except _Stale:
            return False
        _sdev, _sino, size, ctime = self._stat(fd)
        covered, ctime_ns = state[3], state[6]
        return size == covered and (ctime_ns is None or ctime_ns == ctime or fd is None)

    def _update(self, db: sqlite3.Connection, fd: int | None, rebuild: bool, before: tuple[int, int] | None) -> bool:
        """Under the write lock: catch up, or rebuild. False when a rebuild was needed and not allowed."""
        try:
            state = self._check(db, fd)
            _sdev, _sino, size, ctime = self._stat(fd)
            covered, ctime_ns = state[3], state[6]
            if before is not None and before[0] == covered and ctime_ns is not None and before[1] != ctime_ns:
                raise _Stale  # written in place between the index's last look and this append
            if size == covered:
                if ctime_ns is None or ctime_ns == ctime or fd is None:
                    return True  # another process brought it up to date while we waited
                raise _Stale  # the same size, written since: changed in place
            assert fd is not None
            self._grow(db, fd, state)
            return True
        except (_Stale, Damaged):  # Damaged: a row the catch-up read does not hold its seal
            if not rebuild:
                return False
            self._rebuild(db, fd)
            return True

    def _grow(self, db: sqlite3.Connection, fd: int, state: tuple[Any, ...]) -> None:
        _v, dev, ino, covered, last_start, last_hash, _m, sent_count = state
        _sdev, _sino, size, ctime = self._stat(fd)
        lines = list(iter_lines(fd, covered, size))
        if not lines:
            return  # only a torn tail follows: the next append repairs it
        first = parse_line(lines[0][1])
        if covered > 0 and (first is None or first.get("prev") != last_hash):
            raise _Stale  # the new lines do not continue what was indexed
        entries = [e for e in (parse_line(line) for _o, line in lines) if e is not None]
        ids = sorted({b for e in entries if isinstance(b := e.get("bundle"), str)})
        threads = sorted({t for e in entries if isinstance(t := e.get("thread"), str)})
        rows = self._rows(db, ids)
        have = {t: n for t in threads if (n := self._thread(db, t))}
        fold = Fold(rows, have).add_all(entries)
        self._write(db, fold, replace=True)
        end_start, end_line = lines[-1]
        self._set_state(db, fd, end_start + len(end_line) + 1, end_start, line_hash(end_line), sent_count + fold.new_sent, size, ctime)

    def _rebuild(self, db: sqlite3.Connection, fd: int | None) -> None:
        for table in ("state", "bundle", "thread", "torn"):
            db.execute(f"DELETE FROM {table}")  # noqa: S608 (fixed names)
        fold = Fold()
        covered = last_start = 0
        last_hash = None
        _sdev, _sino, size, ctime = self._stat(fd)
        if fd is not None:
            for start, line in iter_lines(fd, 0, size):
                e = parse_line(line)
                if e is not None:
                    fold.add(e)
                last_start, last_hash, covered = start, line, start + len(line) + 1
        self._write(db, fold, replace=False)
        digest = line_hash(last_hash) if last_hash is not None else None
        self._set_state(db, fd, covered, last_start, digest, fold.new_sent, size, ctime)

    def _set_state(
        self, db: sqlite3.Connection, fd: int | None, covered: int, last_start: int, last_hash: str | None, sent: int, size: int, ctime: int
    ) -> None:
        dev, ino, _size, _mtime = self._stat(fd)
        db.execute(
            "INSERT OR REPLACE INTO state VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            sealed(self._key, VERSION, dev, ino, covered, last_start, last_hash, ctime if covered == size else None, sent),
        )

    def _write(self, db: sqlite3.Connection, fold: Fold, *, replace: bool) -> None:
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        k = self._key
        db.executemany(f"{verb} INTO bundle VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", sorted(sealed(k, key(b), *encode(r)) for b, r in fold.rows.items()))
        db.executemany(f"{verb} INTO thread VALUES (?, ?, ?)", (sealed(k, key(t), n) for t, n in fold.threads.items()))
        db.executemany("INSERT OR IGNORE INTO torn VALUES (?, ?)", (sealed(k, key(d)) for d in fold.torn))

    def _rows(self, db: sqlite3.Connection, ids: list[str]) -> dict[str, Row]:
        out: dict[str, Row] = {}
        if len(ids) == 1:  # the common question: one bundle
            found = db.execute(f"SELECT id, {COLUMNS}, seal FROM bundle WHERE id = ?", (key(ids[0]),)).fetchone()  # noqa: S608
            return {ids[0]: decode(unsealed(self._key, found)[1:])} if found is not None else out
        for chunk in batches(ids):
            marks = ",".join("?" * len(chunk))
            for got in db.execute(f"SELECT id, {COLUMNS}, seal FROM bundle WHERE id IN ({marks})", [key(b) for b in chunk]):  # noqa: S608
                b, *values = unsealed(self._key, got)
                out[unkey(b)] = decode(values)
        return out

    def _thread(self, db: sqlite3.Connection, thread: str) -> int:
        found = db.execute("SELECT id, unattended, seal FROM thread WHERE id = ?", (key(thread),)).fetchone()
        return int(unsealed(self._key, found)[1]) if found else 0

    # --- questions -------------------------------------------------------------------

    def _run(self, ask: Callable[[sqlite3.Connection], T], sync: bool) -> T:
        """Answer `ask` from the index (brought up to date first when `sync`). A file index that
        fails mid-use (a full disk, damage) gives way to one in memory, rebuilt before it answers."""
        with self._mutex:
            try:
                if sync or self._db is None or self._pid != os.getpid():
                    self._sync(True, None)  # a new connection in memory starts empty
                return ask(self._conn())
            except Damaged:
                # A row that does not hold its seal: the index is rebuilt from the journal, once.
                self._rebuild_now()
                return ask(self._conn())
            except sqlite3.Error:
                if self._memory:
                    raise
                self._fall_back()
                self._sync(True, None)
                return ask(self._conn())

    def _rebuild_now(self) -> None:
        db = self._conn()
        fd = open_journal(self.journal_path)
        try:
            with immediate(db):
                self._rebuild(db, fd)
        finally:
            if fd is not None:
                os.close(fd)

    def bundles(self, ids: Iterable[str], *, sync: bool = True) -> dict[str, BundleFacts]:
        """The facts for each of `ids` the journal names (ids it never names are absent)."""
        wanted = sorted(set(ids))
        return {b: row_facts(r) for b, r in self._run(lambda db: self._rows(db, wanted), sync).items()}

    def bundle(self, bundle_id: str, *, sync: bool = True) -> BundleFacts:
        return self.bundles([bundle_id], sync=sync).get(bundle_id, BundleFacts())

    def all_bundles(self, *, sync: bool = True) -> Iterator[tuple[str, BundleFacts]]:
        """Every bundle the journal names: a read of the whole index, for tools and tests."""
        rows = self._run(lambda db: [unsealed(self._key, r) for r in db.execute(f"SELECT id, {COLUMNS}, seal FROM bundle ORDER BY id")], sync)  # noqa: S608
        return ((unkey(b), row_facts(decode(values))) for b, *values in rows)

    def arrival_order(self, ids: Iterable[str], *, sync: bool = True) -> dict[str, str]:
        """Each of `ids`' first arrival time, for the interface's display order: each row's seal
        checked (a planted or damaged one rebuilds the index, as any read does), but only the one
        fact decoded and no BundleFacts built (a third of the cost of `bundles` at 10,000)."""
        wanted = sorted(set(ids))
        at = COLUMNS.split(", ").index("first_received") + 1  # after the id

        def ask(db: sqlite3.Connection) -> dict[str, str]:
            out: dict[str, str] = {}
            for chunk in batches(wanted):
                marks = ",".join("?" * len(chunk))
                for got in db.execute(f"SELECT id, {COLUMNS}, seal FROM bundle WHERE id IN ({marks})", [key(b) for b in chunk]):  # noqa: S608
                    values = unsealed(self._key, got)
                    when = values[at]
                    if type(when) is bytes:
                        when = decode([when])[0]
                    if type(when) is str:
                        out[unkey(values[0])] = when
            return out

        return self._run(ask, sync)

    def placed(self, *, sync: bool = True) -> dict[str, BundleFacts]:
        """Decided bundles the journal last put somewhere other than `missing`: the only decided
        bundles `reconcile` must look for on disk besides those it finds there."""
        rows = self._run(lambda db: [unsealed(self._key, r) for r in db.execute(f"SELECT id, {COLUMNS}, seal FROM bundle WHERE {PLACED}")], sync)  # noqa: S608
        return {unkey(b): row_facts(decode(values)) for b, *values in rows}

    def facts(self) -> JournalFacts:
        """What the journal says about bundles, answered from this index (brought up to date first)."""
        self.sync()
        return IndexedFacts(self)

    def decisions(self, *, sync: bool = True) -> Decisions:
        if sync:
            self.sync()
        return Decisions(self)

    def unattended(self, thread: str, *, sync: bool = True) -> int:
        return self._run(lambda db: self._thread(db, thread), sync)

    def sent_count(self, *, sync: bool = True) -> int:
        found = self._run(lambda db: db.execute("SELECT version, dev, ino, covered, last_start, last_hash, ctime_ns, sent_count, seal FROM state").fetchone(), sync)
        return int(unsealed(self._key, found)[7]) if found else 0

    def recorded_torn(self, digests: Iterable[str], *, sync: bool = True) -> set[str]:
        """Which of `digests` (saved torn lines) a `repaired` entry records."""
        wanted = sorted(set(digests))

        def ask(db: sqlite3.Connection) -> set[str]:
            out: set[str] = set()
            for chunk in batches(wanted):
                marks = ",".join("?" * len(chunk))
                found = db.execute(f"SELECT digest, seal FROM torn WHERE digest IN ({marks})", [key(d) for d in chunk])  # noqa: S608
                out.update(unkey(unsealed(self._key, got)[0]) for got in found)
            return out

        return self._run(ask, sync)
