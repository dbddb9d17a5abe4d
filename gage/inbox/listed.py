"""The inbox read model's rows as a listing shows them, kept in the row index, so a listing need not compute them all again.

`gage list`, `gage mcp`'s `list_bundles` and `gage verdict` start here. Each row is the row
gage.inbox.rows computes (`InboxReader`, `inbox_rows`: the one read model), taken from the row
index (gage/home/cache/rowindex.py says when a kept row may be used) when nothing it was computed
from changed, and computed through `InboxReader` otherwise. A module apart from rows.py so a
listing whose rows are all kept loads none of the verdict's code (start-up).
"""

from __future__ import annotations

import os

from gage.bundle import Check
from gage.format.errors import GageError
from gage.format.manifest import is_id
from gage.format.record import Frozen, set_field
from gage.home.cache.checks import dump_problems, listed_entries, problems_of
from gage.home.layout import ALL_STATES, Home
from gage.home.listing import Stored

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import Place
    from gage.home.cache.checks import CheckCache
    from gage.home.cache.rowindex import Kept
    from gage.inbox.rows import InboxRow


class ListedRow(Frozen):
    """A row as a listing shows it (`gage list`, `gage mcp`'s list), without the verdict object:
    what the row index (gage.home.cache.rowindex) keeps. `InboxRow.listed()` is the same row computed."""

    __slots__ = (
        "id",
        "state",
        "level",
        "kind",
        "subject",
        "created",
        "arrived",
        "size",
        "via",
        "accepted_how",
        "sender_label",
        "sender",
    )
    id: str
    state: Place
    level: str
    kind: str | None
    subject: str | None
    created: str | None
    arrived: str | None
    size: int | None
    via: str | None
    accepted_how: str | None
    sender_label: str
    sender: dict[str, Any]  # Sender.to_json()

    # One made per bundle a listing shows (10,000 at a time): nothing here but the fields.
    def __init__(
        self,
        id: str,
        state: Place,
        level: str,
        kind: str | None,
        subject: str | None,
        created: str | None,
        arrived: str | None,
        size: int | None,
        via: str | None,
        accepted_how: str | None,
        sender_label: str,
        sender: dict[str, Any],
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "state", state)
        set_field(self, "level", level)
        set_field(self, "kind", kind)
        set_field(self, "subject", subject)
        set_field(self, "created", created)
        set_field(self, "arrived", arrived)
        set_field(self, "size", size)
        set_field(self, "via", via)
        set_field(self, "accepted_how", accepted_how)
        set_field(self, "sender_label", sender_label)
        set_field(self, "sender", sender)

    def fields_by_name(self) -> dict[str, Any]:
        """The fields by name, as the row index stores them (`ListedRow(**fields)` is this row again)."""
        return {name: getattr(self, name) for name in self._fields}

    def to_json(self) -> dict[str, Any]:
        """The row of `gage list --json` (spec/cli.md), as `InboxRow.to_json`."""
        # Imported here: JSON only, not `gage list`'s start-up.
        from gage.inbox.rowshape import row_json

        return row_json(self, self.sender)


def listed_of(r: InboxRow) -> ListedRow:
    """The listed form of a computed row."""
    return ListedRow(
        id=r.id, state=r.state, level=r.level, kind=r.kind, subject=r.subject, created=r.created, arrived=r.arrived,
        size=r.size, via=r.via, accepted_how=r.accepted_how, sender_label=r.sender_label, sender=r.sender.to_json(),
    )


