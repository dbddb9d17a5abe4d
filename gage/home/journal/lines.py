"""The journal file's lines: constants, hashing, parsing, and reading a piece at a time.

Shared by the journal (gage/home/journal/log.py), its check (gage/home/journal/verify.py) and its index
(gage/home/cache/journalindex.py). Reading by blocks with `pread`, forwards from an offset or backwards
from the end, is what lets an append and the index cost the same whatever the journal's length.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from gage.format import sha256, vocab
from gage.format.errors import GageIOError, MalformedError

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

GENESIS = "0" * 64
LINE_LIMIT = 1 << 16
# `verify` reads the whole journal into memory; a file larger than this is not a journal gage wrote.
JOURNAL_LIMIT = 1 << 34
# Block size for reading the journal a piece at a time (forwards when streaming, backwards for its tail).
BLOCK = 1 << 16
# Torn lines up to this size are also copied into their `repaired` entry; a larger one
# (a gage line is at most LINE_LIMIT) would not fit in a line, and lives only in its file.
TORN_INLINE_LIMIT = 16 * 1024
# The journal's events (spec/journal.md); one list, in gage.format.vocab, for the type and the check.
EVENTS = vocab.EVENTS


def line_hash(line: bytes) -> str:
    return sha256.hexdigest(line)


def open_journal(path: Path) -> int | None:
    """The journal opened for reading (None when it does not exist): non-blocking, a regular
    file, within JOURNAL_LIMIT, or an error naming what is in its place, never a hang."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GageIOError(f"cannot read the journal: {exc.strerror}", path=str(path)) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise GageIOError("is a folder, not the journal file", path=str(path))
        if not stat.S_ISREG(st.st_mode):
            raise GageIOError("is not a regular file (the journal must be one)", path=str(path))
        if st.st_size > JOURNAL_LIMIT:
            raise MalformedError(f"is {st.st_size} bytes, over the {JOURNAL_LIMIT} bytes a journal file may have", path=str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One line as an entry, or None: damage is for `verify` to report, not for readers to trip on."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: a line nested thousands deep
        return None
    return obj if isinstance(obj, dict) else None


def iter_lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for each whole line of `fd` from `start` (a line's first byte) up to
    `end`; bytes after the last newline before `end` (a torn write) are not a line."""
    pos, carry, carry_at = start, b"", start
    while pos < end:
        block = os.pread(fd, min(BLOCK * 16, end - pos), pos)
        if not block:
            break
        pos += len(block)
        data = carry + block if carry else block
        at = 0
        while True:
            nl = data.find(b"\n", at)
            if nl < 0:
                break
            yield carry_at + at, data[at:nl]
            at = nl + 1
        carry, carry_at = data[at:], carry_at + at


def rfind_newline(fd: int, pos: int) -> int:
    """The offset of the last newline before `pos`, or -1: read backwards a block at a time."""
    while pos > 0:
        start = max(0, pos - BLOCK)
        i = os.pread(fd, pos - start, start).rfind(b"\n")
        if i >= 0:
            return start + i
        pos = start
    return -1


def iter_lines_backwards(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for the whole lines ending before `end` (just after a newline), last first."""
    pos = end - 1  # the newline that ends the last line
    while pos >= 0:
        start = rfind_newline(fd, pos) + 1
        yield start, os.pread(fd, pos - start, start)
        pos = start - 1


def seq_of(line: bytes) -> int | None:
    try:
        return int(json.loads(line)["seq"])
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # OverflowError: a seq of 1e400
        return None
