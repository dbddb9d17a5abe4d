"""The gate: the one door from `inbox/pending` into `inbox/accepted` (and into `inbox/rejected`).

Arrival is not consent. Everything that moves a bundle out of pending goes through this
module, under the home lock, in an order chosen so that a crash or a kill at any instant
leaves the bundle whole in exactly one place, and `reconcile` can always tell which:

1. `pending/<id>` is renamed to the staging name `tmp/accepting/<id>` (one rename; the
   bundle keeps its id as its directory name, so the full check still checks the name).
2. The full check and the verdict run on the staged bytes: the bytes that will land,
   not the bytes someone reviewed earlier (time of check is time of use).
3. A refusal renames the bundle back to `pending/<id>`; a pass renames it to
   `accepted/<id>` (one rename each).
4. Only then is `accepted` journaled. So the journal never says accepted for a bundle
   that is not in `accepted`; a bundle found in `accepted` without a journaled accept
   (a crash between 3 and 4, or anything that bypassed the gate) is put back in pending
   by `reconcile`, which journals what it did.

See spec/gate.md for the contract, the crash states and the unattended rule.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import atomic
from . import verdict as verdict_mod
from .errors import RefusedError
from .home import STATES, Home
from .keys import key_text
from .manifest import is_id
from .store import Stored, decisions, resolve

STAGING_DIR = "accepting"
STALE_SCRATCH_SECONDS = 3600
HOWS = ("human", "human-unverified", "unattended")

# Test hook, read here only: seconds to sleep inside the critical windows of a move (after
# staging, and between the landing rename and the journal line), so tests that SIGKILL a
# real `gage accept` can land their kill inside those windows. Unset in normal use.
SLOW_ENV = "GAGE_TEST_SLOW_GATE"


class AlreadyError(RefusedError):
    """The bundle has already been decided: its message says "already accepted" or "already rejected"."""

    def __init__(self, bundle_id: str, state: str, *, extra: str = "") -> None:
        super().__init__(f"bundle {bundle_id[:12]} is already {state}{extra}")
        self.id = bundle_id
        self.state = state


class InvalidBundleError(RefusedError):
    """The staged bytes do not check out: an invalid bundle is never accepted."""

    def __init__(self, bundle_id: str, problems: list[str]) -> None:
        listed = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        super().__init__(f"will not accept bundle {bundle_id[:12]}: it is invalid ({listed}); it stays in pending")
        self.id = bundle_id
        self.problems = problems


class UnverifiedSenderError(RefusedError):
    """The signature is good but the key is not a confirmed contact: accept only with `unverified=True`."""

    def __init__(self, bundle_id: str, v: verdict_mod.Verdict) -> None:
        super().__init__(
            f"will not accept bundle {bundle_id[:12]}: its sender ({v.sender.label()}) is not a confirmed contact, "
            "so the bundle is UNVERIFIED; it stays in pending. Pair with the sender first, or accept it anyway "
            "with --unverified (the journal records that you did)"
        )
        self.id = bundle_id
        self.verdict = v


@dataclass
class AcceptResult:
    id: str
    how: str  # human, human-unverified, unattended
    verdict: verdict_mod.Verdict


@dataclass
class RejectResult:
    id: str
    previous_state: str


@dataclass
class UnattendedResult:
    """What the unattended rule did with one bundle: accepted (with `accepted` set) or left pending, and why."""

    id: str
    accepted: AcceptResult | None
    reason: str
    thread: str | None = None  # the budget key: the root this home recorded when it sent the parent
    used: int = 0  # unattended accepts in that thread, this one included when accepted
    budget: int = 0
    budget_spent: bool = False

    @property
    def ok(self) -> bool:
        return self.accepted is not None


# --- small helpers ---------------------------------------------------------------------


def _slow() -> None:
    value = os.environ.get(SLOW_ENV)
    if value:
        try:
            time.sleep(float(value))
        except ValueError:
            pass


def staging_dir(home: Home) -> Path:
    return home.staging / STAGING_DIR


def _locate(home: Home, bundle_id: str) -> list[str]:
    return [s for s in STATES if (home.state_dir(s) / bundle_id).is_dir()]


def journal_states(home: Home) -> dict[str, str]:
    """Where the journal last put each bundle: the last of accepted, rejected, reconciled.

    Used by `reconcile` (and by tests) to compare what the journal says with where the
    bundle is. A bundle the journal never decided on or moved is absent (it is pending).
    This is a location, not a decision: `decisions(home)` (final, never undone) says what
    was decided, and a `reconciled` entry never changes that.
    """
    out: dict[str, str] = {}
    for e in home.journal.entries():
        b = e.get("bundle")
        if not isinstance(b, str):
            continue
        ev = e.get("event")
        if ev == "accepted":
            out[b] = "accepted"
        elif ev == "rejected":
            out[b] = "rejected"
        elif ev == "reconciled" and isinstance(e.get("state"), str):
            out[b] = e["state"]
    return out


def _discard(home: Home, path: Path) -> None:
    """Remove a redundant copy: renamed out of view first, so a crash never leaves half of it under a real name."""
    trash = home.staging / f"discard-{secrets.token_hex(8)}"
    try:
        os.rename(path, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


# --- reconcile -------------------------------------------------------------------------


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
        # 1. Bundles left under the staging name: the move did not finish, so nothing was
        #    accepted. They go back to pending.
        sdir = staging_dir(home)
        try:
            staged = sorted(os.listdir(sdir))
        except FileNotFoundError:
            staged = []
        for name in staged:
            path = sdir / name
            if not is_id(name) or path.is_symlink() or not path.is_dir():
                _discard(home, path)
                continue
            elsewhere = _locate(home, name)
            if elsewhere:
                _discard(home, path)
                note = f"bundle {name[:12]}: a staged copy left by an interrupted accept was dropped; the bundle is in {elsewhere[0]}"
                home.journal.append("reconciled", bundle=name, found="staging", action="dropped duplicate", state=elsewhere[0], note=note)
            else:
                atomic.rename_noreplace(path, home.state_dir("pending") / name)
                note = f"bundle {name[:12]}: an accept was interrupted before it finished; the bundle is back in pending, not accepted"
                home.journal.append("reconciled", bundle=name, found="staging", action="returned to pending", state="pending", note=note)
            notes.append(note)

        # 1b. Scratch copies left by a killed import or build. Those copy outside the lock,
        #     so only leftovers older than any copy still plausibly running are removed.
        cutoff = time.time() - STALE_SCRATCH_SECONDS
        for entry in sorted(os.listdir(home.staging)):
            if not entry.startswith(("import-", "build-", "discard-")):
                continue
            path = home.staging / entry
            try:
                if path.is_symlink() or os.lstat(path).st_mtime > cutoff:
                    continue
            except OSError:
                continue
            shutil.rmtree(path, ignore_errors=True)
            notes.append(f"removed {entry}, a scratch copy left in {home.staging.name}/ by an interrupted import or bundle")

        # 2. Directory state against journal state. A decision is final: reconcile records
        #    where a decided bundle is now, and never turns it back into an undecided one.
        said = journal_states(home)
        decided = decisions(home)
        for name in sorted(os.listdir(home.state_dir("accepted"))):
            if not is_id(name) or decided.get(name) == "accepted":
                continue
            path = home.state_dir("accepted") / name
            if decided.get(name) == "rejected":
                # A rejected bundle moved into accepted around the gate: the rejection stands.
                if _locate(home, name) != ["accepted"]:
                    _discard(home, path)
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
                _discard(home, path)
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
        for name in sorted(os.listdir(home.state_dir("rejected"))):
            if not is_id(name) or name in decided:
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


# --- staging ---------------------------------------------------------------------------


def _stage(home: Home, ref: str) -> Stored:
    """Resolve `ref`, refuse what is already decided, and move the pending bundle to the staging name."""
    stored = resolve(home, ref, STATES)
    _refuse_decided(home, stored)
    sdir = staging_dir(home)
    sdir.mkdir(parents=True, exist_ok=True)
    dest = sdir / stored.id
    if dest.exists() or dest.is_symlink():
        _discard(home, dest)  # reconcile ran under this lock just before: nothing valid can be here
    if not atomic.rename_noreplace(stored.path, dest):
        raise RefusedError("cannot move the bundle to its staging name", path=str(dest))
    return Stored(id=stored.id, state="pending", path=dest)


def _refuse_decided(home: Home, stored: Stored) -> None:
    """Only an undecided bundle in pending is decided. A decision in the journal is final for
    its id, wherever a copy of the bundle turns up (put back in pending by hand, restored)."""
    decision = decisions(home).get(stored.id)
    if decision is not None:
        raise AlreadyError(stored.id, decision)
    if stored.state != "pending":
        raise AlreadyError(stored.id, stored.state)


def _unstage(home: Home, staged: Stored) -> None:
    """Put a staged bundle back in pending: the answer was no, or something failed."""
    if staged.path.is_dir():
        atomic.rename_noreplace(staged.path, home.state_dir("pending") / staged.id)


def _extra_links(root: Path) -> list[str]:
    """Files with another hard link: their bytes could be changed through that name after the check."""
    out = []
    stack = [root]  # iterative: no recursion, whatever the depth
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(e.path))
            elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                out.append(Path(e.path).relative_to(root).as_posix())
    return sorted(out)


def _problems(staged: Stored, v: verdict_mod.Verdict) -> list[str]:
    problems = [f"[{p.stage}] {p}" for p in v.problems]
    if not problems and v.id != staged.id:
        problems.append(f"the manifest's id {v.id} is not the directory's name")
    for rel in _extra_links(staged.path):
        problems.append(f"[tampered] {rel}: has another hard link, so its bytes could change after this check")
    return problems


def _land(home: Home, staged: Stored, v: verdict_mod.Verdict, how: str, thread: str | None) -> AcceptResult:
    """The one rename into accepted, then the journal line. Caller holds the lock."""
    dest = home.state_dir("accepted") / staged.id
    if not atomic.rename_noreplace(staged.path, dest):
        _unstage(home, staged)
        raise AlreadyError(staged.id, "accepted")
    _slow()
    m = v.manifest
    fields: dict[str, Any] = {
        "bundle": staged.id,
        "how": how,
        "verdict": v.verdict,
        "sender": key_text(m.sender.key) if m else None,
        "kind": m.kind if m else None,
        "parent": m.parent if m else None,
        "thread": thread,
    }
    home.journal.append("accepted", **fields)
    v.path, v.state, v.accepted_how = dest, "accepted", how
    return AcceptResult(id=staged.id, how=how, verdict=v)


def _sent_entry(home: Home, parent: str | None) -> dict[str, Any] | None:
    """This home's own `sent` entry for `parent`, or None if it never sent it."""
    if not parent:
        return None
    for e in home.journal.entries():
        if e.get("event") == "sent" and e.get("bundle") == parent:
            return e
    return None


