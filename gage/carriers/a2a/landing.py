"""Landing bundles read from A2A in `inbox/pending`, through the same import as a folder.

Split out of `artifact`: this is the only A2A code that writes to a home, and
it writes through `store.import_bundle` alone, so nothing reaches the inbox by a path of
its own and a task state or a message never accepts anything.
"""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gage import bundle as bundle_mod
from gage.carriers.a2a.reader import Carried, parse, parse_bytes
from gage.carriers.a2a.wire import MANIFEST_PART, SIGNATURE_PART, Limits
from gage.format.errors import GageIOError
from gage.home import listing, settings
from gage.home.layout import Home
from gage.inbox import store
from gage.trust import ceremony
from gage.trust.limits import check_limits, check_pending


@dataclass
class Landed:
    id: str
    state: str
    new: bool
    ok: bool
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # the first check failure, when the bundle does not verify

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "new": self.new, "ok": self.ok, "notes": self.notes, "problem": self.problem}


def _write(root: Path, c: Carried) -> None:
    """Lay the carried bytes out as a bundle folder for `store.import_bundle` to read.

    Nothing here is fsynced: this scratch folder is only read back by the import, whose copy
    (bundle_build.copy_bundle) is what lands and fsyncs each file and each folder once, and
    it is removed either way. A crash leaves at most this scratch folder (named import-*, so
    reconcile tidies it), never a half-written bundle in pending; fsyncing the scratch too
    would sync every file twice.
    """
    root.mkdir(parents=True)
    (root / MANIFEST_PART).write_bytes(c.manifest.raw)
    (root / SIGNATURE_PART).write_bytes(c.signature)
    payload = root / bundle_mod.PAYLOAD
    payload.mkdir()
    for path, data in c.files.items():
        dest = payload / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "xb") as f:
            f.write(data)


def land(
    home: Home, carried: list[Carried], *, transport: dict[str, str] | None = None, lock_timeout: float | None = None
) -> list[Landed]:
    """Bring checked bundles into `inbox/pending`, through the same import as a folder.

    `transport` is what the carrier says about where this came from (protocol, peer,
    file): journaled with the arrival and shown by the verdict as a claim.
    """
    # The receiver's limits for every bundle first (spec/settings.md), so a message or task
    # over one lands nothing at all, and no scratch copy is written for a bundle refused.
    # import_bundle checks them again under the lock.
    receiver = settings.load(home).limits
    for c in carried:
        check_limits(home, c.manifest, receiver)
        if listing.find(home, c.id) is None and listing.decisions(home).get(c.id) is None:
            check_pending(home, c.manifest, c.signature, receiver)
    out: list[Landed] = []
    home.staging.mkdir(parents=True, exist_ok=True)
    for c in carried:
        fields = {"carrier": "a2a", "protocol": c.protocol, **(transport or {}), **c.claims}
        work = home.staging / f"import-a2a-{secrets.token_hex(8)}"
        try:
            try:
                _write(work / "b", c)
            except OSError as exc:
                raise GageIOError(f"cannot write the bundle: {exc.strerror or exc}; nothing was imported", path=str(home.staging)) from exc
            res = store.import_bundle(home, work / "b", event="received", via="a2a", transport=fields, lock_timeout=lock_timeout)
            ceremony.remember_signer(home, res)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        ok = res.check.ok if res.check is not None else True
        first = res.check.first_error() if res.check is not None and not ok else None
        out.append(Landed(id=res.id, state=res.state, new=res.new, ok=ok, notes=list(c.notes), problem=str(first) if first else None))
    return out


def receive(
    home: Home,
    obj: Any,
    *,
    protocol: str | None = None,
    transport: dict[str, str] | None = None,
    limits: Limits | None = None,
) -> list[Landed]:
    """Parse everything first, then land: a refusal anywhere writes nothing."""
    carried = parse(obj, protocol=protocol, limits=limits or Limits.of(home))
    return land(home, carried, transport=transport)


def receive_bytes(
    home: Home,
    data: bytes,
    *,
    protocol: str | None = None,
    transport: dict[str, str] | None = None,
    limits: Limits | None = None,
) -> list[Landed]:
    carried = parse_bytes(data, protocol=protocol, limits=limits or Limits.of(home))
    return land(home, carried, transport=transport)