def listed_rows(home: Home, states: tuple[Place, ...] = ALL_STATES) -> list[ListedRow]:
    """`inbox_rows` as listed rows, in the same order, each from the row index when everything it
    was computed from is unchanged (gage.home.cache.rowindex says what), else computed (and kept)."""
    from gage.home.cache import rowindex

    index = rowindex.RowIndex(home)
    try:
        gen, (at, last) = rowindex.generation(home), rowindex.journal_end(home)
        old = index.stamp()
        named = rowindex.named_since(home, old) if old is not None and old.generation == gen else None
        kept = index.rows(states, gen) if named is not None else {}
        # What a row that cannot be used still gives: its check, when its folder is that tree (the
        # trust or the journal changed, not the bundle). Read whole only when the trust changed.
        prior = kept if named is not None else index.rows(states, None)
        if named is None:
            # The trust inputs changed (or nothing is kept): read them now, so a damaged contacts
            # file is an error naming it even when no row needs computing (an empty inbox).
            from gage.home.contacts import Contacts

            Contacts.load(home.contacts_path)
        out: list[ListedRow] = []
        misses: list[Stored] = []
        present: set[tuple[str, str]] = set()
        fresh_at = rowindex.fresh_at
        for state in states:
            # As list_bundles lists them, but a bundle whose row is kept costs no object until
            # its row is shown, and each is looked at from its state's folder, opened once.
            folder = home.state_dir(state)
            try:
                names = os.listdir(folder)
            except FileNotFoundError:
                continue
            try:
                dir_fd: int | None = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                dir_fd = None
            try:
                for name in names:
                    if not is_id(name):
                        continue
                    present.add((state, name))
                    k = kept.get((state, name))
                    if (
                        k is not None
                        and dir_fd is not None
                        and name not in named  # type: ignore[operator]
                        and (k.parent is None or k.parent not in named)  # type: ignore[operator]
                        and fresh_at(dir_fd, name, k)
                    ):
                        out.append(ListedRow(**k.row))
                    else:
                        misses.append(Stored(id=name, state=state, path=folder / name))
            finally:
                if dir_fd is not None:
                    os.close(dir_fd)
        fresh: dict[tuple[str, str], rowindex.Kept] = {}
        if misses:
            computed, fresh = _computed(home, misses, ready=_kept_checks(prior, misses))
            out.extend(computed)
        gone = [k for k in kept if k not in present]
        stamp = rowindex.Stamp(gen, at, last)
        # A listing that changed nothing writes nothing: a commit is an fsync and a checkpoint,
        # most of a small listing's time.
        unchanged = named is not None and not named and not fresh and not gone and stamp == old
        if not unchanged and rowindex.generation(home) == gen:  # nothing it was computed from changed meanwhile
            index.save(stamp, fresh, gone, clear=named is None, named=named or ())
    finally:
        index.close()
    order = {st: i for i, st in enumerate(ALL_STATES)}
    out.sort(key=lambda r: (order[r.state], r.created or "", r.id))  # the order of inbox_rows
    return out


def _kept_checks(prior: dict[tuple[str, str], Kept], misses: list[Stored]) -> dict[str, tuple[Check, Kept]]:
    """For each miss with a kept row whose folder is still that tree: the check the row came from
    (`check_of_kept`), and the row, by bundle folder."""
    out = {}
    for st in misses:
        k = prior.get((st.state, st.id))
        if k is not None and (c := check_of_kept(st, k)) is not None:
            out[str(st.path)] = (c, k)
    return out


def _computed(
    home: Home, misses: list[Stored], cache: CheckCache | None = None, ready: dict[str, tuple[Check, Kept]] | None = None
) -> tuple[list[ListedRow], dict[tuple[str, str], Kept]]:
    """The rows of `misses`, computed through the read model, and those of them the row index may
    keep: bundles that checked out, with the stat values their remembered check was proved over.
    `ready`: checks a kept row already gives (`_kept_checks`), kept again with its stat values."""
    from gage.home.cache import rowindex
    from gage.inbox.rows import InboxReader

    ready = ready or {}
    out: list[ListedRow] = []
    fresh: dict[tuple[str, str], rowindex.Kept] = {}
    reader = InboxReader(home, cache=cache, checks={where: c for where, (c, _k) in ready.items()})
    for r in reader.rows(misses):
        row = listed_of(r)
        out.append(row)
        m = r.verdict.manifest
        if m is None or r.verdict.problems:
            continue
        warnings = dump_problems(r.verdict.warnings)
        had = ready.get(str(r.verdict.path))
        if had is not None:  # its folder proved the same tree as its kept row's, just now
            k = had[1]
            fresh[(r.state, r.id)] = rowindex.Kept(k.digest, m.parent, k.entries, warnings, row.fields_by_name(), k.stats)
            continue
        proof = reader.cache.remembered_proof(r.verdict.path)
        if proof is not None:  # checked just now: the stat values it was proved over
            digest, entries, stats = proof
            fresh[(r.state, r.id)] = rowindex.Kept(digest, m.parent, entries, warnings, row.fields_by_name(), stats)
            continue
        earlier = reader.cache.remembered_digest(r.verdict.path)
        if earlier is not None:  # a check remembered before: its stat values are looked at when stored
            fresh[(r.state, r.id)] = rowindex.Kept(earlier, m.parent, listed_entries(m), warnings, row.fields_by_name())
    reader.cache.save()
    return out, fresh