def _sent_thread(home: Home, parent: str | None) -> str | None:
    """The budget key for a reply to `parent`: the bundle that started the thread, as this home's
    own records trace it; None if this home never sent `parent`.

    Only what this home sent, and to whom, decides it; never a `thread` a received manifest
    claims (the `thread` of my own `sent` entry is not used either: a reply copies it from the
    bundle it answers, so it can be another person's claim). From `parent`, the trace goes back
    through my own bundles' parents. Where one of mine answered a bundle I received, it goes on
    through that bundle only if that bundle's signature held when it arrived, its parent is a
    bundle I sent, and its signer could answer that bundle (I addressed it to them, or to
    nobody in particular); otherwise my bundle starts a thread, and a budget, of its own.
    """
    if not parent:
        return None
    sent: dict[str, dict[str, Any]] = {}
    arrived: dict[str, dict[str, Any]] = {}  # the first arrival whose signature held
    for e in home.journal.entries():
        b, ev = e.get("bundle"), e.get("event")
        if not isinstance(b, str):
            continue
        if ev == "sent":
            sent.setdefault(b, e)
        elif ev in ("imported", "received") and e.get("ok") is True and not e.get("again"):
            arrived.setdefault(b, e)
    if parent not in sent:
        return None
    cur = parent
    for _ in range(len(sent) + 1):  # ids are content addresses, so no cycle; bounded all the same
        p = sent[cur].get("parent")
        if not isinstance(p, str) or not p:
            return cur
        if p in sent:
            cur = p  # my own follow-up to my own bundle
            continue
        theirs = arrived.get(p)
        mine = theirs.get("parent") if theirs is not None else None
        if not isinstance(mine, str) or mine not in sent:
            return cur
        to = sent[mine].get("to")
        if isinstance(to, list) and to and theirs.get("sender") not in to:  # type: ignore[union-attr]
            return cur
        cur = mine
    return cur


