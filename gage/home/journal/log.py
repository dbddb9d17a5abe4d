"""The journal: what this home has seen, sent, accepted and paired, append-only and chained.

Each line is one JSON object carrying the SHA-256 of the line before it, so an edited or
deleted line breaks the chain. `journal.head` records the last entry written; a journal
shorter than its head has been truncated. A crash mid-write leaves a torn last line: the
next append saves it, byte for byte, in `journal.jsonl.torn/<sha256>.bin` before cutting it
off, then records it in a `repaired` entry, so it is neither silently dropped nor silently
kept, and `gage journal verify` reports it.

Long because the journal is one class whose append, chain, head and torn-line repair keep each
other's invariants under the lock: kept whole, its crash argument is read in one place.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from gage.bundle import atomic, critical
from gage.format import sha256, strictjson
from gage.format.errors import GageError, GageIOError, MalformedError
from gage.format.manifest import now_text
from gage.format.record import Record
from gage.home import homefile
from gage.home.journal.appending import NotJournaled, write_lines
from gage.home.journal.lines import (
    BLOCK,
    EVENTS,
    GENESIS,
    JOURNAL_LIMIT,
    LINE_LIMIT,
    TORN_INLINE_LIMIT,
    iter_lines,
    iter_lines_backwards,
    line_hash,
    open_journal,
    parse_line,
    rfind_newline,
    seq_of,
)

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import Event
    from gage.home.cache.journalindex import JournalIndex

# Re-exported: callers have always found these here.
__all__ = [
    "BLOCK",
    "EVENTS",
    "GENESIS",
    "JOURNAL_LIMIT",
    "LINE_LIMIT",
    "TORN_INLINE_LIMIT",
    "Journal",
    "NotJournaled",
    "iter_lines",
    "iter_lines_backwards",
    "line_hash",
    "parse_line",
]

class _End(Record):
    """What an append needs to know of the journal: its size, the last whole line (None when
    there is none) and where it starts, and the torn bytes after it."""

    __slots__ = ("size", "ctime_ns", "last", "last_start", "tail")
    size: int
    ctime_ns: int
    last: bytes | None
    last_start: int
    tail: bytes

    def __init__(
        self, size: int, ctime_ns: int, last: bytes | None, last_start: int, tail: bytes
    ) -> None:
        self.size = size
        self.ctime_ns = ctime_ns
        self.last = last
        self.last_start = last_start
        self.tail = tail


class Journal:
    def __init__(
        self,
        path: Path,
        lock: Callable[[], contextlib.AbstractContextManager[None]],
        *,
        index_path: Path | None = None,
    ) -> None:
        self.path = path
        self.head_path = path.with_name(path.name + ".head")
        self._lock = lock
        # Where the derived index lives (gage/home/cache/journalindex.py); None keeps it in memory only.
        self.index_path = index_path
        self._index: JournalIndex | None = None
        # Why the head was left behind by the last append whose lines were recorded (a full disk), or None.
        self.head_error: GageIOError | None = None

    @property
    def index(self) -> JournalIndex:
        """The derived per-bundle index: a cache of what `entries()` says, checked against the file."""
        if self._index is None:
            # Imported here: sqlite3 costs start-up time that most commands never need.
            from gage.home.cache.journalindex import JournalIndex

            self._index = JournalIndex(self.path, self.index_path)
        return self._index

    # --- reading ---------------------------------------------------------------------

    def _raw(self) -> bytes:
        # Non-blocking, regular files only: a folder, a FIFO or an unreadable file in the
        # journal's place is an error naming it, never a hang or a traceback.
        data = homefile.read_bytes(self.path, "journal", JOURNAL_LIMIT)
        return b"" if data is None else data

    @staticmethod
    def _split(data: bytes) -> tuple[list[bytes], bytes]:
        """Whole lines, and whatever follows the last newline (a torn write, or nothing)."""
        if not data:
            return [], b""
        *lines, tail = data.split(b"\n")
        return lines, tail

    def entries(self) -> list[dict[str, Any]]:
        """Every whole, parseable entry. Damage is for `verify` to report, not for readers to trip on."""
        return list(self.iter_entries())

    def iter_entries(self) -> Iterator[dict[str, Any]]:
        """`entries()`, streamed: whole lines only, read a block at a time, never the whole file at once."""
        fd = self.open_fd()
        if fd is None:
            return
        try:
            for _start, line in iter_lines(fd, 0, os.fstat(fd).st_size):
                obj = parse_line(line)
                if obj is not None:
                    yield obj
        finally:
            os.close(fd)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_entries()

    def check_readable(self) -> None:
        """Raise what any reader would (a folder, a FIFO, an unreadable or oversized file in the
        journal's place), without reading it: damage inside is `verify`'s to report."""
        fd = self.open_fd()
        if fd is not None:
            os.close(fd)

    def open_fd(self) -> int | None:
        """The journal opened for reading (None when it does not exist); see journallines.open_journal."""
        return open_journal(self.path)

    # --- writing ---------------------------------------------------------------------

    def _read_head(self) -> dict[str, Any] | None:
        try:
            head = json.loads(homefile.read_bytes(self.head_path, "journal head", LINE_LIMIT) or b"")
        except (OSError, ValueError, RecursionError, GageError):
            return None
        # Valid JSON that is not an object (`[]`, `7`) is as unreadable as garbage.
        return head if isinstance(head, dict) else None

    def _end(self) -> _End:
        """The journal's end, read from the tail only: the last whole line and any torn bytes after it."""
        fd = self.open_fd()
        if fd is None:
            return _End(size=0, ctime_ns=0, last=None, last_start=0, tail=b"")
        try:
            st = os.fstat(fd)
            size = st.st_size
            nl = rfind_newline(fd, size)
            tail = os.pread(fd, size - nl - 1, nl + 1) if size - nl - 1 else b""
            if nl < 0:
                return _End(size=size, ctime_ns=st.st_ctime_ns, last=None, last_start=0, tail=tail)
            start = rfind_newline(fd, nl) + 1
            return _End(size=size, ctime_ns=st.st_ctime_ns, last=os.pread(fd, nl - start, start), last_start=start, tail=tail)
        except OSError as exc:
            raise GageIOError(f"cannot read the journal: {exc.strerror}", path=str(self.path)) from exc
        finally:
            os.close(fd)

    def append(self, event: Event, **fields: Any) -> dict[str, Any]:
        """Append one entry under the home lock, reading only the journal's tail (cost flat in its length)."""
        return self.append_many([(event, fields)])[0]

    def append_many(self, items: Sequence[tuple[Event, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Append entries in one write and one fsync (a bulk decision, a batch of arrivals), as git
        writes a batch of objects before the one update that names them; each line chains from
        the one before it, so a crash never leaves a gap.

        The contract a caller that acts before it journals relies on:
        - Returned: every line is written and fsynced, so recorded. What fails after that (the
          head's rewrite on a full disk, the index) is tolerated, never raised: the head's
          `pending` marker, written before the lines, lets the next append and `verify` make
          sense of a head left behind (`head_error` says why it was).
        - NotJournaled: none of these lines is in the journal (a failure before they were durable
          cuts the file back to where it was).
        - MalformedError or ValueError: an entry that cannot be written; nothing was written.
        - Anything else (a KeyboardInterrupt raised where signals cannot be held off, the cut-back
          of a failed write failing too): take `mark()` before and read `since(mark)` after to
          know which lines the journal holds; never assume none.
        SIGINT and SIGTERM are held off (main thread) from the head's announcement to the index."""
        for event, fields in items:
            if event not in EVENTS:
                raise ValueError(f"unknown journal event {event!r}")
            if isinstance(fields.get("transport"), dict):
                # Imported here: a carrier's entry only, not every command's start-up.
                from gage.format import relayurl

                # A carrier's URL never takes a relay's user or password into the journal (spec/relay.md section 8).
                fields["transport"] = relayurl.clean_transport(fields["transport"])
        if not items:
            return []
        with self._lock(), critical.deferred():
            try:
                end = self._end()
                before = (end.size, end.ctime_ns)
                if end.tail:
                    # A torn last line from a crash. Its bytes are saved durably before anything
                    # is cut, so a crash during the repair cannot lose them either.
                    self._save_torn(end.tail)
                    self._truncate(end.size - len(end.tail))
                    end = self._end()
                # Record every saved torn line no entry records yet (this one, or one whose
                # repair was itself interrupted).
                for digest in self._unrecorded_torn():
                    torn = (self.torn_dir / f"{digest}.bin").read_bytes()
                    self._write_entry(end, "repaired", self._repair_fields(digest, torn))
                    end = self._end()
            except (OSError, GageIOError) as exc:
                raise NotJournaled(f"cannot append to journal: {exc}; nothing was written", path=str(self.path)) from exc
            entries = self._write_entries(end, items)
            # Bring the index up to this line now, while the lock is held: cheap (it reads
            # only the new line), and it stamps the index with the journal as gage left it,
            # so a later edit of the file in place is seen. Never needed for correctness.
            with contextlib.suppress(Exception):
                critical.point("journal-index")
                self.index.sync(rebuild=False, before=before)
            return entries

    def mark(self) -> int:
        """Where the journal's whole lines end now: give it to `since` after an append that raised."""
        end = self._end()
        return end.size - len(end.tail)

    def since(self, mark: int) -> list[dict[str, Any]]:
        """The whole entries after `mark` (from `mark()`): what an append that raised did write."""
        fd = self.open_fd()
        if fd is None:
            return []
        try:
            return [obj for _start, line in iter_lines(fd, mark, os.fstat(fd).st_size) if (obj := parse_line(line)) is not None]
        finally:
            os.close(fd)

    @property
    def torn_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".torn")

    def _save_torn(self, tail: bytes) -> str:
        digest = sha256.hexdigest(tail)
        try:
            self.torn_dir.mkdir(mode=0o700, exist_ok=True)
            target = self.torn_dir / f"{digest}.bin"
            if not target.exists():
                atomic.write_bytes(target, tail, 0o600)
        except OSError as exc:
            raise GageIOError(
                f"cannot keep the journal's torn last line before repairing it: {exc.strerror or exc}"
                " (nothing was written)",
                path=str(self.torn_dir),
            ) from exc
        return digest

    def _saved_torn(self) -> list[str]:
        try:
            return sorted(name[:-4] for name in os.listdir(self.torn_dir) if name.endswith(".bin"))
        except OSError:
            return []

    def _unrecorded_torn(self, lines: list[bytes] | None = None) -> list[str]:
        """Saved torn lines no `repaired` entry records. Costs one `listdir` when nothing was
        ever torn; otherwise the index answers (or, given `lines`, a scan of them)."""
        saved = self._saved_torn()
        if not saved:
            return []
        if lines is None:
            recorded = self.index.recorded_torn(saved)
        else:
            recorded = set()
            for line in lines:
                obj = parse_line(line)
                if obj is not None and obj.get("event") == "repaired" and isinstance(digest := obj.get("torn_sha256"), str):
                    recorded.add(digest)
        return [d for d in saved if d not in recorded]

    def _repair_fields(self, digest: str, torn: bytes) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "torn_sha256": digest,
            "torn_length": len(torn),
            "torn_file": f"{self.torn_dir.name}/{digest}.bin",
            "note": "a torn last line (from an interrupted write) was cut from the journal and kept, byte for byte",
        }
        if len(torn) <= TORN_INLINE_LIMIT:
            import base64  # a repair only, not every command's start-up

            fields["torn_bytes"] = base64.b64encode(torn).decode("ascii")
        return fields

    def _truncate(self, size: int) -> None:
        with open(self.path, "r+b") as f:
            f.truncate(size)
            f.flush()
            os.fsync(f.fileno())

    def _count_lines(self) -> int:
        """Whole lines in the file: only for a last line with no readable `seq` (damage)."""
        fd = self.open_fd()
        if fd is None:
            return 0
        try:
            return sum(1 for _ in iter_lines(fd, 0, os.fstat(fd).st_size))
        finally:
            os.close(fd)

    def _write_entry(self, end: _End, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        return self._write_entries(end, [(event, fields)])[0]

    def _write_entries(self, end: _End, items: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        last = end.last
        if last is not None:
            prev = line_hash(last)
            last_seq = seq_of(last)
            seq = last_seq + 1 if last_seq is not None else self._count_lines() + 1
        else:
            prev, seq = GENESIS, 1
        # If the journal no longer ends with what the head says gage last wrote (entries cut
        # off the end, or the last entry edited), chain on from the head rather than from the
        # file: otherwise this append would rewrite the head and erase the only evidence.
        # The damage then shows for good as a sequence gap or a broken chain at this line.
        head = self._read_head()
        hseq = head.get("seq") if isinstance(head, dict) else None
        hhash = head.get("hash") if isinstance(head, dict) else None
        if isinstance(hseq, int) and isinstance(hhash, str) and hseq >= seq - 1:
            if hseq > seq - 1 or (last is not None and hhash != prev):
                seq, prev = hseq + 1, hhash
        elif last is not None and isinstance(hseq, int) and hseq < seq - 1 and self._chains_from(end, hseq, hhash):
            # An earlier append was killed between its line and its head: the head catches up
            # (to the line this append chains from) before the new line, so a second kill in
            # a row leaves the head one behind (an interrupted write), never two (which
            # `verify` would have to report as lines appended outside gage).
            self._head_before(seq - 1, prev)
        entries, lines, when = [], [], now_text()
        for event, fields in items:
            entry = {"seq": seq, "time": when, "event": event, "prev": prev, **fields}
            line = strictjson.dumps(entry)
            if len(line) > LINE_LIMIT:
                raise MalformedError(f"journal entry would be {len(line)} bytes, over {LINE_LIMIT}")
            entries.append(entry)
            lines.append(line)
            seq, prev = seq + 1, line_hash(line)
        if len(lines) > 1:
            # A batch is one write: a kill between it and the head's rewrite would leave the head
            # several entries behind, which `verify` must otherwise report as lines appended
            # outside gage. So the head says first how many may follow it.
            self._head_before(entries[0]["seq"] - 1, entries[0]["prev"], pending=len(lines))
        write_lines(self.path, b"".join(line + b"\n" for line in lines))
        # Recorded. A head left behind (a full disk now) is what `pending`, or one entry behind,
        # already covers: the next append catches it up, `verify` notes it.
        self.head_error = None
        try:
            critical.point("journal-head")
            self._write_head(seq - 1, prev)
        except (OSError, GageIOError) as exc:
            self.head_error = exc if isinstance(exc, GageIOError) else GageIOError(str(exc), path=str(self.head_path))
        return entries

    def _head_before(self, seq: int, digest: str, *, pending: int | None = None) -> None:
        """A head written before the new lines: its failure means none of them was written."""
        critical.point("journal-head-before")
        try:
            self._write_head(seq, digest) if pending is None else self._write_head(seq, digest, pending=pending)
        except GageIOError as exc:
            raise NotJournaled(f"{exc.message}; nothing was written", path=exc.path) from exc

    def _write_head(self, seq: int, digest: str, *, pending: int | None = None) -> None:
        head: dict[str, Any] = {"seq": seq, "hash": digest}
        if pending is not None:
            head["pending"] = pending  # a batch of this many entries is being written after it
        atomic.write_bytes(self.head_path, strictjson.dumps(head) + b"\n", 0o600)

    def _chains_from(self, end: _End, hseq: int, hhash: object) -> bool:
        """The head names a line that is in the file, and every later line chains from it.

        Read backwards from the end, one line at a time, only as far as the head's line: the
        cost is the number of lines written since the head, not the journal's length."""
        fd = self.open_fd()
        if fd is None:
            return False
        try:
            later: bytes | None = None  # the line after the one being looked at
            for _start, line in iter_lines_backwards(fd, end.last_start + len(end.last or b"") + 1):
                if later is not None:
                    obj = parse_line(later)
                    if obj is None or obj.get("prev") != line_hash(line):
                        return False
                if seq_of(line) == hseq:
                    return line_hash(line) == hhash
                later = line
            return False
        finally:
            os.close(fd)
