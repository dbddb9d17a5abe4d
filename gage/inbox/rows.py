"""The inbox read model: one row per held bundle, as every reader shows it.

`gage list`, the interface, and every later reader (an MCP server, a carrier reporting what
landed) take their rows from here, so they agree row for row: the same verdict, the same
sender as the verdict names it, the same order. A reader is one reading of the home: the
contacts, the authority file, the journal facts (through the journal index) and the check
cache are read once for all its rows; each row's verdict is computed fresh from them
(gage.trust.verdict.compute), and a payload is hashed again only when its tree changed
(gage.home.checkcache). Nothing here writes to the home but the check cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gage.bundle import Check
from gage.format.errors import GageError
from gage.format.manifest import Manifest
from gage.format.vocab import Place
from gage.home.authority import AuthorityFile
from gage.home.checkcache import CheckCache, dump_problems, listed_entries, problems_of
from gage.home.contacts import Contacts
from gage.home.journal.facts import JournalFacts
from gage.home.layout import ALL_STATES, Home
from gage.home.listing import Stored, list_bundles
from gage.trust.keytrust import KeyTrust
from gage.trust.limits import declared_bytes
from gage.trust.verdict import Sender, Verdict, compute, load_authority


@dataclass(frozen=True)
class InboxRow:
    """One held bundle as a reader shows it. `verdict` is the whole verdict (the frame and the
    bundle view read it); the other fields are what a one-line listing shows."""

    id: str
    state: Place
    verdict: Verdict
    # verified, unverified or invalid; `mine` for my own valid bundle in the outbox, where
    # "unverified" (no contact is me) would only mislead.
    level: str
    kind: str | None
    subject: str | None
    created: str | None  # the sender's clock (a claim)
    arrived: str | None  # when it first reached this home, from the journal
    size: int | None  # declared bytes: manifest, signature and payload (spec/settings.md)
    via: str | None  # the carrier that brought it, a claim (`a2a`, a file); None for a folder

    @property
    def sender(self) -> Sender:
        return self.verdict.sender

    @property
    def sender_label(self) -> str:
        """The sender in a one-line listing: `me`, a contact's name, or what the key is."""
        return "me" if self.sender.is_me else self.sender.describe()

    @property
    def accepted_how(self) -> str | None:
        return self.verdict.accepted_how

    def to_json(self) -> dict[str, Any]:
        """The row of `gage list --json` (spec/cli.md)."""
        return {
            "id": self.id,
            "state": self.state,
            "kind": self.kind,
            "created": self.created,
            "subject": self.subject,
            "verdict": self.level,
            "accepted_how": self.accepted_how,
            "sender": self.sender.to_json(),
        }


def row_of(stored: Stored, v: Verdict) -> InboxRow:
    m: Manifest | None = v.manifest
    level: str = v.verdict
    if stored.state == "outbox" and v.sender.is_me and level != "invalid":
        level = "mine"
    return InboxRow(
        id=stored.id,
        state=stored.state,
        verdict=v,
        level=level,
        kind=m.kind if m else None,
        subject=m.subject if m else None,
        created=m.created if m else None,
        arrived=v.seen.first_received if v.seen else None,
        size=declared_bytes(m) if m else None,
        via=v.transport.carrier if v.transport else None,
    )


class InboxReader:
    """One reading of a home, for many rows. Not kept past one listing (one command, one
    refresh of the interface): contacts, authority and the journal may change between them."""

    def __init__(
        self,
        home: Home,
        *,
        facts: JournalFacts | None = None,
        cache: CheckCache | None = None,
        parsed: dict[str, Manifest] | None = None,
    ) -> None:
        self.home = home
        self.contacts: Contacts = Contacts.load(home.contacts_path)
        self.authority: AuthorityFile = load_authority(home, self.contacts)
        self.facts: JournalFacts = facts if facts is not None else home.journal.index.facts()
        self.cache: CheckCache = cache if cache is not None else CheckCache.of(home)
        # Manifests a caller already parsed (the interface's first, cheap rows), for the cache to reuse.
        self.parsed: dict[str, Manifest] = parsed if parsed is not None else {}
        self._keys: dict[bytes, KeyTrust] = {}  # each signing key's trust, computed once per reading

    def _check(self, stored: Stored) -> Check | None:
        if not stored.path.is_dir():
            return None
        try:
            return self.cache.check(stored, parsed=self.parsed.pop(stored.id, None))
        except (GageError, OSError):
            return None

    def _compute(self, stored: Stored, check: Check) -> Verdict | None:
        try:
            return compute(
                self.home, stored, contacts=self.contacts, facts=self.facts, check=check, authority=self.authority, keys=self._keys
            )
        except (GageError, OSError):
            return None

    def verdict(self, stored: Stored) -> Verdict | None:
        """The verdict on one held bundle now, or None if it vanished while we looked."""
        check = self._check(stored)
        return None if check is None else self._compute(stored, check)

    def row(self, stored: Stored) -> InboxRow | None:
        v = self.verdict(stored)
        return None if v is None else row_of(stored, v)

    def rows(self, stored: Iterable[Stored]) -> list[InboxRow]:
        """Rows for these bundles, in the order given. Every bundle is checked first (through the
        cache), so one journal query covers them and the parents their manifests name."""
        checked = [(s, self._check(s)) for s in stored]
        parents = [c.manifest.parent for _s, c in checked if c is not None and c.manifest and c.manifest.parent]
        self.facts.prefetch([*(s.id for s, _c in checked), *parents])
        out = []
        for s, check in checked:
            v = None if check is None else self._compute(s, check)
            if v is not None:
                out.append(row_of(s, v))
        return out

    def finish(self, state: Place, present: Iterable[str]) -> None:
        """Forget cached checks of bundles no longer in `state`, and save what was learned."""
        self.cache.keep_only(state, set(present))
        self.cache.save()


