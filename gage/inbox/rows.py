"""The inbox read model: one row per held bundle, as every reader shows it.

`gage list`, the interface, and every later reader (an MCP server, a carrier reporting what
landed) take their rows from here, so they agree row for row: the same verdict, the same
sender as the verdict names it, the same order. A reader is one reading of the home: the
contacts, the authority file, the journal facts (through the journal index) and the check
cache are read once for all its rows; each row's verdict is computed fresh from them
(gage.trust.verdict.compute), and a payload is hashed again only when its tree changed
(gage.home.cache.checks). Nothing here writes to the home but the check cache.
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
from gage.home.cache.checks import CheckCache
from gage.home.contacts import Contacts
from gage.home.journal.facts import JournalFacts
from gage.home.layout import ALL_STATES, Home
from gage.home.listing import Stored, list_bundles
from gage.inbox.rowshape import row_json
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
        return row_json(self, self.sender.to_json())


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
        checks: dict[str, Check] | None = None,
    ) -> None:
        self.home = home
        self.contacts: Contacts = Contacts.load(home.contacts_path)
        self.authority: AuthorityFile = load_authority(home, self.contacts)
        self.facts: JournalFacts = facts if facts is not None else home.journal.index.facts()
        self.cache: CheckCache = cache if cache is not None else CheckCache.of(home)
        # Manifests a caller already parsed (the interface's first, cheap rows), for the cache to reuse.
        self.parsed: dict[str, Manifest] = parsed if parsed is not None else {}
        # Checks a caller already has, by bundle folder (the row index's kept checks, proved fresh
        # by gage.inbox.listed): used as they are, neither the cache asked nor the bundle checked again.
        self.checks: dict[str, Check] = checks if checks is not None else {}
        self._keys: dict[bytes, KeyTrust] = {}  # each signing key's trust, computed once per reading

    def _check(self, stored: Stored) -> Check | None:
        ready = self.checks.pop(str(stored.path), None)
        if ready is not None:
            return ready
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
        stored = list(stored)
        if self.parsed:  # the interface's: each check reuses the parse it made
            checked = [(s, self._check(s)) for s in stored]
        else:  # all at once: a first listing's misses are checked on every core
            ready = {i: c for i, s in enumerate(stored) if (c := self.checks.pop(str(s.path), None)) is not None}
            at = [i for i, s in enumerate(stored) if i not in ready and s.path.is_dir()]
            found = dict(zip(at, self.cache.check_many([stored[i] for i in at]), strict=True))
            found.update(ready)
            checked = [(s, found.get(i)) for i, s in enumerate(stored)]
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

