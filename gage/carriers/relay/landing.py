"""Opening an envelope and landing its bundle in `inbox/pending`, through the one import.

The only relay code that writes to a home. The envelope is opened into a scratch folder
(`tmp/import-relay-*`, which reconcile tidies if a crash leaves it), and the bundles a fetch
opened land together through the batched import (`landmany.import_many`) with the receiver's
limits, the journal and the candidate rule (`ceremony.remember_signers`) exactly as a folder
import does. Nothing here
accepts anything; a relay's say-so is journaled as a claim about where the bundle came from.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gage.carriers.relay import envelope, seal
from gage.format.errors import GageError
from gage.format.manifest import MANIFEST_LIMIT, Manifest
from gage.home import listing, sealing, settings
from gage.home.layout import Home
from gage.inbox import landmany
from gage.trust import ceremony, retirement
from gage.trust.limits import PendingTally, check_limits


@dataclass
class Opened:
    """What one envelope came to: a bundle landed (or already there), or a drop and why."""

    id: str | None
    state: str | None
    new: bool
    ok: bool
    dropped: str | None = None  # why the envelope was dropped, when it was
    stage: str | None = None
    notes: list[str] = field(default_factory=list)
    nbytes: int = 0  # the envelope's size, for a progress line (not in the JSON)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "new": self.new,
            "ok": self.ok,
            "dropped": self.dropped,
            "stage": self.stage,
        }


class Opener:
    """What opening an envelope needs from this home, read once for a fetch's batch, not per
    envelope: the sealing key (its file read and its binding verified), and the receiver's
    limits on a manifest, with pending listed and its budgets counted once. The limits here are
    only a first look, to spare writing what would be refused: the import counts again, the
    batch's own bundles included, under the lock."""

    def __init__(self, home: Home) -> None:
        key = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
        if key is None:
            raise seal.OpenError("this home has no sealing key: run `gage mailbox create` first")
        self.identity = key.identity
        receiver = settings.load(home).limits
        tally = PendingTally(home, receiver)
        decided = listing.decisions(home)

        def check(m: Manifest, sig: bytes) -> None:
            check_limits(home, m, receiver)
            if listing.find(home, m.id) is None and decided.get(m.id) is None:
                tally.check(m, sig)

        self.check = check


def open_into(home: Home, src: IO[bytes], dest: Path, opener: Opener | None = None) -> None:
    """Open one sealed envelope from `src` into the bundle folder `dest` (a scratch folder), the
    receiver's limits checked on its manifest before any payload byte is written. Raises a
    GageError (a drop, or GageIOError: this home's fault) when it cannot."""
    opener = opener if opener is not None else Opener(home)
    reader = envelope.Reader(dest, opener.check)
    seal.open_into(src, opener.identity, reader)
    reader.finish()


@dataclass
class Sealed:
    """An envelope opened into a scratch bundle folder, waiting to land with its batch."""

    bundle: Path
    transport: dict[str, str]
    digest: str


def land_opened(home: Home, opened: list[Sealed]) -> list[Opened | GageError]:
    """Land a batch of opened envelopes through the batched import (gage.inbox.landmany), the
    signers remembered and key statements applied as one import does. One outcome each, in
    order: an Opened once its journal line is in the journal, or the GageError that refused it
    alone (the caller drops it, or, a GageIOError, leaves it unacknowledged)."""
    items = [
        landmany.Incoming(o.bundle, "received", "relay", {"carrier": "relay", **o.transport, "envelope": o.digest})
        for o in opened
    ]
    def remember(batch: list[landmany.Outcome]) -> None:  # before the batch's rows are kept under the contacts
        results = [o for o in batch if not isinstance(o, GageError)]
        ceremony.remember_signers(home, results)
        retirement.apply_arrivals(home, [r.id for r in results if r.new])

    outcomes = landmany.import_many(home, items, after_batch=remember)
    out: list[Opened | GageError] = []
    for o in outcomes:
        if isinstance(o, GageError):
            out.append(o)
        else:
            out.append(Opened(id=o.id, state=o.state, new=o.new, ok=o.check.ok if o.check is not None else True))
    return out


# A dropped envelope's journal line is bounded (spec/relay.md section 6): the reason is cut here,
# and every name that came from the relay (an object's name) is kept only when it is gage's own
# form, else replaced by its SHA-256, so a stranger's header never grows the journal.
REASON_MAX = 500
REF_MAX = 80


def object_ref(name: str) -> str:
    """How the journal names an object envelope: `object:<its 32 hex name>`, or the name's hash."""
    if len(name) == 32 and all(c in "0123456789abcdef" for c in name):
        return f"object:{name}"
    return "object-sha256:" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()


def envelope_limit(limits: settings.Limits) -> int:
    """The most bytes an envelope may be and still hold a bundle within this home's limits: its
    plaintext (spec/relay.md section 3) at the most, sealed (the age header and 16 bytes a chunk)."""
    plain = 64 + MANIFEST_LIMIT + envelope.MAX_SIGNATURE + limits.max_files * (13 + 4096) + limits.max_bundle_bytes
    return seal.HEADER_MAX + 16 + plain + 16 * (plain // 65536 + 1)


def drop(home: Home, exc: GageError, *, transport: dict[str, str], digest: str, again: bool) -> Opened:
    """Journal an envelope that fails to open or holds no bundle, once, so it never stalls the mailbox.

    `again`: the relay says it delivered this message before; then the journal is searched
    for the same envelope first, so a crash between the journal line and the acknowledgement
    does not journal it twice.
    """
    reason = str(exc)[:REASON_MAX]
    if len(digest) > REF_MAX:
        digest = "sha256:" + hashlib.sha256(digest.encode("utf-8", "surrogateescape")).hexdigest()
    if not (again and _journaled(home, digest)):
        home.journal.append("envelope-dropped", envelope=digest, stage=exc.stage, message=reason, transport={"carrier": "relay", **transport})
    return Opened(id=None, state=None, new=False, ok=False, dropped=reason, stage=exc.stage)


def _journaled(home: Home, digest: str) -> bool:
    return any(e.get("event") == "envelope-dropped" and e.get("envelope") == digest for e in home.journal.iter_entries())


def digest_of_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
