"""The row index: inbox rows remembered across commands, stored, never a source.

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
- the bundle folder: the tree digest of gage.home.cache.checks (mode, size, mtime, ctime, inode
  and device of the folder, manifest, signature and every listed entry; ctime cannot be set
  back), taken again with one lstat per entry, relative to the opened folder. A row is stored
  only if the stat values taken as it is stored give the digest the check cache stored for the
  check the row was computed from (so it inherits the cache's racy-window rule), and those
  values are what a listing compares (gage.home.cache.rowkept); only rows of bundles that checked
  out are kept.

A sqlite file beside the journal index (`cache/rows.sqlite`), for the same reason: a listing
reads every row in one query and one command asks about one. Deleting it changes nothing but
speed; a damaged, foreign or unwritable one is ignored (the rows are computed).

What is read back is checked where it is read (`rows`, `row`), so a row damaged in place costs
only its recomputation, never an error: each row is stored as one JSON text and its folder's
stat values, with a seal (a keyed hash under the home's cache key, gage.home.cache.sealkey, of
both, its state, id, parent and the trust generation it was computed under), and is used only if
the seal holds and the row has a computed row's shape (gage.home.cache.rowkept). The seal catches
a well-formed value written in place (a verdict, a subject) and a row planted by whoever cannot
read the key; the shape check what no seal can (a row planted by whoever can, sealed, never makes
a listing fail). The stamp is sealed too, and used only if each of its values has its type. The
same file keeps the trust files' parses (gage.home.cache.tomlparsed; its tables: gage.home.cache.rowfile).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable

from gage import __version__
from gage.format import sha256
from gage.format.record import Frozen, set_field
from gage.home import homefile
from gage.home.cache import rowfile, sealkey
from gage.home.cache.rowkept import ROW_TYPES as ROW_TYPES
from gage.home.cache.rowkept import SENDER_TYPES as SENDER_TYPES
from gage.home.cache.rowkept import Kept as Kept
from gage.home.cache.rowkept import digest_now as digest_now
from gage.home.cache.rowkept import (
    digest_of,
    kept_of,
    packed,
    row_holds,
    row_seal,
    stats_at,
)
from gage.home.cache.rowkept import fresh_at as fresh_at
from gage.home.journal.lines import (
    iter_lines,
    line_hash,
    open_journal,
    parse_line,
    rfind_newline,
)
from gage.home.layout import Home

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

FORMAT = f"gage-rowindex-3/{__version__}"  # 3: the sender carries its fingerprint, as every screen names a key
FILE_NAME = rowfile.FILE_NAME
_TRUST_FILES_LIMIT = 16 << 20


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


class RowIndex:
    """The file. Every failure to read or write it is a miss, never an error."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.path = home.cache / FILE_NAME
        self.db: sqlite3.Connection | None = None
        self.key = sealkey.home_key(home.root)  # what each row is sealed with (gage.home.cache.sealkey)
        with contextlib.suppress(sqlite3.Error, OSError):
            self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        return rowfile.open_rows(self.path)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def stamp(self) -> Stamp | None:
        if self.db is None:
            return None
        try:
            got = dict(self.db.execute("SELECT k, v FROM meta").fetchall())
            generation, at, last = got.get("generation"), int(got.get("journal_at")), got.get("journal_last")  # type: ignore[arg-type]
        except (sqlite3.Error, TypeError, ValueError):
            return None
        if got.get("format") != FORMAT or type(generation) is not str or type(last) is not str or at < 0:
            return None
        if not sealkey.holds_hex(self.key, got.get("seal"), _stamp_text(generation, at, last)):
            return None  # damaged, or planted by whoever cannot read the home's cache key
        return Stamp(generation, at, last)

    def rows(self, states: Iterable[str], generation: str | None) -> dict[tuple[str, str], Kept]:
        """Every kept row of `states` computed under the trust `generation` that reads back whole
        (its seal holds and `kept_of` takes it); a damaged or planted one is left out. With no
        generation, the rows of any this home sealed: for their checks alone (`checks_of`), which
        depend on the bundle's tree, not on who is trusted."""
        if self.db is None:
            return {}
        states = tuple(states)
        try:
            marks = ",".join("?" for _ in states)
            where = f"state IN ({marks})" if generation is None else f"generation = ? AND state IN ({marks})"
            got = self.db.execute(
                f"SELECT state, id, parent, stats, data, seal, generation FROM rows WHERE {where}",  # noqa: S608
                (*states,) if generation is None else (generation, *states),
            ).fetchall()
        except sqlite3.Error:
            return {}
        key = self.key
        sealed = [
            (s, i, p, st, d)
            for s, i, p, st, d, seal, g in got
            if type(d) is str
            and type(s) is str
            and type(i) is str
            and type(g) is str
            and (p is None or type(p) is str)
            and type(st) is bytes
            and row_holds(key, seal, g, s, i, p, d, st)
        ]
        try:
            # One parse of every row (a row at a time was a third of a warm listing); a row the
            # seal vouches for is JSON, so this fails only for a row planted with its seal.
            parsed = json.loads("[" + ",".join(d for *_, d in sealed) + "]")
            if len(parsed) != len(sealed):
                raise ValueError("a row is more than one value")
        except (ValueError, RecursionError):
            parsed = [_loads_or_none(d) for *_, d in sealed]
        out = {}
        for (state, bid, parent, stats, _d), obj in zip(sealed, parsed, strict=True):
            k = kept_of(state, bid, parent, stats, obj)
            if k is not None:
                out[(state, bid)] = k
        return out

    def arrivals(self, state: str) -> dict[str, str | None]:
        """Each kept row's arrival time (the journal's first `received`, or None) in `state`, by
        id: what the interface orders its first screenful by, without a journal lookup each.
        Only that column is read, not 10,000 rows' JSON, with its own seal (an arrival planted
        without the home's cache key is left out: the caller asks the journal for it)."""
        if self.db is None:
            return {}
        try:
            got = self.db.execute("SELECT id, arrived, arrived_seal FROM rows WHERE state = ?", (state,)).fetchall()
        except sqlite3.Error:
            return {}
        key = self.key
        return {
            i: a
            for i, a, seal in got
            if type(i) is str and (a is None or type(a) is str) and sealkey.holds(key, seal, _arrival_text(state, i, a))
        }

    def row(self, state: str, bundle_id: str) -> Kept | None:
        """One kept row, by one keyed lookup (flat in the inbox's size)."""
        if self.db is None:
            return None
        try:
            got = self.db.execute("SELECT parent, stats, data, generation, seal FROM rows WHERE state = ? AND id = ?", (state, bundle_id)).fetchone()
        except sqlite3.Error:
            return None
        if got is None:
            return None
        # Under any generation this home sealed: only the row's check is used (`indexed_check`),
        # which depends on the bundle's tree alone, not on who is trusted.
        parent, stats, data, generation, seal = got
        if (
            type(data) is not str
            or type(generation) is not str
            or type(stats) is not bytes
            or (parent is not None and type(parent) is not str)
            or not row_holds(self.key, seal, generation, state, bundle_id, parent, data, stats)
        ):
            return None
        return kept_of(state, bundle_id, parent, stats, _loads_or_none(data))

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
                stored = []
                for (s, i), k in fresh.items():
                    # The stat values the check cache's digest was taken over: as its proof took them
                    # (`k.stats`, a check made by this listing), or taken now and kept only if they
                    # are still those. Either way a row inherits the cache's racy-window rule.
                    if k.stats is not None:
                        blob: bytes | None = k.stats
                    else:
                        stats = stats_at(None, os.fspath(self.home.state_dir(s) / i), k.entries)  # type: ignore[arg-type]
                        blob = packed(stats) if stats is not None and digest_of(k.entries, stats) == k.digest else None
                    if blob is None:
                        continue
                    data = json.dumps([k.digest, k.parent, k.entries, k.warnings, k.row], ensure_ascii=True, separators=(",", ":"))
                    gen = stamp.generation
                    arrived = k.row.get("arrived")
                    arrived_seal = sealkey.seal(self.key, _arrival_text(s, i, arrived))
                    stored.append((s, i, arrived, k.parent, blob, data, gen, row_seal(self.key, gen, s, i, k.parent, data, blob), arrived_seal))
                db.executemany(
                    "INSERT OR REPLACE INTO rows (state, id, arrived, parent, stats, data, generation, seal, arrived_seal)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    stored,
                )
                meta = {
                    "format": FORMAT,
                    "generation": stamp.generation,
                    "journal_at": str(stamp.journal_at),
                    "journal_last": stamp.journal_last,
                    "seal": sealkey.seal_hex(self.key, _stamp_text(stamp.generation, stamp.journal_at, stamp.journal_last)),
                }
                db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise


def _arrival_text(state: str, bundle_id: str, arrived: Any) -> bytes:
    """What a row's arrival seal is taken over: a first arrival never changes once written, so no generation."""
    return f"arrived\0{state}\0{bundle_id}\0{arrived!r}".encode("utf-8", "surrogatepass")


def _stamp_text(generation: str, at: int, last: str) -> bytes:
    return f"{FORMAT}\0{generation}\0{at}\0{last}".encode("utf-8", "surrogatepass")


def _loads_or_none(text: Any) -> Any:
    try:
        return json.loads(text) if type(text) is str else None
    except (ValueError, RecursionError):
        return None
