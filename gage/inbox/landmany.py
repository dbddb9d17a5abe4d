"""Many bundles brought in at once, each by the rules of one import (`store.import_bundle`).

A mailbox or a folder of a thousand bundles paid one import each: a lock, an fsync per file
and folder, a journal line and its fsync, pending listed again for the limits. A batch pays
those once: every bundle is read, limited, copied (its fsyncs left out) and checked outside
the lock; then the copies are synced together (`atomic.sync_trees`: one fsync per file and
folder, waited for together); then, under one home lock, each is placed in pending by the
single import's rules (already there, replaces an invalid copy, limits and pending budgets
counted against what pending holds now and what the batch has placed so far), the renames
left unsynced and pending fsynced once; then the batch's journal lines in one write and one
fsync (`journal.append_many`).

What each bundle comes to is its own: a refusal (not a bundle, over a limit, a copy that
fails) is that bundle's outcome, never the batch's. A bundle is reported landed only once its
journal line is in the journal. If the journal write fails (a full disk, an interrupt), the
journal is read back: a bundle whose line is there is landed; one whose line is not is moved
back out of pending, so the journal never says `received` or `imported` for what is not in
pending, and pending never holds what the journal does not name (spec/journal.md, "Batches").
A kill at any point leaves what reconcile already repairs: scratch copies (`tmp/import-*`),
or a bundle renamed into pending before its line, recorded as found (never as received).

Long because the batch's steps (read, stage, sync, place under the lock, journal, undo) are one
sequence whose crash states are argued together above; split, the argument would span files.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gage import bundle as bundle_mod
from gage.bundle import atomic, readonly
from gage.format.errors import GageError, GageIOError, MalformedError, RefusedError
from gage.format.keys import key_text
from gage.format.manifest import Manifest
from gage.format.sanitize import (
    os_error_text,  # the CLI's own words for one (the file cut short)
)
from gage.format.vocab import ArrivalEvent
from gage.home import settings as settings_mod
from gage.home.journal.lines import iter_lines, open_journal, parse_line, rfind_newline
from gage.home.layout import Home
from gage.home.listing import Stored, decisions, find
from gage.trust.ceremony import SignerClaim
from gage.trust.limits import PendingTally, check_limits, signature_of

# A batch is bounded by count and by declared bytes, not by how many wait: memory and the
# time an envelope waits for its acknowledgement stay flat however full the mailbox is.
BATCH_COUNT = 256
BATCH_BYTES = 64 << 20
# A batch keeps its rows in the row index only when it landed this many: keeping costs a few ms
# a batch (the index opened, the trust files hashed, one commit), more than the next listing pays
# to compute a handful of rows, and a lone arrival (one import, an A2A delivery) stays as quick.
KEEP_ROWS_MIN = 16


@dataclass
class ImportResult:
    id: str
    state: str
    new: bool
    check: bundle_mod.Check | None = None
    left_behind: list[str] = field(default_factory=list)
    # Set only for a new arrival whose signature verified: the key to remember as a candidate.
    signer: SignerClaim | None = None


def arrival_fields(m: Manifest, result: bundle_mod.Check, via: str | None, transport: dict[str, str] | None) -> dict[str, object]:
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


def replaces(existing: Stored, incoming: Path) -> bool:
    """A copy held in pending that does not check out, and an incoming copy that does."""
    if not bundle_mod.check(incoming).ok:
        return False
    return not bundle_mod.check(existing.path, expect_name=True).ok


def swap_in(home: Home, held: Path, incoming: Path) -> None:
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


@dataclass
class Incoming:
    """One bundle folder to bring in, and what its carrier says about it."""

    src: Path
    event: ArrivalEvent = "imported"
    via: str | None = None
    transport: dict[str, str] | None = None


Outcome = ImportResult | GageError


@dataclass
class _Staged:
    index: int
    item: Incoming
    path: Path
    manifest: Manifest
    check: bundle_mod.Check
    left: list[str] = field(default_factory=list)


def import_many(
    home: Home,
    items: Sequence[Incoming],
    *,
    lock_timeout: float | None = None,
    on_outcome: Callable[[int, Outcome], None] | None = None,
    after_batch: Callable[[list[Outcome]], None] | None = None,
    batch_count: int = BATCH_COUNT,
    batch_bytes: int = BATCH_BYTES,
) -> list[Outcome]:
    """Bring in every item, in batches; one outcome per item, in order: an ImportResult, or
    the GageError that refused that item alone. `on_outcome(i, outcome)` is called as each
    batch's outcomes are final (for a progress line, or to acknowledge an envelope);
    `after_batch(outcomes)` once a batch's outcomes are all reported, for what the caller does
    with a batch that changes the trust files (a new signer remembered as a candidate), before
    the batch's rows are kept under them (`keep_rows`).

    A fault of this home that ends a batch (a lock not free in time, the copies that cannot
    be synced, the journal that cannot be written) is every affected item's GageIOError;
    an interrupt (KeyboardInterrupt) propagates after the batch is left consistent."""
    out: list[Outcome | None] = [None] * len(items)
    limits = settings_mod.load(home).limits
    pending: list[tuple[int, Incoming]] = []
    size = 0
    read: dict[int, tuple[bytes, Manifest]] = {}  # each manifest read once: for the bound, then the import

    def flush() -> None:
        nonlocal size
        if pending:
            landed = []
            done = _one_batch(home, pending, limits, lock_timeout, read)
            for i, o in done:
                out[i] = o
                if on_outcome is not None:
                    on_outcome(i, o)
                if isinstance(o, ImportResult) and o.new and o.state == "pending":
                    landed.append(Stored(id=o.id, state="pending", path=home.state_dir("pending") / o.id))
            if after_batch is not None:
                after_batch([o for _i, o in done])
            keep_rows(home, landed)
        pending.clear()
        read.clear()
        size = 0

    for i, item in enumerate(items):
        pending.append((i, item))
        size += _declared(i, item.src, read)
        if len(pending) >= batch_count or size >= batch_bytes:
            flush()
    flush()
    return [o if o is not None else GageIOError("not imported", path=str(items[i].src)) for i, o in enumerate(out)]


def keep_rows(home: Home, landed: list[Stored]) -> None:
    """The batch's rows kept in the row index (gage.inbox.listed.keep_landed), once the batch is
    durable and its outcomes given to `on_outcome`, when it landed KEEP_ROWS_MIN or more: only a
    cache, so a fault here costs the next listing the time, never the batch. (The relay
    acknowledges after `import_many` returns, so after this: a crash in between brings an
    envelope again, and it is "already there", as a crash before its acknowledgement always did.)"""
    if len(landed) < KEEP_ROWS_MIN:
        return
    from gage.inbox.listed import keep_landed

    try:
        keep_landed(home, landed)
    except Exception:  # noqa: BLE001, S110 - a cache's write: the next listing computes these rows instead
        pass


def _declared(i: int, src: Path, read: dict[int, tuple[bytes, Manifest]]) -> int:
    """What a folder will cost its batch: the bytes its manifest declares (0 for what is no
    bundle, which is refused without a copy). Never a walk of the folder, which a sender fills.
    The manifest read is kept in `read`, so the import does not read it again."""
    try:
        if Path(src).is_symlink():
            return 0  # refused as a symlink, never read through
        read[i] = bundle_mod.read_manifest(src)
        return read[i][1].total_size
    except Exception:  # noqa: BLE001 - only a size for the batch's bound; the import says what is wrong
        return 0


def _one_batch(
    home: Home, items: list[tuple[int, Incoming]], limits: settings_mod.Limits, lock_timeout: float | None, read: dict[int, tuple[bytes, Manifest]]
) -> list[tuple[int, Outcome]]:
    out: dict[int, Outcome] = {}
    try:
        home.staging.mkdir(parents=True, exist_ok=True)
        work = home.staging / f"import-batch-{secrets.token_hex(8)}"
        work.mkdir(mode=0o700)
    except OSError as exc:
        failed = GageIOError(f"cannot make a scratch folder ({exc.strerror or exc}); nothing was imported", path=str(home.staging))
        return [(i, failed) for i, _item in items]
    try:
        staged = _stage_all(home, items, work, limits, out, read)
        try:
            atomic.sync_trees(s.path for s in staged)
        except OSError as exc:
            failed = GageIOError(f"cannot make the copies durable ({exc.strerror or exc}); nothing was imported", path=str(work))
            for s in staged:
                out[s.index] = failed
            staged = []
        if staged:
            _place_all(home, staged, work, limits, lock_timeout, out)
    finally:
        readonly.remove_tree(work)
    return sorted(out.items())


def _stage_all(
    home: Home, items: list[tuple[int, Incoming]], work: Path, limits: settings_mod.Limits, out: dict[int, Outcome], read: dict[int, tuple[bytes, Manifest]]
) -> list[_Staged]:
    """Read, limit, copy (unsynced), seal and check each item, outside the lock; a refusal is the item's."""
    # Counted before the lock only to spare copying what would be refused; counted again under it.
    tally = PendingTally(home, limits)
    decided = decisions(home)
    staged = []
    for i, item in items:
        try:
            staged.append(_stage(home, i, item, work / str(i), limits, tally, decided, read.get(i)))
        except GageError as exc:
            out[i] = exc
        except OSError as exc:  # a file-system error no stage caught: exit 7 naming the file, as ever
            out[i] = os_error(exc, item.src)
        except Exception as exc:  # noqa: BLE001 - whatever one folder does, the others still come in
            out[i] = unforeseen(exc)
    return staged


