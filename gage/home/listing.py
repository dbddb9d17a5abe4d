"""Bundles held in a home: where each is, found by id or unique prefix, and the decisions the
journal records. Storage only: what a bundle is worth is gage.trust's to say."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gage import bundle as bundle_mod
from gage.format.errors import GageError, NotFoundError
from gage.format.manifest import Manifest, is_id
from gage.format.record import Record
from gage.home.layout import ALL_STATES, Home

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from gage.format.vocab import Place


class Stored(Record):
    __slots__ = ("id", "state", "path")
    id: str
    state: Place
    path: Path

    def __init__(self, id: str, state: Place, path: Path) -> None:
        # Plain assignments: `gage list` makes one of these for every bundle held.
        self.id = id
        self.state = state
        self.path = path

    def manifest(self) -> Manifest | None:
        try:
            return bundle_mod.read_manifest(self.path)[1]
        except GageError:
            return None


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


# The shortest id prefix taken, except where exactly one bundle is held (spec/cli.md, "Ids").
MIN_PREFIX = 4


def _held(home: Home) -> int:
    """How many bundles this home holds, in every place, counted by name (stops at two)."""
    n = 0
    for state in ALL_STATES:
        try:
            n += sum(1 for name in os.listdir(home.state_dir(state)) if is_id(name))
        except FileNotFoundError:
            continue
        if n > 1:
            break
    return n


def resolve(home: Home, prefix: str, states: tuple[Place, ...] = ALL_STATES) -> Stored:
    """A unique prefix of an id, as in git. Ambiguous and unknown prefixes are errors that say so."""
    p = prefix.strip().lower()
    if not p or any(c not in "0123456789abcdef" for c in p):
        raise NotFoundError(f"{prefix!r} is not a bundle id or id prefix (hex digits)")
    if len(p) < MIN_PREFIX and _held(home) != 1:
        # As git does: a prefix this short would soon match more than one bundle, and an
        # accept or reject must not land on a bundle the person did not mean.
        raise NotFoundError(f"give at least {MIN_PREFIX} hex digits of the id ({p!r} is too short)")
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
    Looked up one id at a time in the journal index (gage/home/journal/facts.py defines the rule).
    """
    return home.journal.index.decisions()


