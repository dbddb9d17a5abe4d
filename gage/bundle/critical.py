"""A batch's critical section: Ctrl-C held off until what is on disk is consistent again.

A bulk decision moves many bundles, fsyncs their folders, then writes their journal lines and
the journal's head. A KeyboardInterrupt raised between the lines and the head (or while the
journal index syncs) used to look like "the write failed", and the batch was moved back under
a journal that had already recorded it. Inside `deferred()`, SIGINT and SIGTERM are noted, not
acted on; on the way out the old handlers are put back and the signal is raised again, so the
person's Ctrl-C still stops the command, between batches.

`point(name)` names each step of a batch's durable writes, for tests that inject a fault or a
kill at every step in turn: a `hook` set by a test runs there, and `KILL_ENV` ("N" or
"NAME:N") makes a real process SIGKILL itself at the Nth point reached (of that name).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

KILL_ENV = "GAGE_TEST_KILL_AT"  # test hook, unset in normal use
hook: Callable[[str], None] | None = None  # test hook: called at each point with its name
_reached: dict[str, int] = {}

_DEFERRED: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)


def point(name: str) -> None:
    """A step of a batch's durable writes: where a test may inject a fault or a kill."""
    if hook is not None:
        hook(name)
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    want, _, count = spec.rpartition(":")
    if want and want != name:
        return
    key = want or "*"
    _reached[key] = _reached.get(key, 0) + 1
    if str(_reached[key]) == count:
        os.kill(os.getpid(), signal.SIGKILL)


@contextlib.contextmanager
def deferred() -> Iterator[list[int]]:
    """Hold SIGINT and SIGTERM until the block ends, then raise the first one caught. The block
    is given the list of signals caught so far, to finish early when one is.

    Only the main thread receives signals (and may set handlers); elsewhere this does nothing.
    Nested, the inner block hands what it caught to the outer one's handler."""
    caught: list[int] = []

    def note(signum: int, _frame: object) -> None:
        caught.append(signum)

    old: dict[int, Any] = {}
    try:
        for signum in _DEFERRED:
            try:
                old[signum] = signal.signal(signum, note)
            except ValueError:
                break  # not the main thread (which alone receives signals): nothing to hold off
        yield caught
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if caught:
            signal.raise_signal(caught[0])  # the old handler runs now: KeyboardInterrupt, or the default end
