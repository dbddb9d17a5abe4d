"""The drop-folder watcher: brings complete bundles from watched folders into `inbox/pending`.

A drop folder is written by someone else (a sync tool, a USB stick, a mail filter, a
person with `cp -r`), so the watcher trusts nothing about it: a bundle may still be
arriving, be renamed into place, vanish, be a symlink, or never finish. The rule:

- Only directories directly inside a drop folder are candidates; dot-names and common
  temporary names (`*.tmp`, `*.part`, `*.partial`, `*~`, ...) are skipped until they are
  renamed to a real name. Symlinks are never followed.
- A candidate is imported as soon as it checks out (every listed file present with the
  right size and hash, the signature good): complete by definition.
- One that does not check out is imported only after it has stayed unchanged (every
  entry's type, size and mtime) for `settle` seconds; its verdict will then say invalid.
  A bundle that never stops changing is never imported.
- What the home already holds (by id) is not imported again, and the watcher never
  deletes or changes anything in a drop folder: the folder belongs to its writer.

With a budget (`--unattended --budget N`) each new import is offered to
`gate.accept_unattended`, the only unattended path into `accepted`. This module holds no
UI: the CLI (or the interface) passes `on_event` and prints the events.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from gage import bundle as bundle_mod
from gage.bundle.treestat import Fingerprint, tree_fingerprint
from gage.carriers.events import WatchEvent
from gage.format.errors import GageError, GageIOError, UsageError
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import gate, landmany
from gage.trust import ceremony, retirement
from gage.trust import verdict as verdict_mod

TEMP_SUFFIXES = (".tmp", ".temp", ".part", ".partial", ".crdownload", ".download", ".swp", "~")
FINGERPRINT_LIMIT = 20_000  # entries walked per candidate: a bundle has at most 10,000 files



@dataclass
class _Seen:
    fingerprint: Fingerprint
    since: float  # when this exact fingerprint was first observed (monotonic)
    done: bool = False
    announced: bool = False


def is_temporary_name(name: str) -> bool:
    """Names writers use while a copy is in progress: wait for the rename to the real name."""
    low = name.lower()
    return name.startswith(".") or low.endswith(TEMP_SUFFIXES) or ".tmp-" in low or ".partial-" in low


def fingerprint(root: Path) -> Fingerprint:
    """Two equal fingerprints some seconds apart mean nobody is writing there any more."""
    return tree_fingerprint(root, limit=FINGERPRINT_LIMIT)


def _safe_fingerprint(root: Path) -> Fingerprint:
    try:
        return fingerprint(root)
    except Exception:  # noqa: BLE001 - only used to notice a later change; none is fine
        return ()


def where(drop: Path) -> str:
    """The `via` text for a drop folder, always valid UTF-8: a folder name that is not (a
    byte such as 0xff) is written with a backslash escape, never as a lone surrogate that
    strict JSON (the journal) refuses."""
    return f"drop folder {os.fsencode(drop).decode('utf-8', errors='backslashreplace')}"


@dataclass
class Watcher:
    """Watches drop folders until `stop()`; `scan()` alone does one pass (tests, one-shot use)."""

    home: Home
    drops: list[Path]
    budget: int | None = None  # None: no unattended accepts at all
    settle: float = 2.0
    debounce_ms: int = 300
    full_scan_every: float = 30.0  # seconds between safety rescans of every drop folder
    on_event: Callable[[WatchEvent], None] | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    clock: Callable[[], float] = time.monotonic
    _seen: dict[Path, _Seen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.budget is not None and self.budget < 0:
            raise UsageError("the budget must be zero or more")
        drops = []
        for d in self.drops:
            d = Path(d).absolute()
            if not d.is_dir():
                raise GageIOError("drop folder does not exist or is not a folder", path=str(d))
            real = d.resolve()
            home = self.home.root.resolve()
            if real == home or home in real.parents or real in home.parents:
                raise UsageError(f"a drop folder must be outside the gage home and not contain it: {d}")
            drops.append(d)
        self.drops = drops

    # --- events ----------------------------------------------------------------------

    def _emit(self, events: list[WatchEvent], event: WatchEvent) -> None:
        events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def stop(self) -> None:
        self.stop_event.set()

    # --- one pass --------------------------------------------------------------------

    def _candidates(self) -> list[tuple[Path, Path]]:
        out: list[tuple[Path, Path]] = []
        for d in self.drops:
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            out.extend((d, d / n) for n in names if not is_temporary_name(n))
        return out

    def _drop_of(self, changed: str) -> tuple[Path, Path] | None:
        p = Path(changed)
        for d in self.drops:
            try:
                rel = p.relative_to(d)
            except ValueError:
                continue
            if not rel.parts or is_temporary_name(rel.parts[0]):
                return None
            return d, d / rel.parts[0]
        return None

    def scan(self, only: Iterable[tuple[Path, Path]] | None = None) -> list[WatchEvent]:
        """Look at every candidate (or just `only`, plus those still waiting) and import what is ready."""
        events: list[WatchEvent] = []
        if only is None:
            todo = self._candidates()
        else:
            todo = list(dict.fromkeys([*only, *self._waiting()]))
        ready: list[tuple[Path, Path]] = []  # landed together, in one batch, after the look
        for drop, path in todo:
            if self.stop_event.is_set():
                break
            try:
                self._consider(drop, path, events, ready)
            except Exception as exc:  # noqa: BLE001 - nothing in a drop folder may stop the watcher
                # Whatever one candidate does (a tree too deep for some walk, a name that
                # cannot be encoded, an error nobody foresaw), it is reported once and
                # skipped; the other candidates, and the watcher, carry on.
                if not os.path.lexists(path):
                    self._seen.pop(path, None)  # vanished while we looked: nothing to do
                    continue
                rec = self._seen.get(path)
                if rec is None:
                    rec = self._seen[path] = _Seen(fingerprint=_safe_fingerprint(path), since=self.clock())
                rec.done = True  # report once; a change to it tries again
                why = str(exc) if isinstance(exc, (GageError, OSError)) else f"{type(exc).__name__}: {exc}".rstrip(": ")
                self._emit(events, WatchEvent("error", f"could not import {path}: {why}", path=path))
        if ready:
            self._import_all(ready, events)
        # Forget what is gone, so a later bundle under the same name is looked at afresh.
        for p in [p for p in self._seen if not os.path.lexists(p)]:
            del self._seen[p]
        return events

    def _waiting(self) -> list[tuple[Path, Path]]:
        return [(p.parent, p) for p, rec in self._seen.items() if not rec.done]

    @property
    def waiting(self) -> int:
        return len(self._waiting())

    def _consider(self, drop: Path, path: Path, events: list[WatchEvent], ready: list[tuple[Path, Path]]) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._seen.pop(path, None)
            return
        if stat.S_ISLNK(st.st_mode):
            if path not in self._seen:
                self._seen[path] = _Seen(fingerprint=(), since=self.clock(), done=True)
                self._emit(events, WatchEvent("skipped", f"skipped {path}: a symlink (never followed)", path=path))
            return
        if not stat.S_ISDIR(st.st_mode):
            return  # loose files are not bundles; stay quiet about them
        fp = fingerprint(path)
        now = self.clock()
        rec = self._seen.get(path)
        if rec is not None and rec.fingerprint == fp and rec.done:
            return
        if rec is None or rec.fingerprint != fp:
            rec = _Seen(fingerprint=fp, since=now, announced=rec.announced if rec else False)
            self._seen[path] = rec
        settled = now - rec.since >= self.settle

        try:
            _raw, manifest = bundle_mod.read_manifest(path)
        except GageError:
            if settled:
                rec.done = True
                self._emit(events, WatchEvent("skipped", f"skipped {path}: not a gage bundle (no readable manifest.json)", path=path))
            else:
                self._announce(rec, path, events)
            return
        held = listing.find(self.home, manifest.id)
        if held is not None:
            rec.done = True
            # Already held: importing again would only add a replay record, unless the copy
            # held in pending is invalid (a stalled copy that settled, or a damaged one that
            # came first) and this one now checks out: then import swaps it in whole.
            if held.state == "pending" and bundle_mod.check(path).ok:
                if not bundle_mod.check(held.path, expect_name=True).ok:
                    ready.append((drop, path))
            return
        decided = listing.decisions(self.home).get(manifest.id)
        if decided is not None:
            # Decided before, and its copy since tidied away: a decision is final for the id,
            # so the same bundle dropped again is not brought back to be decided again.
            rec.done = True
            self._emit(
                events,
                WatchEvent(
                    "skipped",
                    f"skipped {path}: bundle {manifest.id[:12]} was {decided} here before, and a decision is final",
                    id=manifest.id,
                    path=path,
                ),
            )
            return
        check = bundle_mod.check(path)
        if not check.ok and not settled:
            self._announce(rec, path, events)
            return
        rec.done = True
        ready.append((drop, path))

    def _announce(self, rec: _Seen, path: Path, events: list[WatchEvent]) -> None:
        if not rec.announced:
            rec.announced = True
            self._emit(events, WatchEvent("waiting", f"waiting for {path} to finish arriving", path=path))

    def _import_all(self, ready: list[tuple[Path, Path]], events: list[WatchEvent]) -> None:
        """The ready candidates through the batched import (gage.inbox.landmany): each refused alone."""
        items = [landmany.Incoming(path, "received", where(drop)) for drop, path in ready]
        def remember(batch: list[landmany.Outcome]) -> None:  # before the batch's rows are kept under the contacts
            ceremony.remember_signers(self.home, [o for o in batch if not isinstance(o, GageError)])

        try:
            outcomes: list[landmany.Outcome] = landmany.import_many(self.home, items, after_batch=remember)
        except GageError as exc:  # the batch as a whole (the lock not free): each is said, and tried on a change
            outcomes = [exc] * len(items)
        for (_drop, path), o in zip(ready, outcomes, strict=True):
            try:
                if isinstance(o, GageError):
                    raise o
                self._imported(path, o, events)
            except Exception as exc:  # noqa: BLE001 - as in scan: one candidate's failure is said once
                if not os.path.lexists(path):
                    self._seen.pop(path, None)  # vanished while we looked: nothing to do
                    continue
                why = str(exc) if isinstance(exc, (GageError, OSError)) else f"{type(exc).__name__}: {exc}".rstrip(": ")
                self._emit(events, WatchEvent("error", f"could not import {path}: {why}", path=path))

    def _imported(self, path: Path, result: landmany.ImportResult, events: list[WatchEvent]) -> None:
        if not result.new:
            return
        stored = listing.find(self.home, result.id)
        label = ""
        verdict = "invalid"
        if stored is not None:
            v = verdict_mod.compute(self.home, stored)
            verdict, label = v.verdict, v.sender.label()
        note = "" if result.check is None or result.check.ok else " (it did not check out even after it settled)"
        self._emit(
            events,
            WatchEvent(
                "imported",
                f"received {result.id[:12]} from {path} into pending: {verdict.upper()}, sender {label}{note}",
                id=result.id,
                path=path,
            ),
        )
        for applied in retirement.apply_arrivals(self.home, [result.id]):
            what = "key statement applied" if applied.applied else "key statement"
            self._emit(events, WatchEvent("key-statement", f"{result.id[:12]}: {what}: {applied.message}", id=result.id, path=path))
        if self.budget is None:
            return
        outcome = gate.accept_unattended(self.home, result.id, budget=self.budget)
        short = result.id[:12]
        if outcome.accepted is not None:
            thread = outcome.thread[:12] if outcome.thread else "?"
            msg = f"accepted UNATTENDED {short}: {outcome.reason}; thread {thread}: {outcome.used} of {outcome.budget} used"
            self._emit(events, WatchEvent("accepted", msg, id=result.id, path=path, unattended=outcome))
        elif outcome.budget_spent:
            msg = f"stays pending {short}: BUDGET SPENT: {outcome.reason}; a person must accept or reject it"
            self._emit(events, WatchEvent("budget-spent", msg, id=result.id, path=path, unattended=outcome))
        else:
            msg = f"stays pending {short}: {outcome.reason}"
            self._emit(events, WatchEvent("pending", msg, id=result.id, path=path, unattended=outcome))

    # --- running ---------------------------------------------------------------------

    def run(self) -> None:
        """Reconcile, scan what is already there, then follow changes until `stop()`."""
        events: list[WatchEvent] = []
        for note in gate.reconcile(self.home):
            self._emit(events, WatchEvent("reconciled", note))
        shown = ", ".join(str(d) for d in self.drops)
        mode = f"unattended, budget {self.budget} per thread" if self.budget is not None else "no unattended accepts"
        self._emit(events, WatchEvent("started", f"watching {shown} ({mode})"))
        self.scan()
        # Wake regularly while something is waiting to settle, even if nothing changes.
        tick = max(50, min(1000, int(self.settle * 250)))
        try:
            self._follow(tick)
        except Exception as exc:  # noqa: BLE001 - the OS watch failed; the watcher must not
            if not self.stop_event.is_set():
                # A drop folder can make the OS watch fail (an entry it may not read, the
                # user's inotify watches used up, an error inside watchfiles): say so once,
                # then look at the folders on a timer instead.
                why = f"{type(exc).__name__}: {exc}".rstrip(": ")
                self._emit(
                    events,
                    WatchEvent("error", f"the file-system watch failed ({why}); looking at the drop folders every {tick / 1000:g} s instead"),
                )
                while not self.stop_event.wait(tick / 1000):
                    self.scan()
        self._emit(events, WatchEvent("stopped", "stopped watching"))

    def _follow(self, tick: int) -> None:
        """Follow the OS's change events until `stop()`; raises if the OS watch fails."""
        # The OS watch is only in place once the generator first yields: anything that
        # landed between the scan above and that moment raised no event, so the first
        # wake-up scans everything again. A slow periodic full scan also covers events
        # the OS dropped (an inotify queue overflow), and changes inside a candidate that
        # is not waiting: only the drop folders themselves are watched, not recursively,
        # so a sender cannot make gage hold one OS watch per folder it creates (the user's
        # inotify watches are shared with every other program). Candidates still waiting
        # are looked at on every wake-up anyway.
        first = True
        last_full = self.clock()
        for changes in watchfiles.watch(
            *self.drops,
            watch_filter=None,
            debounce=self.debounce_ms,
            step=50,
            stop_event=self.stop_event,
            rust_timeout=tick,
            yield_on_timeout=True,
            raise_interrupt=False,
            recursive=False,
            ignore_permission_denied=True,
        ):
            if self.stop_event.is_set():
                break
            touched: list[tuple[Path, Path]] = []
            full = first or self.clock() - last_full >= self.full_scan_every
            first = False
            for _change, changed in changes:
                hit = self._drop_of(changed)
                if hit is None:
                    full = full or any(Path(changed) == d for d in self.drops)
                    continue
                touched.append(hit)
            if full:
                last_full = self.clock()
            self.scan(None if full else touched)
