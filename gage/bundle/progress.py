"""Progress of long work (hashing and copying payload bytes), for whoever wants to show it.

The core never prints. Code that streams payload bytes reports them here; an interface that
wants a progress line sets a listener for the calls it makes with `reporting(callback)`.
Without a listener every report is a no-op. The listener gets `(phase, done, total)`: the
phase's name ("checking", "copying", "bundling", "extracting") and its bytes done and
expected (`total` is what the manifest or the sources declare; `done` can pass it for a file
that turns out longer, which the work then refuses).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

Listener = Callable[[str, int, int], None]
Ticker = Callable[[int], None]

_listener: ContextVar[Listener | None] = ContextVar("gage_progress_listener", default=None)


@dataclass
class _Phase:
    name: str
    done: int
    total: int


_current: ContextVar[_Phase | None] = ContextVar("gage_progress_phase", default=None)


@contextmanager
def reporting(listener: Listener | None) -> Iterator[None]:
    """Send the progress of the work done inside this block to `listener` (None: nobody)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def listening() -> bool:
    return _listener.get() is not None


@contextmanager
def phase(name: str, total: int | Callable[[], int]) -> Iterator[None]:
    """One phase of work of `total` bytes (a callable is only called when someone listens)."""
    listener = _listener.get()
    if listener is None:
        yield
        return
    size = total() if callable(total) else total
    token = _current.set(_Phase(name, 0, size))
    listener(name, 0, size)
    try:
        yield
    finally:
        _current.reset(token)


def advance(nbytes: int) -> None:
    """`nbytes` more of the current phase are done (no-op outside a phase or without a listener)."""
    cur = _current.get()
    if cur is None:
        return
    listener = _listener.get()
    if listener is None:
        return
    cur.done += nbytes
    listener(cur.name, cur.done, cur.total)


def ticker() -> Ticker | None:
    """The current phase's `advance`, for work done on other threads (None: nobody listens).

    Context variables do not follow work into a thread pool, so a pool's tasks get this
    instead: it reports to the phase that was current here, one call at a time.
    """
    cur = _current.get()
    listener = _listener.get()
    if cur is None or listener is None:
        return None
    lock = threading.Lock()

    def tick(nbytes: int) -> None:
        with lock:
            cur.done += nbytes
            listener(cur.name, cur.done, cur.total)

    return tick
