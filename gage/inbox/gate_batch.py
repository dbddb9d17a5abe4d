"""A bulk decision's batch made durable and journaled (gage.inbox.gate.decide_many), or put back.

The batch's bundles are already in accepted (or rejected), moved without an fsync each. Here
their folders are fsynced once, then their journal lines go in one write. The rule a failure
must keep: no bundle is moved back to pending under a journal line that decided it, and none
is left decided without one. So when anything fails, what the journal actually ends with is
read back (never assumed from the exception), and only the bundles it does not hold go back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from gage.bundle import atomic, critical
from gage.format.errors import GageError, GageIOError
from gage.home.journal.log import NotJournaled
from gage.home.layout import Home
from gage.inbox.gate_types import Decided, NotDecidedError
from gage.inbox.reconcile import staging_dir

Place = Literal["accepted", "rejected"]


Moved = tuple[Decided, dict[str, Any], Callable[[], None]]  # a bundle moved, its journal fields, finish


def run(
    home: Home, action: str, out: list[Decided], i: int, move: Callable[[Decided], Moved],
    report: Callable[[Decided], None], held: list[int], *, slow: Callable[[], None], seconds: float,
) -> tuple[int, GageError | None]:
    """One batch: move bundles from `out[i]` on until the batch is due (`seconds`) or a signal is
    held, then commit it and report each of its bundles; (where the next batch starts, the error
    that stopped this one). Anything raised while moving puts the batch's bundles back first."""
    batch: list[Moved] = []
    since = time.monotonic()
    try:
        while i < len(out) and not held and (not batch or time.monotonic() - since < seconds):
            d = out[i]
            i += 1
            try:
                batch.append(move(d))
            except GageError as exc:
                d.error = exc
                report(d)
    except BaseException:
        put_back(home, place_of(action), [d.id for d, _f, _fin in batch])
        raise
    if not batch:
        return i, None
    settled = commit(home, action, [fields for _d, fields, _fin in batch], slow=slow)
    for d, fields, finish in batch:
        if fields["bundle"] in settled.done:
            finish()
        else:
            d.error = settled.not_done[fields["bundle"]]
        report(d)
    error = settled.error
    if error is None:
        return i, None
    if not isinstance(error, Exception):
        raise error  # a KeyboardInterrupt that could not be held off: the batch is settled and reported
    return i, error if isinstance(error, GageError) else GageIOError(str(error))


class Settled:
    """What a batch came to: the ids decided and journaled, and for each of the others why not."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.not_done: dict[str, NotDecidedError] = {}
        self.error: BaseException | None = None  # what stopped the batch, if anything did


def place_of(action: str) -> Place:
    return "accepted" if action == "accept" else "rejected"


def fsync_dir(path: Path) -> None:
    """fsync a folder, raising when it fails (atomic.fsync_dir forgives): a batch's lines must
    not say what a lost rename undoes."""
    critical.point("fsync-dir")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise GageIOError(f"cannot make the moves durable: {exc.strerror}", path=str(path)) from exc


def journal_one(home: Home, action: str, fields: dict[str, Any]) -> None:
    """Journal one decision whose rename is already durable (`gate.accept`, `reject`, the
    unattended accept), by the same rule as a batch: recorded, it stands whatever fails after;
    not recorded, the bundle goes back to pending and NotDecidedError says so."""
    settled = commit(home, action, [fields], synced=True)
    error = settled.error
    if error is None or (fields["bundle"] in settled.done and isinstance(error, Exception)):
        return
    if isinstance(error, Exception):
        raise settled.not_done[fields["bundle"]] from error
    raise error


def commit(
    home: Home, action: str, fields: list[dict[str, Any]], slow: Callable[[], None] | None = None, *, synced: bool = False
) -> Settled:
    """Fsync the folders a batch's renames touched, then journal the batch in one write.

    On any failure (ENOSPC, EIO, a KeyboardInterrupt that could not be held off) the bundles
    whose lines the journal holds stay decided; the rest go back to pending. What failed is the
    Settled's `error`, never raised here (a KeyboardInterrupt too: the caller reports the batch,
    then raises it)."""
    place = place_of(action)
    ids = [f["bundle"] for f in fields]
    settled = Settled()
    folders = [] if synced else [home.state_dir(place), home.state_dir("pending")] + ([staging_dir(home)] if action == "accept" else [])
    mark: int | None = None
    appending = False
    with critical.deferred():
        try:
            for folder in folders:
                fsync_dir(folder)
            if slow is not None:
                slow()
            mark = home.journal.mark()
            appending = True
            home.journal.append_many([(place, f) for f in fields])
            settled.done = set(ids)
            return settled
        except BaseException as exc:
            settled.error = exc
            held = _held(home, place, mark if appending and not isinstance(exc, NotJournaled) else None)
            if held is None:  # the journal cannot be read back: reconcile settles them, as after a crash
                settled.not_done = {b: _not_done(b, action, exc, place, unknown=True) for b in ids}
            else:
                settled.done = {b for b in ids if b in held}
                where = put_back(home, place, [b for b in ids if b not in held])
                settled.not_done = {b: _not_done(b, action, exc, w) for b, w in where.items()}
            return settled


def _held(home: Home, place: str, mark: int | None) -> set[str] | None:
    """The bundles the journal's lines after `mark` decide (none without a mark: nothing was appended)."""
    if mark is None:
        return set()
    try:
        return {str(e.get("bundle")) for e in home.journal.since(mark) if e.get("event") == place}
    except (OSError, GageError):
        return None


def put_back(home: Home, place: Place, ids: list[str]) -> dict[str, str]:
    """Move undecided bundles from `place` back to pending (durably); where each one now is."""
    where: dict[str, str] = {}
    for b in ids:
        try:
            atomic.rename_noreplace(home.state_dir(place) / b, home.state_dir("pending") / b, durable=False)
        except GageError:
            pass
        where[b] = "pending" if (home.state_dir("pending") / b).is_dir() else place
    if where:
        for folder in (home.state_dir("pending"), home.state_dir(place)):
            atomic.fsync_dir(folder)
    return where


def _not_done(bundle_id: str, action: str, exc: BaseException, where: str, *, unknown: bool = False) -> NotDecidedError:
    why = str(exc) if isinstance(exc, GageError) else (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    if unknown:
        why += "; the journal could not be read back to see whether its line was written"
    elif where != "pending":
        why += "; moving it back to pending failed"
    return NotDecidedError(bundle_id, action, why, where=where)