def os_error(exc: OSError, src: Path) -> GageIOError:
    """A file-system error no stage caught, on one bundle: its outcome, naming the file (exit 7)."""
    return GageIOError(f"{os_error_text(exc)}; nothing was imported")


def unforeseen(exc: Exception) -> GageError:
    """An error nobody foresaw on one bundle (a tree too deep for a walk, a name that cannot be
    encoded): that bundle's outcome, named by its type, never the batch's. The error itself is
    its cause, for a caller of one import to raise as before (store.import_bundle)."""
    out = GageError(f"could not import it: {type(exc).__name__}: {exc}".rstrip(": "))
    out.__cause__ = exc
    return out


def _stage(
    home: Home, i: int, item: Incoming, dst: Path, limits: settings_mod.Limits, tally: PendingTally, decided: object,
    read: tuple[bytes, Manifest] | None = None,
) -> _Staged:
    src = Path(item.src)
    if src.is_symlink():
        raise RefusedError("is a symlink; give the bundle directory itself", path=str(src))
    # Raises MalformedError for not-a-bundle. What the source says is only a plan: the id is taken
    # from the copy below, so a read before the batch began is as good as one now.
    _raw, manifest = read if read is not None else bundle_mod.read_manifest(src)
    check_limits(home, manifest, limits)
    fresh = find(home, manifest.id) is None and decided.get(manifest.id) is None  # type: ignore[attr-defined]
    if fresh:
        tally.check(manifest, signature_of(src))
    try:
        left = bundle_mod.copy_bundle(src, manifest, dst, durable=False)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise GageIOError(f"cannot copy the bundle ({where}{exc.strerror or exc}); nothing was imported", path=str(src)) from exc
    try:
        _raw2, copied = bundle_mod.read_manifest(dst)  # the id comes from the bytes held now
    except GageError as exc:
        raise MalformedError(f"changed while being imported: {exc.message}", path=str(src)) from exc
    readonly.seal(dst, copied)  # landed read-only (gage/bundle/readonly.py)
    result = bundle_mod.check(dst)  # before the lock: only the rename and the journal line follow it
    if fresh:
        tally.add(copied, result.signature_ok)
    return _Staged(i, item, dst, copied, result, left)


