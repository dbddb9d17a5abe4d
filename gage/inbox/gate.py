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

Long because accept, reject, the unattended accept and many decisions at once are one door: they
share the staging, the judging and the crash order above, and split apart, that order would have to
be checked in as many places.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from gage.bundle import atomic, critical
from gage.bundle.treestat import scan
from gage.format.errors import RefusedError
from gage.format.keys import key_text
from gage.format.manifest import MAX_FILES
from gage.home.contacts import Contacts
from gage.home.layout import STAGING_DIR, STATES, Home
from gage.home.listing import Stored, decisions, resolve
from gage.inbox import gate_batch

# Reconcile and the unattended rule's facts live in their own modules; their names stay
# importable from here, where callers have always found them.
from gage.inbox.gate_types import (
    AcceptResult,
    AlreadyError,
    Decided,
    InvalidBundleError,
    NotDecidedError,
    RejectResult,
    UnattendedResult,
    UnverifiedSenderError,
)
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
    "Decided",
    "InvalidBundleError",
    "NotDecidedError",
    "RejectResult",
    "UnattendedResult",
    "UnverifiedSenderError",
    "accept",
    "accept_unattended",
    "decide_many",
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


# --- small helpers ---------------------------------------------------------------------


def _slow() -> None:
    value = os.environ.get(SLOW_ENV)
    if value:
        try:
            time.sleep(float(value))
        except ValueError:
            pass


# --- staging ---------------------------------------------------------------------------


def _stage(home: Home, ref: str, *, durable: bool = True) -> Stored:
    """Resolve `ref`, refuse what is already decided, and move the pending bundle to the staging name.

    Not `durable`: the rename is not fsynced (a crash leaves the bundle in pending or under the
    staging name, and reconcile puts the second back)."""
    stored = resolve(home, ref, STATES)
    _refuse_decided(home, stored)
    sdir = staging_dir(home)
    sdir.mkdir(parents=True, exist_ok=True)
    dest = sdir / stored.id
    if dest.exists() or dest.is_symlink():
        discard(home, dest)  # reconcile ran under this lock just before: nothing valid can be here
    if not atomic.rename_noreplace(stored.path, dest, durable=durable):
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


def _unstage(home: Home, staged: Stored, *, durable: bool = True) -> None:
    """Put a staged bundle back in pending: the answer was no, or something failed."""
    if staged.path.is_dir():
        atomic.rename_noreplace(staged.path, home.state_dir("pending") / staged.id, durable=durable)


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
    fields = _land_rename(home, staged, v, how, thread, durable=True)
    _slow()
    gate_batch.journal_one(home, "accept", fields)  # not journaled: back in pending, and it says so
    return _landed(home, staged, v, how)


def _land_rename(home: Home, staged: Stored, v: verdict_mod.Verdict, how: str, thread: str | None, *, durable: bool) -> dict[str, Any]:
    """The rename into accepted; the journal line's fields, for the caller to append."""
    if not atomic.rename_noreplace(staged.path, home.state_dir("accepted") / staged.id, durable=durable):
        _unstage(home, staged)
        raise AlreadyError(staged.id, "accepted")
    m = v.manifest
    return {
        "bundle": staged.id,
        "how": how,
        "verdict": v.verdict,
        "sender": key_text(m.sender.key) if m else None,
        "kind": m.kind if m else None,
        "parent": m.parent if m else None,
        "thread": thread,
    }


def _landed(home: Home, staged: Stored, v: verdict_mod.Verdict, how: str) -> AcceptResult:
    v.path, v.state, v.accepted_how = home.state_dir("accepted") / staged.id, "accepted", how
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
            v, how, thread = _judge(home, staged, unverified=unverified)
            result = _land(home, staged, v, how, thread)
            landed = True
            return result
        finally:
            if not landed:
                _unstage(home, staged)


def _judge(home: Home, staged: Stored, *, unverified: bool, **read: Any) -> tuple[verdict_mod.Verdict, str, str | None]:
    """The verdict on the staged bytes, and how they may be accepted; raises when they may not.
    `read`: contacts and authority read once for many (verdict.compute's arguments)."""
    v = verdict_mod.compute(home, staged, **read)
    problems = _problems(staged, v)
    if problems or v.verdict == "invalid":
        raise InvalidBundleError(staged.id, problems or ["the verdict is invalid"])
    if v.verdict != "verified" and not unverified:
        raise UnverifiedSenderError(staged.id, v)
    how = "human" if v.verdict == "verified" else "human-unverified"
    return v, how, sent_thread(home, v.manifest.parent if v.manifest else None)


