"""Bundles held in a home: finding them by id prefix, listing them, bringing them in.

Importing copies into the home's staging area first and renames the finished copy into
`inbox/pending/<id>` in one step, so a half-copied bundle never appears under its final
name. Importing is not consent: nothing here writes to `inbox/accepted`.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import atomic
from . import bundle as bundle_mod
from . import settings as settings_mod
from .errors import GageError, GageIOError, MalformedError, NotFoundError, RefusedError
from .home import ALL_STATES, Home
from .keys import key_text, verify_manifest_signature
from .manifest import Manifest, is_id
from .settings import LimitError
from .signing import signature_len
from .vocab import ArrivalEvent, Place


@dataclass
class Stored:
    id: str
    state: Place
    path: Path

    def manifest(self) -> Manifest | None:
        try:
            return bundle_mod.read_manifest(self.path)[1]
        except GageError:
            return None


@dataclass(frozen=True)
class SignerClaim:
    """The key whose signature verified on a bundle just landed, and the name it claims.

    The store only reports it: the storage layer never writes contacts. What the key
    becomes (a candidate, never more) is decided by gage.ceremony.remember_signer."""

    key: bytes
    claimed_name: str


@dataclass
class ImportResult:
    id: str
    state: str
    new: bool
    check: bundle_mod.Check | None = None
    left_behind: list[str] = field(default_factory=list)
    # Set only for a new arrival whose signature verified: the key to remember as a candidate.
    signer: SignerClaim | None = None


def list_bundles(home: Home, states: tuple[Place, ...] = ALL_STATES) -> list[Stored]:
    out: list[Stored] = []
    for state in states:
        d = home.state_dir(state)
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            continue
        for name in names:
            if is_id(name):
                out.append(Stored(id=name, state=state, path=d / name))
    return out


def find(home: Home, bundle_id: str) -> Stored | None:
    for state in ALL_STATES:
        p = home.state_dir(state) / bundle_id
        if p.is_dir():
            return Stored(id=bundle_id, state=state, path=p)
    return None


def resolve(home: Home, prefix: str, states: tuple[Place, ...] = ALL_STATES) -> Stored:
    """A unique prefix of an id, as in git. Ambiguous and unknown prefixes are errors that say so."""
    p = prefix.strip().lower()
    if not p or any(c not in "0123456789abcdef" for c in p):
        raise NotFoundError(f"{prefix!r} is not a bundle id or id prefix (hex digits)")
    # Names only: an object is made for a match, never for every bundle held.
    matches: list[Stored] = []
    for state in states:
        d = home.state_dir(state)
        if len(p) == 64:
            names = [p] if os.path.lexists(d / p) else []  # a whole id: one lookup, not a listing
        else:
            try:
                names = [n for n in os.listdir(d) if n.startswith(p)]
            except FileNotFoundError:
                continue
        matches.extend(Stored(id=n, state=state, path=d / n) for n in names if is_id(n))
    ids = {s.id for s in matches}
    if not matches:
        where = "any state" if states == ALL_STATES else " or ".join(states)
        raise NotFoundError(f"no bundle with id starting {p!r} in {where}")
    if len(ids) > 1:
        shown = ", ".join(sorted(i[:12] for i in ids))
        raise NotFoundError(f"id prefix {p!r} is ambiguous: it matches {shown}")
    # The same id in two states should never happen; prefer the inbox's view of it.
    order = {s: i for i, s in enumerate(ALL_STATES)}
    return sorted(matches, key=lambda s: order[s.state])[0]


def decisions(home: Home) -> Mapping[str, str]:
    """The decision the journal records for each bundle id: `accepted` or `rejected`, final.

    The first `accepted` or `rejected` entry for an id decides it, and so does a `reconciled`
    entry that records a rejection found on disk (a reject killed between its rename and its
    journal line). Nothing decides an id again: not the unattended rule, not a person, not an
    import of the same bundle after its copy was tidied away, and not `reconcile`, whose other
    entries only record where the bundle is now. An id with no decision is absent.
    Looked up one id at a time in the journal index (gage/journalfacts.py defines the rule).
    """
    return home.journal.index.decisions()


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
    home: Home, src: Path, *, event: ArrivalEvent = "imported", via: str | None = None, transport: dict[str, str] | None = None
) -> ImportResult:
    """Copy the bundle at `src` into `inbox/pending`. Bundles that fail checks still arrive
    (the verdict will say invalid); a folder that is not a bundle at all is refused.

    `transport`: what a carrier says about where the bundle came from (an A2A peer, the
    agent it names). Journaled with the arrival; the verdict shows it as a claim only.
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
        check_pending(home, manifest, _signature_of(src), limits)
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
        with home.lock():
            existing = find(home, bid)
            decided = decisions(home).get(bid)
            if existing is not None and existing.state == "pending" and decided is None and _replaces(existing, work / "b"):
                # The held copy was damaged on the way (or front-run by a damaged copy of the
                # same manifest and signature); this one checks out. Otherwise the genuine
                # bundle could never come in under its id. Never merged: the whole copy is swapped.
                _swap_in(home, existing.path, work / "b")
                result = bundle_mod.check(existing.path, expect_name=True)
                home.journal.append(event, **_arrival(copied, result, via, transport), replaced_invalid=True)
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
            check_pending(home, copied, _signature_of(work / "b"), limits)
            dest = home.state_dir("pending") / bid
            if not atomic.rename_noreplace(work / "b", dest):
                existing = find(home, bid)
                return ImportResult(id=bid, state=existing.state if existing else "pending", new=False)
            result = bundle_mod.check(dest, expect_name=True)
            home.journal.append(event, **_arrival(copied, result, via, transport))
        # A key that signed a bundle we hold is reported, for the caller to remember as a
        # candidate (ceremony.remember_signer); the store writes no contacts.
        signer = SignerClaim(copied.sender.key, copied.sender.name) if result.signature_ok else None
        return ImportResult(id=bid, state="pending", new=True, check=result, left_behind=left, signer=signer)
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    shutil.rmtree(trash, ignore_errors=True)