def _place_all(
    home: Home, staged: list[_Staged], work: Path, limits: settings_mod.Limits, lock_timeout: float | None, out: dict[int, Outcome]
) -> None:
    """Under one lock: each staged copy to pending (or already there), pending synced once, one journal write."""
    with home.lock(timeout=lock_timeout):
        decided = decisions(home)
        tally = PendingTally(home, limits)
        lines: list[tuple[ArrivalEvent, dict[str, object]]] = []
        landed: list[tuple[_Staged, Path]] = []
        try:
            for s in staged:
                try:
                    out[s.index] = _place(home, s, decided, tally, limits, lines, landed)
                except GageError as exc:
                    out[s.index] = exc
                except OSError as exc:
                    out[s.index] = os_error(exc, s.item.src)
                except Exception as exc:  # noqa: BLE001 - one bundle's, as above
                    out[s.index] = unforeseen(exc)
            if landed:
                _fsync_strict(home.state_dir("pending"))
        except (OSError, KeyboardInterrupt) as exc:
            # Renamed but not yet journaled: moved back out of pending, so pending never holds
            # what the journal does not name; an interrupt then goes on up.
            failed = GageIOError(f"cannot make pending durable ({getattr(exc, 'strerror', None) or exc!r}); nothing was imported", path=str(home.state_dir("pending")))
            _undo(home, landed, out, failed)
            if not isinstance(exc, OSError):
                raise
            moved = {s.manifest.id for s, _d in landed}
            lines = [ln for ln in lines if not _is_arrival_of(ln, moved)]
            landed = []
        if lines:
            _journal(home, lines, landed, out)


