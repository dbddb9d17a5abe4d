"""Reconcile: finish or undo what a killed gate move left, and journal each repair.

The gate (gage/inbox/gate.py) moves a bundle pending -> staging -> accepted (or rejected) and only
then journals it, so a kill at any instant leaves the bundle whole in one place; this module
is the other half of that contract: run under the home lock whenever a home is opened, it
puts each bundle where the journal's decision says, and records where it found it.

Its cost follows the inbox, not the history: it looks at the bundles on disk and at the few
decided bundles the journal last placed in the inbox (the journal index answers both), never
at every bundle the journal has ever named.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gage.bundle import atomic, readonly
from gage.format.manifest import is_id
from gage.home.cache import reconcilemark
from gage.home.journal.facts import BundleFacts
from gage.home.layout import SCRATCH_PREFIXES, STAGING_DIR, STATES, Home

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from gage.format.vocab import State

STALE_SCRATCH_SECONDS = 3600
_SLICE = 128  # bundles asked of the journal index at once (their facts cost about 5 KB each)


def staging_dir(home: Home) -> Path:
    return home.staging / STAGING_DIR


def _locate(home: Home, bundle_id: str) -> list[str]:
    return [s for s in STATES if (home.state_dir(s) / bundle_id).is_dir()]


def journal_states(home: Home) -> dict[str, str]:
    """Where the journal last put each bundle: the last of accepted, rejected, reconciled.

    For tests and tools that compare what the journal says with where each bundle is (a read of
    the whole index). A bundle the journal never decided on or moved is absent (it is pending).
    This is a location, not a decision: `decisions(home)` (final, never undone) says what
    was decided, and a `reconciled` entry never changes that.
    """
    return {b: f.location for b, f in home.journal.index.all_bundles() if f.location is not None}


def discard(home: Home, path: Path) -> None:
    """Remove a redundant copy: renamed out of view first, so a crash never leaves half of it under a real name."""
    trash = home.staging / f"discard-{os.urandom(8).hex()}"
    try:
        os.rename(path, trash)
    except OSError:
        return
    readonly.remove_tree(trash)  # a landed copy's folders are read-only


def _ids_in(home: Home, state: State) -> list[str]:
    try:
        return sorted(n for n in os.listdir(home.state_dir(state)) if is_id(n))
    except FileNotFoundError:
        return []


def reconcile(home: Home, *, timeout: float | None = None) -> list[str]:
    """Finish or undo whatever a crash interrupted, and journal each repair as `reconciled`.

    Runs when a home is opened (`Home.open`), at the start of every gate operation and when
    a watcher starts, under the home lock, so it never sees a move that is still in
    progress. Returns one human-readable note per repair (empty when all is consistent),
    including those of the reconcile `Home.open` ran that nobody has shown yet.
    `timeout`: wait at most that long for the lock (raises home.LockBusy).
    """
    notes: list[str] = home.take_reconciled()
    with home.lock(timeout=timeout):
        home.ensure_layout()
        if reconcilemark.fresh(home):
            return notes  # nothing reconcile reads has changed since a scan found the home consistent
        started = reconcilemark.now_ns()
        try:
            before = reconcilemark.snapshot(home)
        except OSError:
            before = None
        notes += _scan(home)
        if before is not None:
            reconcilemark.save(home, before, started)
    return notes


def _scan(home: Home) -> list[str]:
    """The full reconcile, under the lock: what it costs follows the inbox (every name in it)."""
    return [*_staged(home), *_scratch(home), *_against_journal(home)]


def _staged(home: Home) -> list[str]:
    """Bundles left under the staging name: the move did not finish, so nothing was accepted.
    They go back to pending."""
    notes = []
    sdir = staging_dir(home)
    try:
        staged = sorted(os.listdir(sdir))
    except FileNotFoundError:
        staged = []
    for name in staged:
        path = sdir / name
        if not is_id(name) or path.is_symlink() or not path.is_dir():
            discard(home, path)
            continue
        elsewhere = _locate(home, name)
        if elsewhere:
            discard(home, path)
            note = f"bundle {name[:12]}: a staged copy left by an interrupted accept was dropped; the bundle is in {elsewhere[0]}"
            home.journal.append("reconciled", bundle=name, found="staging", action="dropped duplicate", state=elsewhere[0], note=note)
        else:
            atomic.rename_noreplace(path, home.state_dir("pending") / name)
            note = f"bundle {name[:12]}: an accept was interrupted before it finished; the bundle is back in pending, not accepted"
            home.journal.append("reconciled", bundle=name, found="staging", action="returned to pending", state="pending", note=note)
        notes.append(note)
    return notes


def _scratch(home: Home) -> list[str]:
    """Scratch copies left by a killed import or build. Those copy outside the lock, so only
    leftovers older than any copy still plausibly running are removed."""
    notes = []
    cutoff = time.time() - STALE_SCRATCH_SECONDS
    for entry in sorted(os.listdir(home.staging)):
        if not entry.startswith(SCRATCH_PREFIXES):
            continue
        path = home.staging / entry
        try:
            if path.is_symlink() or os.lstat(path).st_mtime > cutoff:
                continue
        except OSError:
            continue
        readonly.remove_tree(path)
        notes.append(f"removed {entry}, a scratch copy left in {home.staging.name}/ by an interrupted import, bundle or key statement")
    return notes


def _against_journal(home: Home) -> list[str]:
    """Directory state against journal state. A decision is final: reconcile records where a
    decided bundle is now, and never turns it back into an undecided one.

    Only two kinds of decided bundle can need a repair: one found on disk (in any state), and
    one the journal last placed somewhere other than `missing` (it may have gone). Both come
    from the index; the decided bundles tidied away long ago are never looked at."""
    notes: list[str] = []
    index = home.journal.index
    index.sync()
    accepted, rejected, pending = _ids_in(home, "accepted"), _ids_in(home, "rejected"), _ids_in(home, "pending")
    decided: dict[str, str] = {}
    said: dict[str, str] = {}
    unnamed: list[str] = []  # in pending, named by no journal line

    def learn(facts: dict[str, BundleFacts]) -> None:
        for b, f in facts.items():
            if f.decision is not None:
                decided[b] = f.decision
            if f.location is not None:
                said[b] = f.location

    learn(index.placed(sync=False))
    # Asked a slice at a time, and only the decision and the place kept: each bundle's whole
    # facts (its transport and arrival claims) held at once cost 5 KB a bundle in pending.
    for names in (accepted, rejected, pending):
        for at in range(0, len(names), _SLICE):
            part = names[at : at + _SLICE]
            facts = index.bundles(part, sync=False)
            learn(facts)
            if names is pending:
                unnamed += [name for name in part if name not in facts]
    for name in unnamed:
        # Named by no journal line at all: an import killed after its rename and before its
        # journal line, or a folder put in pending by hand. Recorded, so the journal holds every
        # bundle the inbox does; not an arrival (nothing says how or when it came).
        note = (
            f"bundle {name[:12]}: found in pending with no journal line (an import killed before it "
            f"journaled the arrival, or a copy put there outside gage); recorded as found, not as received"
        )
        home.journal.append("reconciled", bundle=name, found="pending", action="recorded unjournaled", state="pending", note=note)
        notes.append(note)
    for name in accepted:
        if decided.get(name) == "accepted":
            continue
        path = home.state_dir("accepted") / name
        if decided.get(name) == "rejected":
            # A rejected bundle moved into accepted around the gate: the rejection stands.
            if _locate(home, name) != ["accepted"]:
                discard(home, path)
                action = "dropped the copy in accepted (the bundle is held elsewhere)"
            else:
                atomic.rename_noreplace(path, home.state_dir("rejected") / name)
                action = "returned to rejected"
            now = "rejected" if (home.state_dir("rejected") / name).is_dir() else (_locate(home, name) or ["missing"])[0]
            note = f"bundle {name[:12]}: found in accepted, but the journal says rejected, and a decision is final; {action}"
            home.journal.append("reconciled", bundle=name, found="accepted", action=action, state=now, note=note)
            said[name] = now
            notes.append(note)
            continue
        if (home.state_dir("pending") / name).is_dir():
            discard(home, path)
            action = "dropped an unjournaled copy (the bundle is in pending)"
        else:
            atomic.rename_noreplace(path, home.state_dir("pending") / name)
            action = "returned to pending"
        note = (
            f"bundle {name[:12]}: found in accepted with no journaled accept (a crash before the journal line, "
            f"or a move around the gate); {action}: accept it again if you mean to"
        )
        home.journal.append("reconciled", bundle=name, found="accepted", action=action, state="pending", note=note)
        said[name] = "pending"
        notes.append(note)
    for name in rejected:
        if name in decided:
            continue  # decided: where it is now is recorded below
        note = f"bundle {name[:12]}: found in rejected with no journaled rejection (a crash before the journal line); recorded as rejected"
        # This entry is itself the rejection (`decisions` reads it as one).
        home.journal.append("reconciled", bundle=name, found="rejected", action="recorded", state="rejected", note=note)
        decided[name] = said[name] = "rejected"
        notes.append(note)
    for name, decision in sorted(decided.items()):
        where = _locate(home, name)
        last = said.get(name, decision)
        if last in where or (last == "missing" and not where):
            continue  # where the journal last put it
        now = where[0] if where else "missing"
        if now == decision:
            note = f"bundle {name[:12]}: back in {now}, where the journal's decision puts it; recorded"
        else:
            shown = f"in {now}" if where else "missing from the inbox"
            note = (
                f"bundle {name[:12]}: the journal says {decision} but the bundle is {shown}; recorded where it is "
                f"(the decision stands: it is not decided again)"
            )
        home.journal.append("reconciled", bundle=name, found=now, action="recorded", state=now, note=note)
        notes.append(note)
    return notes
