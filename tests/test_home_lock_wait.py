"""The home lock's wait keeps its word: `timeout` bounds the whole wait, this process's own lock
and the file lock another process holds together, never one fresh timeout after the other."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from gage.home.layout import Home, LockBusy

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_lock_wait_is_bounded_in_total_while_a_thread_then_another_process_holds_it(make_home: Callable[[str], Home]) -> None:
    home = make_home("me")
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(home.root / "lock"), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        # Another thread of this process holds its in-process lock for most of the timeout (as a
        # second landing thread in `a2a serve` waits behind the first), and the other process
        # holds the file lock throughout.
        inner, holding = home.lock._rlock, threading.Event()

        def hold() -> None:
            with inner:
                holding.set()
                time.sleep(0.8)

        releaser = threading.Thread(target=hold)
        releaser.start()
        holding.wait()
        t0 = time.monotonic()
        try:
            with pytest.raises(LockBusy), home.lock(timeout=1.0):
                pass
            waited = time.monotonic() - t0
        finally:
            releaser.join()
        assert 0.8 <= waited < 1.5, waited  # before: 0.8 s for the thread, then a fresh 1.0 s for the process
    finally:
        other.kill()
        other.wait()
    with home.lock(timeout=1.0):  # free again
        pass