def _place(
    home: Home,
    s: _Staged,
    decided: object,
    tally: PendingTally,
    limits: settings_mod.Limits,
    lines: list[tuple[ArrivalEvent, dict[str, object]]],
    landed: list[tuple[_Staged, Path]],
) -> ImportResult:
    """One bundle by the single import's rules (gage.inbox.store.import_bundle), its journal line deferred."""
    it, bid = s.item, s.manifest.id
    existing = find(home, bid)
    dec = decided.get(bid)  # type: ignore[attr-defined]
    if existing is not None and existing.state == "pending" and dec is None and replaces(existing, s.path):
        # The held copy does not check out and this one does: swapped in whole (durably), as one import does.
        swap_in(home, existing.path, s.path)
        lines.append((it.event, {**arrival_fields(s.manifest, s.check, it.via, it.transport), "replaced_invalid": True}))
        s.check.path = existing.path
        return ImportResult(id=bid, state="pending", new=True, check=s.check, left_behind=s.left, signer=_signer(s))
    if existing is not None or dec is not None:
        state = existing.state if existing is not None else str(dec)
        again: dict[str, object] = {"bundle": bid, "again": True, "state": state}
        if it.via:
            again["via"] = it.via
        if it.transport:
            again["transport"] = it.transport
        lines.append((it.event, again))
        return ImportResult(id=bid, state=state, new=False)
    check_limits(home, s.manifest, limits)
    tally.check(s.manifest, None, signed=s.check.signature_ok)
    dest = home.state_dir("pending") / bid
    if not atomic.rename_noreplace(s.path, dest, durable=False):
        held = find(home, bid)
        return ImportResult(id=bid, state=held.state if held else "pending", new=False)
    tally.add(s.manifest, s.check.signature_ok, dest)
    lines.append((it.event, arrival_fields(s.manifest, s.check, it.via, it.transport)))
    landed.append((s, dest))
    s.check.path = dest
    return ImportResult(id=bid, state="pending", new=True, check=s.check, left_behind=s.left, signer=_signer(s))


def _signer(s: _Staged) -> SignerClaim | None:
    return SignerClaim(s.manifest.sender.key, s.manifest.sender.name) if s.check.signature_ok else None


def _is_arrival_of(line: tuple[ArrivalEvent, dict[str, object]], ids: set[str]) -> bool:
    fields = line[1]
    return fields.get("bundle") in ids and not fields.get("again")


def _fsync_strict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _journal(home: Home, lines: list[tuple[ArrivalEvent, dict[str, object]]], landed: list[tuple[_Staged, Path]], out: dict[int, Outcome]) -> None:
    """The batch's lines in one write. If that fails, the journal is read back: what it names is
    landed; what it does not is moved back out of pending and reported not imported."""
    start = _whole_end(home)
    try:
        home.journal.append_many(lines)
    except (Exception, KeyboardInterrupt) as exc:  # a kill (no handler runs) is reconcile's to record
        named = _arrivals_since(home, start)
        missing = [(s, d) for s, d in landed if s.manifest.id not in named]
        why = str(exc) if isinstance(exc, GageError) else type(exc).__name__
        _undo(home, missing, out, GageIOError(f"the journal could not record the arrival ({why}); nothing was imported"))
        if not isinstance(exc, GageError):
            raise


def _undo(home: Home, landed: Iterable[tuple[_Staged, Path]], out: dict[int, Outcome], failed: GageIOError) -> None:
    """Move bundles the journal does not name back out of pending (to the batch's scratch, removed after).
    A move back that fails too leaves the bundle in pending, where reconcile records it as found."""
    for s, dest in landed:
        with contextlib.suppress(OSError):
            os.rename(dest, s.path)
        out[s.index] = failed
    with contextlib.suppress(OSError):
        _fsync_strict(home.state_dir("pending"))


def _whole_end(home: Home) -> int:
    """Where the journal's whole lines end now (a torn tail is cut and kept by the next append)."""
    fd = open_journal(home.journal.path)
    if fd is None:
        return 0
    try:
        return rfind_newline(fd, os.fstat(fd).st_size) + 1
    finally:
        os.close(fd)


def _arrivals_since(home: Home, start: int) -> set[str]:
    """Bundle ids of the arrival lines written after `start` (this batch's, under its lock)."""
    named: set[str] = set()
    with contextlib.suppress(GageError, OSError):
        fd = open_journal(home.journal.path)
        if fd is None:
            return named
        try:
            for _at, line in iter_lines(fd, start, os.fstat(fd).st_size):
                obj = parse_line(line)
                if obj is not None and isinstance(obj.get("bundle"), str) and not obj.get("again"):
                    named.add(obj["bundle"])
        finally:
            os.close(fd)
    return named