def unattended_used(home: Home, thread: str) -> int:
    """Unattended accepts already journaled in `thread`: the count survives restarts because it is the journal."""
    return sum(
        1 for e in home.journal.entries() if e.get("event") == "accepted" and e.get("how") == "unattended" and e.get("thread") == thread
    )


# --- the public operations --------------------------------------------------------------


def accept(home: Home, ref: str, *, unverified: bool = False) -> AcceptResult:
    """A human's accept: verify the exact bytes being moved, then move them in one rename.

    Raises InvalidBundleError (invalid), UnverifiedSenderError (unverified without
    `unverified=True`), AlreadyError (decided before), NotFoundError. On any refusal the
    bundle is back in pending, unchanged.
    """
    with home.lock():
        reconcile(home)
        staged = _stage(home, ref)
        landed = False
        try:
            _slow()
            v = verdict_mod.compute(home, staged)
            problems = _problems(staged, v)
            if problems or v.verdict == "invalid":
                raise InvalidBundleError(staged.id, problems or ["the verdict is invalid"])
            if v.verdict != "verified" and not unverified:
                raise UnverifiedSenderError(staged.id, v)
            how = "human" if v.verdict == "verified" else "human-unverified"
            thread = _sent_thread(home, v.manifest.parent if v.manifest else None)
            result = _land(home, staged, v, how, thread)
            landed = True
            return result
        finally:
            if not landed:
                _unstage(home, staged)