ORDER = {st: i for i, st in enumerate(ALL_STATES)}


def inbox_rows(home: Home, states: tuple[Place, ...] = ALL_STATES, ids: Iterable[str] | None = None) -> list[InboxRow]:
    """The rows for every bundle held in `states` (or only those named in `ids`), by state, then
    the sender's clock, then id: the order of `gage list`."""
    reader = InboxReader(home)
    listed = list_bundles(home, states)
    wanted = set(ids) if ids is not None else None
    rows = reader.rows(s for s in listed if wanted is None or s.id in wanted)
    if wanted is None:
        for state in states:
            reader.cache.keep_only(state, {s.id for s in listed if s.state == state})
    reader.cache.save()
    rows.sort(key=lambda r: (ORDER[r.state], r.created or "", r.id))
    return rows


@dataclass(frozen=True)
class ListedRow:
    """A row as a listing shows it (`gage list`, `gage mcp`'s list), without the verdict object:
    what the row index (gage.home.rowindex) keeps. `InboxRow.listed()` is the same row computed."""

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

    def to_json(self) -> dict[str, Any]:
        """The row of `gage list --json` (spec/cli.md), as `InboxRow.to_json`."""
        return {
            "id": self.id,
            "state": self.state,
            "kind": self.kind,
            "created": self.created,
            "subject": self.subject,
            "verdict": self.level,
            "accepted_how": self.accepted_how,
            "sender": self.sender,
        }


def listed_of(r: InboxRow) -> ListedRow:
    return ListedRow(
        id=r.id, state=r.state, level=r.level, kind=r.kind, subject=r.subject, created=r.created, arrived=r.arrived,
        size=r.size, via=r.via, accepted_how=r.accepted_how, sender_label=r.sender_label, sender=r.sender.to_json(),
    )


def listed_rows(home: Home, states: tuple[Place, ...] = ALL_STATES) -> list[ListedRow]:
    """`inbox_rows` as listed rows, in the same order, each from the row index when everything it
    was computed from is unchanged (gage.home.rowindex says what), else computed (and kept)."""
    from gage.home import rowindex

    listed = list_bundles(home, states)
    index = rowindex.RowIndex(home)
    try:
        gen, (at, last) = rowindex.generation(home), rowindex.journal_end(home)
        old = index.stamp()
        named = rowindex.named_since(home, old) if old is not None and old.generation == gen else None
        kept = index.rows(states) if named is not None else {}
        out: list[ListedRow] = []
        misses: list[Stored] = []
        for s in listed:
            k = kept.get((s.state, s.id))
            if (
                k is not None
                and s.id not in named  # type: ignore[operator]
                and (k.parent is None or k.parent not in named)  # type: ignore[operator]
                and rowindex.digest_now(s.path, k.entries) == k.digest
            ):
                out.append(ListedRow(**k.row))
            else:
                misses.append(s)
        fresh: dict[tuple[str, str], rowindex.Kept] = {}
        if misses:
            reader = InboxReader(home)
            for r in reader.rows(misses):
                out.append(listed_of(r))
                m = r.verdict.manifest
                digest = reader.cache.remembered_digest(r.verdict.path) if m is not None and not r.verdict.problems else None
                if m is not None and digest is not None:
                    warnings = dump_problems(r.verdict.warnings)
                    fresh[(r.state, r.id)] = rowindex.Kept(digest, m.parent, listed_entries(m), warnings, listed_of(r).__dict__)
            reader.cache.save()
        if rowindex.generation(home) == gen:  # nothing it was computed from changed meanwhile
            present = {(s.state, s.id) for s in listed}
            index.save(rowindex.Stamp(gen, at, last), fresh, [k for k in kept if k not in present], clear=named is None)
    finally:
        index.close()
    out.sort(key=lambda r: (ORDER[r.state], r.created or "", r.id))
    return out


def indexed_check(home: Home, stored: Stored) -> Check | None:
    """The check a kept row was computed from (gage.home.rowindex), when the bundle's folder is
    still that tree: what `gage verdict ID` starts from, by one keyed lookup and one lstat per
    entry, instead of hashing the payload and verifying the signature again. None otherwise."""
    from gage import bundle as bundle_mod
    from gage.home import rowindex

    index = rowindex.RowIndex(home)
    try:
        k = index.row(stored.state, stored.id)
    finally:
        index.close()
    if k is None or rowindex.digest_now(stored.path, k.entries) != k.digest:
        return None
    try:
        _raw, m = bundle_mod.read_manifest(stored.path)
        signature, problem = bundle_mod.read_signature(stored.path)
        warnings = problems_of(k.warnings)
    except (GageError, OSError, ValueError, TypeError):
        return None
    # Read, then looked at again: bytes changed while they were read change a ctime, so they show.
    if problem is not None or signature is None or rowindex.digest_now(stored.path, k.entries) != k.digest:
        return None
    return Check(path=stored.path, manifest=m, signature=signature, warnings=warnings, signature_verified=True)
