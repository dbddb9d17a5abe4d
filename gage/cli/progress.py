"""A progress line on standard error for long work, and nothing at all when it is not a terminal.

Fed by the core's optional listener (`gage.bundle.progress.reporting`): the core reports bytes done,
this draws at most a few updates a second, on one line, and clears it when the work ends, so
what a script reads is never touched. Used as `with progress_line("import"): ...`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from gage.bundle import progress

# Below this much work no line is drawn: it would only flicker.
MIN_BYTES = 8 << 20
INTERVAL = 0.1


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


class ProgressLine:
    """Draws `label: phase  done of total (pct)` on `stream`, throttled, on one line."""

    def __init__(self, label: str, stream: TextIO, *, clock: Callable[[], float] = time.monotonic, min_bytes: int = MIN_BYTES) -> None:
        self.label = label
        self.stream = stream
        self.clock = clock
        self.min_bytes = min_bytes
        self.last = float("-inf")
        self.drawn = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if total < self.min_bytes:
            return
        if done >= total:
            self.clear()  # the phase is done: leave the line clean for what is printed next
            return
        now = self.clock()
        if now - self.last < INTERVAL:
            return
        self.last = now
        text = f"gage {self.label}: {phase} {_size(done)} of {_size(total)} ({done * 100 // total}%)"
        self.stream.write("\r\x1b[2K" + text)
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.drawn = False


def wanted(stream: TextIO | None = None) -> bool:
    """A progress line only on a terminal: piped or redirected, nothing."""
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_line(label: str, stream: TextIO | None = None) -> Iterator[None]:
    """Show the progress of the work done in this block, if standard error is a terminal."""
    stream = stream if stream is not None else sys.stderr
    if not wanted(stream):
        yield
        return
    line = ProgressLine(label, stream)
    try:
        with progress.reporting(line):
            yield
    finally:
        line.clear()


class CountLine:
    """`gage LABEL: N of M bundles, B, R/s` on one line of a terminal, throttled like ProgressLine,
    for work counted in bundles (an import of many folders, a fetch of a mailbox). Nothing at all
    when `stream` is not a terminal; `clear()` before the summary line is printed."""

    def __init__(self, label: str, stream: TextIO | None = None, *, total: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.on = wanted(self.stream)
        self.total = total
        self.clock = clock
        self.start = clock()
        self.count = 0
        self.bytes = 0
        self.last = float("-inf")
        self.drawn = False

    def add(self, n: int = 1, nbytes: int = 0) -> None:
        self.count += n
        self.bytes += nbytes
        if not self.on:
            return
        now = self.clock()
        if now - self.last < INTERVAL:
            return
        self.last = now
        self.stream.write("\r\x1b[2K" + self.text())
        self.stream.flush()
        self.drawn = True

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Print something (a line about one bundle) without the progress line drawn over it:
        cleared first, drawn again after."""
        was = self.drawn
        self.clear()
        try:
            yield
        finally:
            if was and self.on:
                self.stream.write(self.text())
                self.stream.flush()
                self.drawn = True

    def rate(self) -> float:
        return self.count / max(self.clock() - self.start, 1e-6)

    def text(self) -> str:
        of = f" of {self.total}" if self.total is not None else ""
        return f"gage {self.label}: {self.count}{of} bundles, {_size(self.bytes)}, {self.rate():.0f}/s"

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.drawn = False
