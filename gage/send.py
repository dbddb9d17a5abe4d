"""Making bundles from this home: new ones, replies, and forwards.

A new bundle is built in the home's staging area, renamed into `outbox/<id>` whole, and
recorded as sent in the journal: that record is what later lets this home recognise a
reply to something it really sent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import atomic
from . import bundle as bundle_mod
from .contacts import Contacts
from .errors import GageIOError, RefusedError, UsageError
from .home import Home
from .keys import key_text
from .manifest import KINDS, KINDS_NEEDING_PARENT, Hop, Manifest, Party
from .store import resolve


def _recipients(home: Home, names: list[str]) -> list[Party]:
    contacts = Contacts.load(home.contacts_path)
    return [Party(key=c.key, name=c.name) for c in (contacts.require(n) for n in names)]


def _publish(home: Home, work: Path, manifest: Manifest, copy_to: Path | None) -> Path:
    with home.lock():
        dest = home.state_dir("outbox") / manifest.id
        if not atomic.rename_noreplace(work, dest):
            raise RefusedError("a bundle with this id is already in the outbox", path=str(dest))
        home.journal.append(
            "sent",
            bundle=manifest.id,
            kind=manifest.kind,
            parent=manifest.parent,
            thread=manifest.thread_root,
            to=[key_text(p.key) for p in manifest.to],
            forwarded=[h.bundle for h in manifest.chain],
        )
    if copy_to is not None:
        copy_out(dest, copy_to)
    return dest


def copy_out(bundle_dir: Path, out_dir: Path) -> Path:
    """Copy a bundle to `out_dir/<id>` (a transport folder), whole or not at all."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GageIOError(f"cannot create output folder: {exc.strerror}", path=str(out_dir)) from exc
    final = out_dir / bundle_dir.name
    if final.exists():
        return final
    tmp = out_dir / f".{bundle_dir.name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(bundle_dir, tmp, symlinks=True)
        atomic.fsync_tree(tmp)
        tmp.rename(final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise GageIOError(f"cannot copy bundle: {exc.strerror}", path=str(final)) from exc
    return final


def create(
    home: Home,
    paths: list[Path],
    *,
    kind: str,
    to: list[str] | None = None,
    parent: str | None = None,
    subject: str | None = None,
    copy_to: Path | None = None,
) -> tuple[Manifest, Path]:
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    files = bundle_mod.collect_sources(paths)
    parties = _recipients(home, to or [])
    thread = None
    parent_id = None
    if parent is not None:
        stored = resolve(home, parent)
        pm = stored.manifest()
        if pm is None:
            raise RefusedError("the parent bundle's manifest cannot be read", path=str(stored.path))
        parent_id = stored.id
        thread = pm.thread_root
    elif kind in ("answer", "ack"):
        raise UsageError(f"a bundle of kind {kind!r} answers another: give --parent ID")
    if subject is not None and len(subject) > 1000:
        raise UsageError("the subject is longer than 1000 characters")
    work, manifest = bundle_mod.build(
        home.identity,
        files,
        staging=home.staging,
        kind=kind,
        to=parties,
        parent=parent_id,
        thread=thread,
        subject=subject,
    )
    try:
        dest = _publish(home, work, manifest, copy_to)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest, dest


def forward(home: Home, bundle_ref: str, *, to: list[str] | None = None, copy_to: Path | None = None) -> tuple[Manifest, Path]:
    """Sign the same payload bytes anew, recording earlier signers in `chain` as claims.

    Only a bundle that checks out may be forwarded: forwarding must never launder a
    tampered or forged bundle into one with a good signature.
    """
    stored = resolve(home, bundle_ref)
    result = bundle_mod.check(stored.path, expect_name=True)
    if not result.ok or result.manifest is None:
        first = result.first_error()
        raise RefusedError(f"will not forward a bundle that does not verify ({first})")
    original = result.manifest
    contacts = Contacts.load(home.contacts_path)
    known = contacts.by_key(original.sender.key)
    hop = Hop(
        key=original.sender.key,
        name=known.name if known else original.sender.name,
        bundle=original.id,
        kind=original.kind,
        created=original.created,
    )
    files = [(f.path, stored.path / bundle_mod.PAYLOAD / f.path) for f in original.files]
    work, manifest = bundle_mod.build(
        home.identity,
        files,
        staging=home.staging,
        # An answer or ack forwarded out of its thread travels as a share; the hop keeps the kind.
        kind="share" if original.kind in KINDS_NEEDING_PARENT else original.kind,
        to=_recipients(home, to or []),
        subject=original.subject,
        chain=[*original.chain, hop],
    )
    try:
        if [(f.path, f.sha256) for f in manifest.files] != [(f.path, f.sha256) for f in original.files]:
            raise RefusedError("the payload changed while it was being forwarded")
        dest = _publish(home, work, manifest, copy_to)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest, dest
