"""Writing the journal's new lines: all of them durable, or the file as it was.

An append is recorded once its lines are written and fsynced; nothing after that (the head's
rewrite, the index) can take them back, so nothing after that may tell the caller they were not
written. Before that point a failure cuts the file back to where it was and says so with
`NotJournaled`. Both halves matter to a caller that moved bundles before journaling them
(gage.inbox.gate): it puts back exactly the bundles whose lines the journal does not hold.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from gage.bundle import critical
from gage.format.errors import GageIOError


class NotJournaled(GageIOError):
    """An append failed before its lines were durable, and none of them is in the journal: what
    they would have recorded did not happen as far as the journal is concerned."""


def write_lines(path: Path, data: bytes) -> None:
    """Append `data` (whole lines) in one write and fsync it; raise NotJournaled with the file cut
    back to where it was. Should the cut itself fail, a GageIOError (not NotJournaled) says the
    file may hold some of the lines: `Journal.since` tells which, and the next append repairs a
    torn one."""
    critical.point("journal-write")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        raise NotJournaled(f"cannot append to journal: {exc.strerror}; nothing was written", path=str(path)) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotJournaled("is not a regular file; nothing was written", path=str(path))
        start = os.fstat(fd).st_size  # the journal is only appended under the home lock
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(0, f"short write: {written} of {len(data)} bytes reached the disk (is it full?)")
            critical.point("journal-fsync")
            os.fsync(fd)
        except BaseException as exc:
            try:
                os.ftruncate(fd, start)
                os.fsync(fd)
            except OSError as cut:
                raise GageIOError(
                    f"cannot append to journal ({_why(exc)}), and cutting the unfinished lines back off failed too "
                    f"({cut.strerror}): the journal may hold some of them",
                    path=str(path),
                ) from exc
            if isinstance(exc, OSError):
                raise NotJournaled(f"cannot append to journal: {_why(exc)}; nothing was written", path=str(path)) from exc
            raise  # a KeyboardInterrupt, say: cut back off, so nothing was written
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__
