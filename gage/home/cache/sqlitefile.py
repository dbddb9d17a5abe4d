"""Opening a cache's SQLite file in the home (the journal index, the row index) without being fooled.

sqlite follows links and opens FIFOs: a link left in the cache would make it create a database
outside the home, or rewrite another program's. So the names are looked at first: a
link, FIFO or device there is unlinked (the name only, never what it points to), and a link among
the folders, or a folder at the name, means no file (OSError: the caller goes on without it). The
file is made 0600 before sqlite opens it (its -wal and -shm files take the same mode), never by
opening an existing file: closing any descriptor of it would drop the locks sqlite holds on it for
this process's other connections. A file that is not a database is only a cache: removed and made
again, once.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from gage.home import homefile


def open_cache_db(
    path: Path,
    what: str,
    *,
    prepare: Callable[[sqlite3.Connection], None],
    timeout: float,
    check_same_thread: bool = True,
) -> sqlite3.Connection:
    """The cache at `path` (`what` names it in an error), in WAL mode; `prepare` checks its
    version and schema, and a `sqlite3.DatabaseError` from it means the file is remade."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    root, rel = path.parent.parent, f"{path.parent.name}/{path.name}"
    for suffix in ("", "-wal", "-shm", "-journal"):
        if not homefile.clear_derived(root, rel + suffix):
            raise OSError(f"{path}{suffix} cannot be used as {what}")
    for attempt in (1, 2):
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600))
        db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=check_same_thread)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            prepare(db)
            return db
        except sqlite3.DatabaseError:
            db.close()
            if attempt == 2:
                raise
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
    raise sqlite3.DatabaseError("unreachable")


def open_cache_db_to_read(path: Path, what: str) -> sqlite3.Connection | None:
    """The cache at `path` for a read only, when it exists: the same look at its names first, but
    no layout check and nothing made (a fifth of `open_cache_db`'s cost). A file that is not a
    database, or of another layout, fails at the first query (sqlite3.Error): a miss for the caller."""
    root, rel = path.parent.parent, f"{path.parent.name}/{path.name}"
    for suffix in ("", "-wal", "-shm", "-journal"):
        if not homefile.clear_derived(root, rel + suffix):
            raise OSError(f"{path}{suffix} cannot be used as {what}")
    if not os.path.exists(path):
        return None  # never made here: sqlite would make it
    return sqlite3.connect(path, timeout=1, isolation_level=None)