# --- the receiver's limits (spec/settings.md) ------------------------------------------------


def declared_bytes(m: Manifest) -> int:
    """A bundle's size as every limit counts it: manifest, signature and declared payload."""
    return len(m.raw) + signature_len(m.sender.key) + m.total_size


def _over(home: Home, what: str, setting: str, limit: int, need: int, advice: str = "") -> LimitError:
    where = settings_mod.path_of(home)
    highest = settings_mod.LIMITS[setting][2]
    raise_it = (
        f"To take it, raise the limit in {where}: [limits] {setting} = {need}"
        if need <= highest
        else f"This home cannot take it: [limits] {setting} in {where} goes up to {highest}"
    )
    return LimitError(
        f"{what}, over this home's limit of {limit} (limits.{setting}); nothing was imported. {advice}{raise_it}",
        setting=f"limits.{setting}",
        limit=limit,
    )


def check_limits(home: Home, m: Manifest, limits: settings_mod.Limits) -> None:
    """Files, path length and total bytes of one bundle, from its manifest alone."""
    short = m.id[:12]
    if len(m.files) > limits.max_files:
        raise _over(home, f"bundle {short} lists {len(m.files)} files", "max_files", limits.max_files, len(m.files))
    longest = max((len(f.path.encode("utf-8")) for f in m.files), default=0)
    if longest > limits.max_path_bytes:
        i = next(i for i, f in enumerate(m.files) if len(f.path.encode("utf-8")) == longest)
        what = f"bundle {short} has a path of {longest} bytes (files[{i}].path)"
        raise _over(home, what, "max_path_bytes", limits.max_path_bytes, longest)
    size = declared_bytes(m)
    if size > limits.max_bundle_bytes:
        raise _over(home, f"bundle {short} holds {size} bytes", "max_bundle_bytes", limits.max_bundle_bytes, size)


def _signature_of(root: Path) -> bytes | None:
    sig, _problem = bundle_mod.read_signature(root)
    return sig


