"""Bundles held in a home: finding them by id prefix, listing them, bringing them in.

Importing copies into the home's staging area first and renames the finished copy into
`inbox/pending/<id>` in one step, so a half-copied bundle never appears under its final
name. Importing is not consent: nothing here writes to `inbox/accepted`.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from gage import bundle as bundle_mod
from gage.bundle import atomic, readonly
from gage.format.errors import (
    GageError,
    GageIOError,
    MalformedError,
    RefusedError,
)
from gage.format.keys import key_text
from gage.format.manifest import Manifest
from gage.format.vocab import ArrivalEvent
from gage.home import settings as settings_mod
from gage.home.layout import Home
from gage.home.listing import Stored, decisions, find
from gage.trust.ceremony import SignerClaim
from gage.trust.limits import check_limits, check_pending, signature_of


@dataclass
class ImportResult:
    id: str
    state: str
    new: bool
    check: bundle_mod.Check | None = None
    left_behind: list[str] = field(default_factory=list)
    # Set only for a new arrival whose signature verified: the key to remember as a candidate.
    signer: SignerClaim | None = None


def _arrival(m: Manifest, result: bundle_mod.Check, via: str | None, transport: dict[str, str] | None) -> dict[str, object]:
    """The journal fields of an arrival: what the verdict later reads as "seen"."""
    fields: dict[str, object] = {
        "bundle": m.id,
        "sender": key_text(m.sender.key),
        "kind": m.kind,
        "parent": m.parent,
        "thread": m.thread,
        "ok": result.ok,
    }
    if via:
        fields["via"] = via
    if transport:
        fields["transport"] = transport
    return fields


def import_bundle(
    home: Home,
    src: Path,
    *,
    event: ArrivalEvent = "imported",
    via: str | None = None,
    transport: dict[str, str] | None = None,
    lock_timeout: float | None = None,
) -> ImportResult:
    """Copy the bundle at `src` into `inbox/pending`. Bundles that fail checks still arrive
    (the verdict will say invalid); a folder that is not a bundle at all is refused.

    `transport`: what a carrier says about where the bundle came from (an A2A peer, the
    agent it names). Journaled with the arrival; the verdict shows it as a claim only.
    `lock_timeout`: give up (LockBusy, nothing imported) if the home lock is not free within
    that many seconds; `serve` sets it, so a held lock cannot pile requests up (issue 19).
    """
    src = Path(src)
    if src.is_symlink():
        raise RefusedError("is a symlink; give the bundle directory itself", path=str(src))
    raw, manifest = bundle_mod.read_manifest(src)  # raises MalformedError for not-a-bundle
    del raw
    # The receiver's limits (spec/settings.md), before anything is written: a refusal leaves
    # the home as it was. Checked again under the lock on the copy, so two imports racing
    # cannot both take the last place a key has in pending.
    limits = settings_mod.load(home).limits
    check_limits(home, manifest, limits)
    if find(home, manifest.id) is None and decisions(home).get(manifest.id) is None:
        check_pending(home, manifest, signature_of(src), limits)
    home.staging.mkdir(parents=True, exist_ok=True)
    work = home.staging / f"import-{secrets.token_hex(8)}"
    try:
        try:
            left = bundle_mod.copy_bundle(src, manifest, work / "b")
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise GageIOError(f"cannot copy the bundle ({where}{exc.strerror or exc}); nothing was imported", path=str(src)) from exc
        # The id comes from the bytes we hold now, not from what we read before copying.
        try:
            _raw, copied = bundle_mod.read_manifest(work / "b")
        except GageError as exc:
            raise MalformedError(f"changed while being imported: {exc.message}", path=str(src)) from exc
        bid = copied.id
        # Landed read-only (payload files and manifest 0444, payload folders 0555): an
        # in-place write needs a deliberate chmod, which changes the ctime the check cache
        # relies on (gage/bundle/readonly.py, issue 19).
        readonly.seal(work / "b", copied)
        with home.lock(timeout=lock_timeout):
            existing = find(home, bid)
            decided = decisions(home).get(bid)
            if existing is not None and existing.state == "pending" and decided is None and _replaces(existing, work / "b"):
                # The held copy was damaged on the way (or front-run by a damaged copy of the
                # same manifest and signature); this one checks out. Otherwise the genuine
                # bundle could never come in under its id. Never merged: the whole copy is swapped.
                result = bundle_mod.check(work / "b")  # before the swap: only the journal line follows it
                _swap_in(home, existing.path, work / "b")
                home.journal.append(event, **_arrival(copied, result, via, transport), replaced_invalid=True)
                result.path = existing.path
                return ImportResult(id=bid, state="pending", new=True, check=result, left_behind=left)
            if existing is not None or decided is not None:
                # The same bundle again is a fact the verdict reports (a replay, or a resend).
                # A decided id whose copy was tidied away stays out too: the decision is final,
                # and an undecided copy in pending would only invite deciding it again.
                state = existing.state if existing is not None else str(decided)
                again: dict[str, object] = {"bundle": bid, "again": True, "state": state}
                if via:
                    again["via"] = via
                if transport:
                    again["transport"] = transport
                home.journal.append(event, **again)
                return ImportResult(id=bid, state=state, new=False)
            check_limits(home, copied, limits)
            check_pending(home, copied, signature_of(work / "b"), limits)
            dest = home.state_dir("pending") / bid
            # Checked before it lands, so nothing but the journal line follows the rename: a kill
            # in between (two system calls, not a payload's hashing) is what reconcile records.
            result = bundle_mod.check(work / "b")
            if not atomic.rename_noreplace(work / "b", dest):
                existing = find(home, bid)
                return ImportResult(id=bid, state=existing.state if existing else "pending", new=False)
            home.journal.append(event, **_arrival(copied, result, via, transport))
            result.path = dest
        # A key that signed a bundle we hold is reported, for the caller to remember as a
        # candidate (ceremony.remember_signer); the store writes no contacts.
        signer = SignerClaim(copied.sender.key, copied.sender.name) if result.signature_ok else None
        return ImportResult(id=bid, state="pending", new=True, check=result, left_behind=left, signer=signer)
    finally:
        readonly.remove_tree(work)


def _replaces(existing: Stored, incoming: Path) -> bool:
    """A copy held in pending that does not check out, and an incoming copy that does."""
    if not bundle_mod.check(incoming).ok:
        return False
    return not bundle_mod.check(existing.path, expect_name=True).ok


def _swap_in(home: Home, held: Path, incoming: Path) -> None:
    """Replace the invalid copy at `held` with `incoming`: out of view first, then one rename in."""
    trash = home.staging / f"discard-{secrets.token_hex(8)}"
    try:
        os.rename(held, trash)
    except OSError as exc:
        raise GageIOError(f"cannot replace the invalid copy: {exc.strerror}", path=str(held)) from exc
    if not atomic.rename_noreplace(incoming, held):
        os.rename(trash, held)
        raise RefusedError("the bundle changed in pending while being replaced", path=str(held))
    readonly.remove_tree(trash)


