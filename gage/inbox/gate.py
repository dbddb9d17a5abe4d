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
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gage.bundle import atomic
from gage.bundle.treestat import scan
from gage.format.errors import RefusedError
from gage.format.keys import key_text
from gage.format.manifest import MAX_FILES
from gage.home.layout import STAGING_DIR, STATES, Home
from gage.home.listing import Stored, decisions, resolve

# Reconcile and the unattended rule's facts live in their own modules; their names stay
# importable from here, where callers have always found them.
from gage.inbox.reconcile import (
    STALE_SCRATCH_SECONDS,
    discard,
    journal_states,
    reconcile,
    staging_dir,
)
from gage.trust import verdict as verdict_mod
from gage.trust.unattended import sent_thread, trace, unattended_used

__all__ = [
    "STAGING_DIR",
    "STALE_SCRATCH_SECONDS",
    "AcceptResult",
    "AlreadyError",
    "InvalidBundleError",
    "RejectResult",
    "UnattendedResult",
    "UnverifiedSenderError",
    "accept",
    "accept_unattended",
    "decisions",
    "journal_states",
    "reconcile",
    "reject",
    "staging_dir",
    "unattended_used",
]

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


# --- staging ---------------------------------------------------------------------------


def _stage(home: Home, ref: str) -> Stored:
    """Resolve `ref`, refuse what is already decided, and move the pending bundle to the staging name."""
    stored = resolve(home, ref, STATES)
    _refuse_decided(home, stored)
    sdir = staging_dir(home)
    sdir.mkdir(parents=True, exist_ok=True)
    dest = sdir / stored.id
    if dest.exists() or dest.is_symlink():
        discard(home, dest)  # reconcile ran under this lock just before: nothing valid can be here
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


# A staged bundle has passed its check, so it holds its listed files, their folders and the
# manifest and signature: far fewer entries than this. More is itself a problem.
LINK_SCAN_LIMIT = 2 * MAX_FILES + 16


def _extra_links(root: Path) -> list[str]:
    """Files with another hard link: their bytes could be changed through that name after the check."""
    found, complete = scan(root, limit=LINK_SCAN_LIMIT)
    out = sorted(rel for rel, st in found if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1)
    if not complete:
        out.append(f"(more than {LINK_SCAN_LIMIT} entries: not all could be checked)")
    return out


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
            thread = sent_thread(home, v.manifest.parent if v.manifest else None)
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
            traced = trace(home, m.parent)
            if traced is None:
                return stay(f"its parent {m.parent[:12]} is not a bundle I sent")
            thread = traced.thread
            # A thread I opened with named people is answered, unattended, only by them: any other
            # confirmed contact who learned the id of one of its bundles (a follow-up of mine that
            # names nobody, say) must not spend that thread's budget (spec/gate.md, rule 3).
            if not traced.may_answer(key_text(m.sender.key)):
                return stay(f"its parent {m.parent[:12]} is in a thread I sent to others, not to this sender")
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