def keep_landed(home: Home, landed: list[Stored]) -> int:
    """Rows for bundles a batch has just landed in pending, computed through the read model and kept
    in the row index as a listing keeps them, so the first listing after a fetch of thousands takes
    them from there instead of checking each again. How many were kept (a row is kept only for a
    bundle whose check the racy rule lets the check cache remember: gage.home.cache.checks; what is
    not kept is computed by the next listing, as before).

    The check is made again on the bundle where it now lies, after the batch's renames, and proved
    there; checks are remembered in this call only (no check cache file is read or written, so a
    fetch's memory does not grow with pending)."""
    from gage.bundle import fsclock, fstrust
    from gage.home.cache import rowindex
    from gage.home.cache.checks import CheckCache

    if not landed:
        return 0
    fsclock.wait_past(home.cache, home.state_dir("pending"))  # the batch's last rename into pending
    index = rowindex.RowIndex(home)
    try:
        gen, (at, last) = rowindex.generation(home), rowindex.journal_end(home)
        old = index.stamp()
        named = rowindex.named_since(home, old) if old is not None and old.generation == gen else None
        # One core: 256 checks took as long pooled (measured), and a fetch forks nothing.
        cache = CheckCache(None, home_root=home.root, trusted=fstrust.timestamps_trusted(home.root), clock=home.cache, pool=False)
        _rows, fresh = _computed(home, landed, cache)
        if rowindex.generation(home) == gen:  # nothing they were computed from changed meanwhile
            index.save(rowindex.Stamp(gen, at, last), fresh, (), clear=named is None, named=named or ())
    finally:
        index.close()
    return len(fresh)


def indexed_check(home: Home, stored: Stored) -> Check | None:
    """The check a kept row was computed from (gage.home.cache.rowindex), when the bundle's folder is
    still that tree: what `gage verdict ID` starts from, by one keyed lookup and one lstat per
    entry, instead of hashing the payload and verifying the signature again. None otherwise."""
    from gage.home.cache import rowindex

    index = rowindex.RowIndex(home)
    try:
        k = index.row(stored.state, stored.id)
    finally:
        index.close()
    return None if k is None else check_of_kept(stored, k)


def check_of_kept(stored: Stored, k: Kept) -> Check | None:
    """The check the kept row `k` was computed from, if the bundle's folder is still that tree (its
    stat values, compared before and after the manifest and signature are read); None otherwise."""
    from gage import bundle as bundle_mod
    from gage.home.cache import rowindex

    where = os.fspath(stored.path)
    if not rowindex.fresh_at(None, where, k):
        return None
    try:
        _raw, m = bundle_mod.read_manifest(stored.path)
        signature, problem = bundle_mod.read_signature(stored.path)
        warnings = problems_of(k.warnings)
    except (GageError, OSError, ValueError, TypeError):
        return None
    # Read, then looked at again: bytes changed while they were read change a ctime, so they show.
    if problem is not None or signature is None or not rowindex.fresh_at(None, where, k):
        return None
    return Check(path=stored.path, manifest=m, signature=signature, warnings=warnings, signature_verified=True)