def reject(home: Home, ref: str, *, why: str | None = None) -> RejectResult:
    """Move a pending bundle to rejected in one rename, then journal it.

    Only pending bundles can be rejected: an accepted bundle may already have been acted
    on, and rejecting it would pretend otherwise (AlreadyError says "already accepted").
    """
    _why_ok(why)
    with home.lock():
        reconcile(home)
        stored, fields = _reject_rename(home, ref, why, durable=True)
        _slow()
        gate_batch.journal_one(home, "reject", fields)
    return RejectResult(id=stored.id, previous_state="pending")


def _why_ok(why: str | None) -> None:
    if why is not None and len(why) > 2000:
        raise RefusedError("the reason is longer than 2000 characters")


def _reject_rename(home: Home, ref: str, why: str | None, *, durable: bool) -> tuple[Stored, dict[str, Any]]:
    """The rename into rejected; the journal line's fields, for the caller to append."""
    stored = resolve(home, ref, STATES)
    _refuse_decided(home, stored)
    dest = home.state_dir("rejected") / stored.id
    if not atomic.rename_noreplace(stored.path, dest, durable=durable):
        raise AlreadyError(stored.id, "rejected")
    m = Stored(stored.id, "rejected", dest).manifest()
    return stored, {"bundle": stored.id, "why": why, "sender": key_text(m.sender.key) if m else None, "kind": m.kind if m else None}


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



# --- many at once -----------------------------------------------------------------------

# A bulk decision makes its moves durable, journals them and reports them this often: one
# fsync per folder touched and one journal write and fsync per batch, not seven per bundle.
BATCH_SECONDS = 0.25
Progress = Callable[[int, int, Decided], None]  # (reported so far, how many, the one just reported)
_Pending = gate_batch.Moved


def decide_many(
    home: Home,
    refs: Sequence[str],
    action: Literal["accept", "reject"],
    *,
    unverified: bool = False,
    why: str | None = None,
    progress: Progress | None = None,
) -> list[Decided]:
    """Accept or reject many bundles under one lock, each judged as `accept` / `reject` judge one,
    with the durable writes batched the way git batches object writes before the one ref update
    that names them: a batch's renames are made without an fsync each, then each folder they
    touched is fsynced once, then their journal lines go in one write and one fsync. Only then is
    any of them reported (`progress`, and the list returned, in the order given), so nothing is
    reported that a crash could undo. A kill at any instant leaves every bundle decided and
    journaled, or not journaled yet, which reconcile resolves exactly as for a single decision
    killed in its window (an accept back to pending; a reject recorded). One bundle's refusal
    (invalid, unverified, decided before, not found) is its `error`, and the rest go on.

    A batch that fails (a full disk, an I/O error) keeps decided what the journal recorded and
    puts the rest back in pending, each with a NotDecidedError, and the decision stops there:
    the bundles after it are NotDecidedError too, untouched. A Ctrl-C (SIGINT, SIGTERM) is held
    off while a batch is moved and journaled (main thread), then raised between batches, once
    every bundle reported so far is decided and journaled and the rest are in pending."""
    if action not in ("accept", "reject"):
        raise ValueError(f"unknown decision {action!r}")
    if action == "reject":
        _why_ok(why)
    out = [Decided(id=ref) for ref in dict.fromkeys(refs)]
    reported = 0

    def report(d: Decided) -> None:
        nonlocal reported
        reported += 1
        if progress is not None:
            progress(reported, len(out), d)

    with home.lock():
        reconcile(home)
        contacts = Contacts.load(home.contacts_path)
        read: dict[str, Any] = {"contacts": contacts, "authority": verdict_mod.load_authority(home, contacts), "keys": {}}
        i, stopped = 0, None

        def move(d: Decided) -> _Pending:
            return _move_one(home, d, action, unverified, why, read)

        while i < len(out) and stopped is None:
            with critical.deferred() as held:
                i, stopped = gate_batch.run(home, action, out, i, move, report, held, slow=_slow, seconds=BATCH_SECONDS)
        for d in out[i:]:
            d.error = NotDecidedError(d.id, action, f"the decision stopped before it ({stopped})")
            report(d)
    return out


def _move_one(home: Home, d: Decided, action: str, unverified: bool, why: str | None, read: dict[str, Any]) -> _Pending:
    """One bundle's move, not yet durable nor journaled; raises (the bundle back in pending) when it may not move."""
    if action == "reject":
        stored, fields = _reject_rename(home, d.id, why, durable=False)
        d.id = stored.id
        return d, fields, lambda: setattr(d, "result", RejectResult(id=stored.id, previous_state="pending"))
    staged = _stage(home, d.id, durable=False)
    d.id = staged.id
    try:
        _slow()
        v, how, thread = _judge(home, staged, unverified=unverified, **read)
        fields = _land_rename(home, staged, v, how, thread, durable=False)
    except BaseException:
        _unstage(home, staged, durable=False)
        raise
    return d, fields, lambda: setattr(d, "result", _landed(home, staged, v, how))
