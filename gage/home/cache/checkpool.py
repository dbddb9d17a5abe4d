"""Checks of many bundles at once, spread over the machine's cores: the first listing of a home.

A listing with nothing remembered checks every bundle: every payload byte hashed, every
signature verified, each tree proved (gage.home.cache.checks). At 10,000 pending that was most
of a 5 to 10 s listing, on one core, since the check is mostly Python between short system
calls: threads only passed the interpreter's lock back and forth (measured: 6.4 s on two
threads against 3.5 s on one). Processes do not share it.

The workers are forked from the listing itself, so they read exactly what it would (its
modules, its clock, the same home) and return what `checks.pooled_check` returns: the check,
its proof and when it started. The parent remembers each as a check of its own would be
(`CheckCache._learn`: the racy rule, the seal), so a check cache filled here is the one a
serial listing fills. A worker that fails on a bundle returns None for it, and the parent
checks that one itself, meeting whatever error there is as it always did.

Only where forking is sound and pays: Linux (macOS forks unsafely; elsewhere a pool would
start a fresh interpreter per worker), more than one core, no other thread running in this
process (a fork copies a lock another thread holds, held forever), and at least
MIN_MISSES bundles to check (a pool costs its start, about 20 ms).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import partial

TYPE_CHECKING = False  # the start path of `gage list` imports this module (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import TypeVar

    J = TypeVar("J")
    R = TypeVar("R")

MIN_MISSES = 256
PR_SET_PDEATHSIG = 1  # linux/prctl.h
MAX_WORKERS = 8


def workers() -> int:
    """How many processes to check with here: 0 where a pool is not to be used."""
    if sys.platform != "linux":
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return 0
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return 0
    return min(cores, MAX_WORKERS)


def _worker_start(parent: int) -> None:
    """A worker leaves Ctrl-C to the listing, which stops the pool (no traceback per worker),
    and dies with the listing: a pool's worker holds its own end of the pipe it waits on, so a
    listing killed outright (SIGKILL) would otherwise leave it waiting for ever."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the listing died before the line above took effect
        os._exit(1)


def _one(fn: Callable[[J], R], job: J) -> R | None:
    try:
        return fn(job)
    except Exception:  # noqa: BLE001 - the parent checks this one itself and meets the error there
        return None


def run(fn: Callable[[J], R], jobs: Sequence[J]) -> list[R | None] | None:
    """`fn(job)` for each job, in order, on a pool of processes (None for a job it raised on);
    None when no pool is used here (too few jobs, one core, threads running, not Linux): the
    caller does them itself. `fn` must be a module's function (the workers find it by name)."""
    if len(jobs) < MIN_MISSES:
        return None
    n = workers()
    if n == 0:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("fork")
    chunk = max(16, min(128, len(jobs) // (n * 8)))
    try:
        # Not multiprocessing.Pool: a worker that dies there (the OOM killer, a signal) loses its
        # tasks and the map waits for ever; here the pool says it broke, and the caller checks them.
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_worker_start, initargs=(os.getpid(),)) as pool:
            return list(pool.map(partial(_one, fn), jobs, chunksize=chunk))
    except (OSError, BrokenProcessPool):
        return None  # no process could be made (a limit reached), or one died: done here instead