def reject(home: Home, ref: str, *, why: str | None = None) -> RejectResult:
    """Move a pending bundle to rejected in one rename, then journal it.

    Only pending bundles can be rejected: an accepted bundle may already have been acted
    on, and rejecting it would pretend otherwise (AlreadyError says "already accepted").
    """
    if why is not None and len(why) > 2000:
        raise RefusedError("the reason is longer than 2000 characters")
    with home.lock():
        reconcile(home)
        stored = resolve(home, ref, STATES)
        _refuse_decided(home, stored)
        dest = home.state_dir("rejected") / stored.id
        if not atomic.rename_noreplace(stored.path, dest):
            raise AlreadyError(stored.id, "rejected")
        _slow()
        m = Stored(stored.id, "rejected", dest).manifest()
        home.journal.append(
            "rejected",
            bundle=stored.id,
            why=why,
            sender=key_text(m.sender.key) if m else None,
            kind=m.kind if m else None,
        )
    return RejectResult(id=stored.id, previous_state="pending")


def accept_unattended(home: Home, ref: str, *, budget: int) -> UnattendedResult:
    """The only unattended path into accepted: a verified reply, from a confirmed contact, to a
    bundle this home sent, within `budget` unattended accepts per thread.

    The thread key is the root this home recorded in its own `sent` entry for the parent,
    never a value from the incoming manifest, so a sender cannot open fresh budgets by
    naming new threads. Anything that does not qualify stays in pending, with the reason.
    """
    if budget < 0:
        raise ValueError("budget must be zero or more")
    with home.lock():
        reconcile(home)
        try:
            staged = _stage(home, ref)
        except AlreadyError as exc:
            return UnattendedResult(id=exc.id, accepted=None, reason=f"already {exc.state}", budget=budget)
        landed = False
        try:
            _slow()
            v = verdict_mod.compute(home, staged)
            short = staged.id[:12]

            def stay(reason: str, **kw: Any) -> UnattendedResult:
                return UnattendedResult(id=staged.id, accepted=None, reason=reason, budget=budget, **kw)

            if _problems(staged, v) or v.verdict == "invalid":
                return stay("invalid: it stays pending for a person to look at")
            if v.verdict != "verified" or v.sender.status != "confirmed":
                return stay(f"the sender ({v.sender.label()}) is not a confirmed contact")
            m = v.manifest
            assert m is not None
            if v.addressed_to_me is False:
                return stay("it names recipients and I am not one of them")
            if m.parent is None:
                return stay("not a reply: it has no parent")
            thread = _sent_thread(home, m.parent)
            if thread is None:
                return stay(f"its parent {m.parent[:12]} is not a bundle I sent")
            # A bundle I addressed to named people is answered, unattended, only by them: any
            # other confirmed contact who learned its id must not spend that thread's budget.
            to = (_sent_entry(home, m.parent) or {}).get("to")
            if isinstance(to, list) and to and key_text(m.sender.key) not in to:
                return stay(f"its parent {m.parent[:12]} is a bundle I sent to others, not to this sender")
            used = unattended_used(home, thread)
            if used >= budget:
                return stay(
                    f"the unattended budget for thread {thread[:12]} is spent ({used} of {budget} used)",
                    thread=thread,
                    used=used,
                    budget_spent=True,
                )
            result = _land(home, staged, v, "unattended", thread)
            landed = True
            return UnattendedResult(
                id=staged.id,
                accepted=result,
                reason=f"accepted unattended: a verified reply to bundle {m.parent[:12]} I sent ({short})",
                thread=thread,
                used=used + 1,
                budget=budget,
            )
        finally:
            if not landed:
                _unstage(home, staged)

