"""The file system's own clock, read by touching a file on it: what a cache's racy rule compares with.

A cache that takes "unchanged stat values" to mean "unchanged bytes" must not remember a tree
whose newest timestamp a later write could repeat: on a file system that stamps files from a
coarse clock (a kernel tick of 1 to 10 ms; whole seconds on ext3 or HFS+), a write in the same
tick as the check keeps the ctime the check saw (git's "racy" entries). Waiting two seconds by
the process's clock covers every granularity but leaves every tree younger than that unremembered,
which is every bundle a batch has just landed.

Git's answer is to compare with a timestamp the file system itself gave: touch a file on the
same file system and read its ctime back. Every write after that touch is stamped at or after
that reading (the same clock, truncated the same way on one file system: one device), so a tree
whose every timestamp is strictly older than the reading cannot be written again without a
stamp it did not have. The reading is taken before a check starts and is good for every check
that starts after it; a tree stamped in the same tick as the reading is simply not remembered.

Only a reading from the same device as the tree counts (a payload folder that is a mount point
falls back to the two-second rule), and only where the probe is a regular file this process
could open without following a link and stamp (a read-only home falls back too). A clock set
back by more than the tick defeats this rule as it defeats the two-second one (threat-model.md).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

PROBE = "clock"  # in the home's cache folder: a derived file like the others there, empty
# How long `wait_past` waits for the clock to move on: one tick is 1 to 10 ms where timestamps are
# finer than a second; past it, a tree still in that tick is simply not remembered.
TICK_WAIT_S = 0.05
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def reading(folder: Path | str) -> tuple[int, int] | None:
    """(device, ctime in ns) of the probe in `folder`, stamped now by the file system; None when
    it cannot be taken (no folder, not writable, a link, FIFO or other non-file planted there)."""
    if os.utime not in os.supports_fd:
        return None
    try:
        fd = os.open(os.path.join(folder, PROBE), _FLAGS, 0o600)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.utime(fd)  # futimens(UTIME_NOW): the kernel stamps ctime from the file system's clock
        st = os.fstat(fd)
        return st.st_dev, st.st_ctime_ns
    except OSError:
        return None
    finally:
        os.close(fd)


def wait_past(folder: Path | str, changed: Path | str) -> None:
    """Until the clock read in `folder` is past the timestamps of `changed` (a folder a batch just
    renamed into), on the same device, or TICK_WAIT_S: so what the batch wrote can be remembered."""
    try:
        st = os.stat(changed)
    except OSError:
        return
    newest = max(st.st_mtime_ns, st.st_ctime_ns)
    deadline = time.monotonic() + TICK_WAIT_S
    while True:
        got = reading(folder)
        if got is None or got[0] != st.st_dev or got[1] > newest or time.monotonic() > deadline:
            return
        time.sleep(0.001)
