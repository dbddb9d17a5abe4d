"""Opening a home for use: storage opened, then whatever a killed gage process left half done
finished or undone (gage.inbox.reconcile), so every reader sees each bundle, whole, in exactly
one state: a bundle a kill left under the staging name is back in pending before anything lists
it (spec/gate.md, "Crash states"). Storage (gage.home.layout.Home.open) never runs this policy
itself; every command and interface opens its home here."""

from __future__ import annotations

from pathlib import Path

from gage.format.errors import GageIOError
from gage.home.layout import Home, LockBusy
from gage.inbox.reconcile import reconcile as reconcile_home

# How long opening a home waits for another gage process's move to finish before reading.
RECOVER_WAIT = 30.0


def open_home(root: Path | str, *, reconcile: bool = True) -> Home:
    """Open an existing home and, unless `reconcile=False`, reconcile it first."""
    home = Home.open(root)
    if reconcile:
        recover(home)
    return home


def recover(home: Home, *, timeout: float = RECOVER_WAIT) -> list[str]:
    """Reconcile if the lock comes free within `timeout` seconds; keep the notes in
    `home.reconciled` for the next gate operation to show. A home this process may not write
    (a read-only copy) is read as it is."""
    try:
        notes = reconcile_home(home, timeout=timeout)
    except LockBusy:
        return []
    except (GageIOError, OSError):
        return []  # no write access (the lock cannot be opened): read what is there
    home.reconciled.extend(notes)
    return notes
