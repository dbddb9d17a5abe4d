"""The interface's file watcher, run in a process of its own.

watchfiles sets up one inotify watch per folder, and does it holding the interpreter's lock:
at 10,000 pending bundles (30,000 folders) that took 0.8 s in which the interface drew
nothing and took no key (a thread spinning beside it got 3% of its share). Run here, in a
child process, the setup takes another core and the interface draws its first rows at once.

The child (`python -m gage.tui.watcher ROOT...`) writes one JSON text a line to stdout:
`"ready"` once its watch is set, then `[[change, path], ...]` for each batch of changes.
Whatever changed before "ready" was never seen, so the parent looks again then (`changes`
yields an empty set for it). The child ends when its stdin closes: when the interface is
done, or killed, so no watcher outlives it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from pathlib import Path

READY = "ready"
# A batch of changes is a line; a line this long is not one the child writes, and ends the watch.
LINE_LIMIT = 64 << 20


async def changes(roots: Sequence[Path]) -> AsyncIterator[frozenset[str]]:
    """The paths changed under `roots`, a set per batch; the first, empty, once the watch is set.
    Raises OSError when the child cannot start, and ends when it does (a root gone).

    The child's lines are read in a thread (a plain pipe, not an asyncio transport, so a
    cancelled interface leaves nothing for a closed event loop to clean up): killing the child
    ends the read at once."""
    proc = subprocess.Popen(  # noqa: S603 - this interpreter, this module, the home's folders
        [sys.executable, "-m", __name__, *map(str, roots)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    out = proc.stdout
    assert out is not None
    reading, done = [False], [False]

    def read_line() -> bytes:
        """One line, in a thread; whoever meets the end closes the pipe, so a read still
        waiting when the interface stops closes it once the kill below ends it."""
        try:
            line = out.readline(LINE_LIMIT)
        finally:
            reading[0] = False
        if not line or done[0]:
            out.close()
        return line

    try:
        while True:
            reading[0] = True
            line = await asyncio.to_thread(read_line)
            if not line.endswith(b"\n"):
                return  # ended, cut short or too long: not what the child writes, and the caller starts another
            got = json.loads(line)
            yield frozenset() if got == READY else frozenset(str(path) for _change, path in got)
    except ValueError:
        return
    finally:
        done[0] = True
        with suppress(OSError):
            proc.kill()
        proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()
        if not reading[0]:
            out.close()


def _until_eof(stop: threading.Event) -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        stop.set()


def main(roots: list[str]) -> int:
    from watchfiles import watch

    stop = threading.Event()
    threading.Thread(target=_until_eof, args=(stop,), daemon=True).start()
    out = sys.stdout
    ready = False
    try:
        for batch in watch(
            *roots, debounce=50, step=10, rust_timeout=200, yield_on_timeout=True,
            stop_event=stop, ignore_permission_denied=True, raise_interrupt=False,
        ):
            if not ready:
                out.write(json.dumps(READY) + "\n")
                ready = True
            if batch:
                out.write(json.dumps(sorted([int(change), path] for change, path in batch)) + "\n")
            out.flush()
    except (OSError, RuntimeError):
        # RuntimeError: watchfiles gives up on a name that is not UTF-8 (any process can make
        # one in a drop folder). The parent starts another child, which looks again when ready.
        return 1
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    with suppress(OSError):
        sys.stdout.flush()
    os._exit(code)  # not through the interpreter's exit: the stdin thread may hold stdin's lock
