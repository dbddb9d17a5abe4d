"""Changes to the home, run off the UI thread, with a bounded wait for the home lock.

Accepting, rejecting, confirming a key, remembering a candidate, unpairing: each takes
the home's lock, and a watcher (`gage watch`, another terminal) may hold it for as long
as an import of a large bundle takes. On the UI thread that wait froze the interface.
Here the change runs in a thread worker that first takes the lock
with a timeout (`LOCK_WAIT`), then runs the change holding it (the home's lock is
re-entrant within a thread, so the change's own `with home.lock()` does not wait again).
If the lock is not free in time, nothing is changed and the person is told why; if the
wait is noticeable, they are told that too, while keys keep working.

Results come back to the UI thread through `App.call_from_thread`; nothing in the worker
touches a widget.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from textual.app import App
from textual.worker import Worker

from gage.format.errors import GageError, GageIOError
from gage.home.layout import Home
from gage.tui import safe

try:
    from gage.home.layout import LockBusy
except ImportError:  # a gage.home.layout whose lock has no timeout yet

    class LockBusy(GageIOError):  # type: ignore[no-redef]
        """The home lock was not free within the time given."""


T = TypeVar("T")
GROUP = "home-change"
LOCK_WAIT = 10.0  # seconds a change waits for the home lock before giving up (tests lower it)
NOTE_AFTER = 0.5  # seconds of waiting before the person is told what is happening
BUSY = (
    "The home is busy: another gage process (a watcher importing, or a command in another terminal) "
    "holds its lock. Nothing was changed; try again in a moment."
)
WAITING = "Waiting for the home: another gage process is using it…"


@contextlib.contextmanager
def holding(home: Home, timeout: float) -> Iterator[None]:
    """Hold the home lock, waiting at most `timeout` seconds for it (LockBusy after that)."""
    try:
        cm = home.lock(timeout=timeout)  # type: ignore[call-arg]
    except TypeError:
        cm = _probed(home, timeout)
    with cm:
        yield


@contextlib.contextmanager
def _probed(home: Home, timeout: float) -> Iterator[None]:
    """For a home lock without a timeout: wait until it is free (or give up), then take it."""
    path = home.root / "lock"
    deadline = time.monotonic() + timeout
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy("the home is locked by another gage process") from None
                time.sleep(0.02)
    finally:
        os.close(fd)
    with home.lock():
        yield


def change(
    app: App[Any],
    name: str,
    work: Callable[[], T],
    done: Callable[[T], None],
    failed: Callable[[str], None],
    *,
    lock: bool = True,
    small: bool = False,
) -> Worker[None] | None:
    """Run `work()` in a thread worker (holding the home lock unless `lock=False`).

    `done(result)` or `failed(message)` is then called on the UI thread; the message is
    already made visible (gage.tui.safe). A wait longer than NOTE_AFTER is announced.

    `small`: the work is bounded (a contacts file, a journal line; never a bundle's bytes),
    so when the lock is free at once, and no change of ours is running, it runs here and
    now, the person seeing its result without a frame's delay. The lock is only tried,
    never waited for, on the UI thread: if it is taken the work goes to a worker as usual.
    """
    home: Home = app.home  # type: ignore[attr-defined]
    if small and lock and not [w for w in app.workers if w.group == GROUP and not w.is_finished]:
        try:
            with holding(home, 0):
                result = work()
        except LockBusy:
            pass  # taken by another process: wait for it in a worker, below
        except (GageError, OSError) as exc:
            failed(safe.error_text(exc))
            return None
        else:
            done(result)
            return None

    def back(fn: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the app closed while the change ran
            app.call_from_thread(fn, *args)

    waiting = [lock]  # True while the worker waits for the lock (read by the timer below)

    def run() -> None:
        try:
            if lock:
                with holding(home, LOCK_WAIT):
                    waiting[0] = False
                    result = work()
            else:
                result = work()
        except LockBusy:
            back(failed, BUSY)
        except (GageError, OSError) as exc:
            back(failed, safe.error_text(exc))
        except Exception as exc:  # noqa: BLE001 - a failed change is reported; it must never end the interface
            back(failed, safe.error_text(exc) or type(exc).__name__)
        else:
            back(done, result)
        finally:
            waiting[0] = False

    worker = app.run_worker(run, thread=True, group=GROUP, name=name, exit_on_error=False)

    def still_waiting() -> None:
        if not worker.is_finished and waiting[0]:
            app.notify(WAITING, markup=False, timeout=3)

    app.set_timer(NOTE_AFTER, still_waiting)
    return worker
