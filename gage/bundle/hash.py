"""Hashing a bundle's listed files against the manifest, on every core where it pays.

hashlib releases the GIL while it hashes a large buffer, and os.read while it reads, so a
few threads hash a few large files at once at nearly one core each. A small file costs
more to hand to a thread than to hash, so it is hashed where it is found. Whatever the
sharing, each file's verdict is a message (None when it matches) that the checker puts
back in walk order, so the problems reported never depend on which thread finished first.
"""

from __future__ import annotations

import hashlib
import os
import threading
from types import TracebackType
from typing import TYPE_CHECKING

from gage.bundle import progress, safeopen
from gage.format.manifest import MAX_SIZE, Manifest

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

# A file at least this large goes to the pool (when there are at least two such files).
PARALLEL_MIN = 512 << 10
MAX_WORKERS = 4
MISMATCH = "content does not match its SHA-256 in the manifest"


class Hashing:
    """One file's verdict: `result()` is None when it matches, else the problem's message."""

    def __init__(self, message: str | None = None, future: Future[str | None] | None = None) -> None:
        self._message, self._future = message, future

    def result(self) -> str | None:
        return self._future.result() if self._future is not None else self._message


def hash_here(fd: int, size: int, sha256: str, tick: progress.Ticker | None) -> str | None:
    """Hash the open file `fd` (closing it), reading at most `size` + 1 bytes."""
    try:
        if size < safeopen.CHUNK:
            # A small file in one read of `size` + 1 bytes: exactly `size` back is the whole
            # file (a short read of a regular file is its end). Anything else: the long way.
            data = os.read(fd, size + 1)
            if len(data) == size:
                if tick is not None:
                    tick(size)
                return None if hashlib.sha256(data).hexdigest() == sha256 else MISMATCH
            if len(data) > size:
                return MISMATCH
            os.lseek(fd, 0, os.SEEK_SET)
        got, digest = safeopen.hash_fd(fd, limit=size, on_bytes=tick)
    except OSError as exc:
        return f"cannot be read safely ({exc.strerror or exc})"
    finally:
        os.close(fd)
    return None if got == size and digest == sha256 else MISMATCH


class Hasher:
    """Hashes the files it is given, here or on a small pool; a context manager that waits
    for (and closes the descriptors of) everything handed to it, whatever happens."""

    def __init__(self, manifest: Manifest) -> None:
        large = sum(1 for f in manifest.files if f.size >= PARALLEL_MIN)
        self.workers = min(os.cpu_count() or 1, MAX_WORKERS, large) if large >= 2 else 0
        self.pool: ThreadPoolExecutor | None = None
        # Files in flight at once (each holds a descriptor): a few per worker.
        self.slots = threading.BoundedSemaphore(max(self.workers * 2, 1))
        self.tick = progress.ticker()
        self.stopped = threading.Event()
        # Files smaller than this are hashed where they are found (`hash_here`), not submitted.
        self.here_below = PARALLEL_MIN if self.workers else MAX_SIZE + 1

    def __enter__(self) -> Hasher:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self.pool is not None:
            if e is not None:
                # Interrupted or failed: every file still hashing stops at its next chunk (and
                # each one queued at its first, closing its descriptor), so Ctrl-C returns at
                # once instead of after whole files.
                self.stopped.set()
            self.pool.shutdown(wait=True)

    def submit(self, fd: int, size: int, sha256: str) -> Hashing | str | None:
        """Hash the open file `fd` (this closes it) against `size` and `sha256`: the verdict
        now (None, or the problem's message) for a file hashed here, or a Hashing to ask later."""
        if self.workers == 0 or size < PARALLEL_MIN:
            return hash_here(fd, size, sha256, self.tick)
        if self.pool is None:
            from concurrent.futures import (
                ThreadPoolExecutor,  # only when files are large enough to share out
            )

            self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="gage-hash")
        self.slots.acquire()

        def tick(n: int) -> None:
            if self.stopped.is_set():
                raise InterruptedError("stopped")  # ends this task; the command is already unwinding
            if self.tick is not None:
                self.tick(n)

        def task() -> str | None:
            try:
                return hash_here(fd, size, sha256, tick)
            finally:
                self.slots.release()

        try:
            return Hashing(future=self.pool.submit(task))
        except BaseException:
            self.slots.release()
            os.close(fd)
            raise