def _verifies(m: Manifest, sig: bytes | None) -> bool:
    """Whether `sig` is the signature of the key `m` names. Until it is, that key is a claim:
    anyone can write a contact's key into a manifest, and must not escape the limits by it."""
    if sig is None:
        return False
    try:
        verify_manifest_signature(m.sender.key, m.raw, sig)
    except GageError:
        return False
    return True


# Pending bundles seen so far, by id and the stat of their manifest: (key, bytes, signed by it).
# An id is the hash of its manifest, so what it says never changes; the stat catches a copy
# changed in place by hand. Keeps a long-running watcher or server from re-reading pending.
_PENDING_CACHE: dict[tuple[str, int, int, int], tuple[bytes, int, bool]] = {}


def _pending_facts(path: Path) -> tuple[bytes, int, bool] | None:
    try:
        st = os.stat(path / bundle_mod.MANIFEST, follow_symlinks=False)
    except OSError:
        return None
    ck = (path.name, st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _PENDING_CACHE.get(ck)
    if hit is not None:
        return hit
    try:
        _raw, m = bundle_mod.read_manifest(path)
    except (GageError, OSError):
        return None  # not a bundle gage could have put there: nothing to count
    facts = (m.sender.key, declared_bytes(m), _verifies(m, _signature_of(path)))
    if len(_PENDING_CACHE) > 100_000:
        _PENDING_CACHE.clear()
    _PENDING_CACHE[ck] = facts
    return facts


def check_pending(home: Home, m: Manifest, sig: bytes | None, limits: settings_mod.Limits) -> None:
    """Bundles and bytes in `inbox/pending` from keys that are not confirmed contacts.

    Counted per key (`pending_per_key`, `pending_bytes_per_key`) and for all of them together
    (`pending_unconfirmed`, `pending_unconfirmed_bytes`: keys cost nothing to make, so a
    stranger could otherwise fill pending with one key per bundle). A bundle a confirmed
    contact signed is never counted nor refused. What a person accepts or rejects leaves
    pending and frees its place.
    """
    from .contacts import Contacts

    contacts = Contacts.load(home.contacts_path)
    confirmed = {c.key for c in contacts.confirmed.values() if c.status == "confirmed"}
    if m.sender.key in confirmed and _verifies(m, sig):
        return
    key_n = key_bytes = all_n = all_bytes = 0
    d = home.state_dir("pending")
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        names = []
    for name in names:
        if not is_id(name) or name == m.id:
            continue
        facts = _pending_facts(d / name)
        if facts is None:
            continue
        key, size, signed = facts
        if signed and key in confirmed:
            continue
        all_n += 1
        all_bytes += size
        if key == m.sender.key:
            key_n += 1
            key_bytes += size
    size = declared_bytes(m)
    who = f"key {key_text(m.sender.key)}"
    advice = (
        "Decide on what is in pending (accept or reject), confirm the sender with `gage pair` if you know them "
        "(a confirmed contact's bundles are not counted), or wait. "
    )
    if key_n + 1 > limits.pending_per_key:
        what = f"{who} is not a confirmed contact and already has {key_n} bundles in pending"
        raise _over(home, what, "pending_per_key", limits.pending_per_key, key_n + 1, advice)
    if key_bytes + size > limits.pending_bytes_per_key:
        what = f"{who} is not a confirmed contact and has {key_bytes} bytes in pending; with this bundle ({size}) that is {key_bytes + size}"
        raise _over(home, what, "pending_bytes_per_key", limits.pending_bytes_per_key, key_bytes + size, advice)
    if all_n + 1 > limits.pending_unconfirmed:
        what = f"keys that are not confirmed contacts already have {all_n} bundles in pending"
        raise _over(home, what, "pending_unconfirmed", limits.pending_unconfirmed, all_n + 1, advice)
    if all_bytes + size > limits.pending_unconfirmed_bytes:
        what = f"keys that are not confirmed contacts have {all_bytes} bytes in pending; with this bundle ({size}) that is {all_bytes + size}"
        raise _over(home, what, "pending_unconfirmed_bytes", limits.pending_unconfirmed_bytes, all_bytes + size, advice)
