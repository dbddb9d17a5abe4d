"""The journal: what this home has seen, sent, accepted and paired, append-only and chained.

Each line is one JSON object carrying the SHA-256 of the line before it, so an edited or
deleted line breaks the chain. `journal.head` records the last entry written; a journal
shorter than its head has been truncated. A crash mid-write leaves a torn last line: the
next append saves it, byte for byte, in `journal.jsonl.torn/<sha256>.bin` before cutting it
off, then records it in a `repaired` entry, so it is neither silently dropped nor silently
kept, and `gage journal verify` reports it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import atomic, homefile, strictjson
from .errors import GageError, GageIOError, MalformedError
from .manifest import now_text

GENESIS = "0" * 64
LINE_LIMIT = 1 << 16
# The whole journal is read into memory; a file larger than this is not a journal gage wrote.
JOURNAL_LIMIT = 1 << 34
# Torn lines up to this size are also copied into their `repaired` entry; a larger one
# (a gage line is at most LINE_LIMIT) would not fit in a line, and lives only in its file.
TORN_INLINE_LIMIT = 16 * 1024
EVENTS = (
    "init",
    "sent",
    "imported",
    "received",
    "accepted",
    "rejected",
    "paired",
    "unpaired",
    "reconciled",
    "repaired",
    # Key statements (spec/keys.md): this home retired its key, or countersigned as a
    # replacement; a statement from another key was applied, or refused and why.
    "key-retired",
    "key-countersigned",
    "key-statement-applied",
    "key-statement-refused",
)


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


@dataclass
class JournalReport:
    ok: bool
    entries: int
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "problems": self.problems, "notes": self.notes}


class Journal:
    def __init__(self, path: Path, lock: Callable[[], contextlib.AbstractContextManager[None]]) -> None:
        self.path = path
        self.head_path = path.with_name(path.name + ".head")
        self._lock = lock

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
        lines, _tail = self._split(self._raw())
        out = []
        for line in lines:
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: a line nested thousands deep
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.entries())

    # --- writing ---------------------------------------------------------------------

    def _read_head(self) -> dict[str, Any] | None:
        try:
            head = json.loads(homefile.read_bytes(self.head_path, "journal head", LINE_LIMIT) or b"")
        except (OSError, ValueError, RecursionError, GageError):
            return None
        # Valid JSON that is not an object (`[]`, `7`) is as unreadable as garbage.
        return head if isinstance(head, dict) else None

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        if event not in EVENTS:
            raise ValueError(f"unknown journal event {event!r}")
        with self._lock():
            data = self._raw()
            lines, tail = self._split(data)
            if tail:
                # A torn last line from a crash. Its bytes are saved durably before anything
                # is cut, so a crash during the repair cannot lose them either.
                digest = self._save_torn(tail)
                self._truncate(len(data) - len(tail))
                lines, _ = self._split(self._raw())
            # Record every saved torn line no entry records yet (this one, or one whose
            # repair was itself interrupted).
            for digest in self._unrecorded_torn(lines):
                torn = (self.torn_dir / f"{digest}.bin").read_bytes()
                self._write_entry(lines, "repaired", self._repair_fields(digest, torn))
                lines, _ = self._split(self._raw())
            return self._write_entry(lines, event, fields)

    def _check_torn_file(self, entry: dict[str, Any]) -> str | None:
        digest = entry.get("torn_sha256")
        if digest is None:
            return None  # an entry from before torn lines were also kept in files
        try:
            data = (self.torn_dir / f"{digest}.bin").read_bytes()
        except OSError:
            return f"the torn line it records ({self.torn_dir.name}/{digest}.bin) is missing"
        if hashlib.sha256(data).hexdigest() != digest:
            return f"the torn line it records ({self.torn_dir.name}/{digest}.bin) has changed"
        return None

    @property
    def torn_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".torn")

    def _save_torn(self, tail: bytes) -> str:
        digest = hashlib.sha256(tail).hexdigest()
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

    def _unrecorded_torn(self, lines: list[bytes]) -> list[str]:
        try:
            saved = sorted(p.stem for p in self.torn_dir.glob("*.bin"))
        except OSError:
            return []
        if not saved:
            return []
        recorded = set()
        for line in lines:
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: a line nested thousands deep
                continue
            if isinstance(obj, dict) and obj.get("event") == "repaired":
                recorded.add(obj.get("torn_sha256"))
        return [d for d in saved if d not in recorded]

    def _repair_fields(self, digest: str, torn: bytes) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "torn_sha256": digest,
            "torn_length": len(torn),
            "torn_file": f"{self.torn_dir.name}/{digest}.bin",
            "note": "a torn last line (from an interrupted write) was cut from the journal and kept, byte for byte",
        }
        if len(torn) <= TORN_INLINE_LIMIT:
            fields["torn_bytes"] = base64.b64encode(torn).decode("ascii")
        return fields

    def _truncate(self, size: int) -> None:
        with open(self.path, "r+b") as f:
            f.truncate(size)
            f.flush()
            os.fsync(f.fileno())

    def _write_entry(self, lines: list[bytes], event: str, fields: dict[str, Any]) -> dict[str, Any]:
        if lines:
            prev = line_hash(lines[-1])
            try:
                seq = int(json.loads(lines[-1])["seq"]) + 1
            except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # OverflowError: a seq of 1e400
                seq = len(lines) + 1
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
            if hseq > seq - 1 or (lines and hhash != prev):
                seq, prev = hseq + 1, hhash
        elif lines and isinstance(hseq, int) and hseq < seq - 1 and self._chains_from(lines, hseq, hhash):
            # An earlier append was killed between its line and its head: the head catches up
            # (to the line this append chains from) before the new line, so a second kill in
            # a row leaves the head one behind (an interrupted write), never two (which
            # `verify` would have to report as lines appended outside gage).
            self._write_head(seq - 1, prev)
        entry = {"seq": seq, "time": now_text(), "event": event, "prev": prev, **fields}
        line = strictjson.dumps(entry)
        if len(line) > LINE_LIMIT:
            raise MalformedError(f"journal entry would be {len(line)} bytes, over {LINE_LIMIT}")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o600)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise GageIOError("is not a regular file; nothing was written", path=str(self.path))
                _append_whole(fd, line + b"\n", self.path)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._write_head(seq, line_hash(line))
        except OSError as exc:
            raise GageIOError(f"cannot append to journal: {exc.strerror}", path=str(self.path)) from exc
        return entry

    def _write_head(self, seq: int, digest: str) -> None:
        atomic.write_bytes(self.head_path, strictjson.dumps({"seq": seq, "hash": digest}) + b"\n", 0o600)

    @staticmethod
    def _chains_from(lines: list[bytes], hseq: int, hhash: object) -> bool:
        """The head names a line that is in the file, and every later line chains from it."""
        idx = next((i for i, ln in enumerate(lines) if _seq_of(ln) == hseq), None)
        if idx is None or line_hash(lines[idx]) != hhash:
            return False
        for i in range(idx + 1, len(lines)):
            try:
                obj = json.loads(lines[i])
            except ValueError:
                return False
            if not isinstance(obj, dict) or obj.get("prev") != line_hash(lines[i - 1]):
                return False
        return True

    # --- checking --------------------------------------------------------------------

    def verify(self) -> JournalReport:
        data = self._raw()
        lines, tail = self._split(data)
        problems: list[str] = []
        notes: list[str] = []
        prev = GENESIS
        last_seq = 0
        for n, line in enumerate(lines, start=1):
            try:
                obj = strictjson.loads(line, limit=LINE_LIMIT, what=f"line {n}")
            except MalformedError as exc:
                problems.append(f"line {n}: not a valid entry ({exc.message})")
                prev = line_hash(line)
                continue
            if not isinstance(obj, dict):
                problems.append(f"line {n}: not an object")
                prev = line_hash(line)
                continue
            if obj.get("prev") != prev:
                problems.append(f"line {n}: chain broken: it does not follow the line before it (edited, inserted or deleted)")
            seq = obj.get("seq")
            if seq != last_seq + 1:
                problems.append(f"line {n}: sequence number {seq!r} where {last_seq + 1} was expected (a line is missing or repeated)")
            if isinstance(seq, int):
                last_seq = seq
            if obj.get("event") not in EVENTS:
                problems.append(f"line {n}: unknown event {obj.get('event')!r}")
            if obj.get("event") == "repaired":
                notes.append(
                    f"line {n}: a torn line of {obj.get('torn_length')} bytes from an interrupted write was recovered here"
                    f" (kept in {obj.get('torn_file', 'the entry')})"
                )
                problem = self._check_torn_file(obj)
                if problem:
                    problems.append(f"line {n}: {problem}")
            prev = line_hash(line)
        for digest in self._unrecorded_torn(lines):
            problems.append(
                f"{self.torn_dir.name}/{digest}.bin: a torn line was saved but no entry records it yet "
                "(an interrupted repair); the next write records it"
            )
        if tail:
            problems.append(
                f"line {len(lines) + 1}: torn ({len(tail)} bytes with no end of line): an interrupted write; "
                "the next write records it in a `repaired` entry"
            )
        head = self._read_head()
        if head is None:
            if lines:
                problems.append("journal.head is missing or unreadable: truncation cannot be ruled out")
        else:
            hseq, hhash = head.get("seq"), head.get("hash")
            if not isinstance(hseq, int) or hseq > last_seq:
                problems.append(
                    f"truncated: journal.head says entry {hseq} was written, but the journal ends at entry {last_seq}"
                )
            elif 0 < hseq <= len(lines):
                idx = next((i for i, ln in enumerate(lines) if _seq_of(ln) == hseq), None)
                if idx is None or line_hash(lines[idx]) != hhash:
                    problems.append(f"entry {hseq} does not match journal.head (edited)")
                elif last_seq - hseq > 1:
                    problems.append(f"{last_seq - hseq} entries follow the recorded head (appended outside gage)")
                elif last_seq - hseq == 1:
                    notes.append("the last entry was written but the head was not updated (an interrupted write)")
        return JournalReport(ok=not problems, entries=len(lines), problems=problems, notes=notes)


def _append_whole(fd: int, data: bytes, path: Path) -> None:
    """Write one whole journal line, or nothing: a short write (a full disk, a quota) is
    cut back off and reported, never left as a torn line the caller believes was written."""
    start = os.fstat(fd).st_size  # the journal is only appended under the home lock
    try:
        written = os.write(fd, data)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise
    if written != len(data):
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)  # if this fails too, the next append repairs the torn line
        raise GageIOError(
            f"short write: {written} of {len(data)} bytes of the entry reached the disk (is it full?); "
            "the entry was not recorded",
            path=str(path),
        )


def _seq_of(line: bytes) -> int | None:
    try:
        return int(json.loads(line)["seq"])
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return None
