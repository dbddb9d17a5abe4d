"""Making bundles from this home: new ones, replies, and forwards.

A new bundle is built in the home's staging area, renamed into `outbox/<id>` whole, and
recorded as sent in the journal: that record is what later lets this home recognise a
reply to something it really sent.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from gage import bundle as bundle_mod
from gage.bundle import atomic
from gage.format.errors import GageIOError, RefusedError, UsageError
from gage.format.keys import MAX_CLAIMED_NAME, key_text
from gage.format.keys.statement import FILE_NAME
from gage.format.manifest import KINDS, KINDS_NEEDING_PARENT, Hop, Manifest, Party
from gage.format.vocab import Kind
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.home.listing import resolve
from gage.home.unlock import signing_identity
from gage.trust.keytrust import key_trust


def _signer(home: Home) -> None:
    """Bundles are signed with the current key only, and never with a retired one (spec/keys.md)."""
    done = home.identity.current_retirement
    if done is not None:
        where = (
            f"; its replacement {key_text(done.replacement)} lives in another home: send from there"
            if done.replacement is not None
            else "; make a new home (`gage init`) to send again"
        )
        raise RefusedError(f"this home's key is retired ({done.reason}, {done.retired_at}) and signs nothing more{where}")


def _recipients(home: Home, names: list[str]) -> list[Party]:
    contacts = Contacts.load(home.contacts_path)
    return [Party(key=c.key, name=c.name) for c in (contacts.require(n) for n in names)]


def _reply_recipients(home: Home, parent: Manifest) -> list[Party]:
    """Who a reply made with a parent and no `to` is addressed to (spec/gate.md, rule 3): the
    parent's signer, when it is a contact this home trusts; for a follow-up to a bundle of my
    own, the people that bundle was addressed to who are still trusted contacts. Otherwise
    nobody, as before. Naming them keeps a thread's unattended budget theirs: a reply that names
    nobody would let anyone who learns its id answer in that thread."""
    contacts = Contacts.load(home.contacts_path)
    if home.identity.owns(parent.sender.key):
        keys = [p.key for p in parent.to]
    else:
        keys = [parent.sender.key]
    out = []
    for key in keys:
        t = key_trust(home, contacts, key)
        if t.trusted and t.name:
            out.append(Party(key=key, name=t.name))
    return out


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
    _raw, manifest = bundle_mod.read_manifest(bundle_dir)
    try:
        # The listed files only, each no longer than the manifest declares (never a plain
        # tree copy, which would copy anything else there and expand a sparse file in full).
        bundle_mod.copy_bundle(bundle_dir, manifest, tmp)
        tmp.rename(final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise GageIOError(f"cannot copy bundle: {exc.strerror}", path=str(final)) from exc
    return final


def create(
    home: Home,
    paths: list[Path],
    *,
    kind: Kind,
    to: list[str] | None = None,
    parent: str | None = None,
    subject: str | None = None,
    copy_to: Path | None = None,
) -> tuple[Manifest, Path]:
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if copy_to is not None:
        home.refuse_inside(copy_to, "a copy of the bundle")
    _signer(home)
    files = bundle_mod.collect_sources(paths)
    parties = _recipients(home, to or [])
    me = signing_identity(home)  # asked once the sources are known to be good, before any hashing
    thread = None
    parent_id = None
    if parent is not None:
        stored = resolve(home, parent)
        pm = stored.manifest()
        if pm is None:
            raise RefusedError("the parent bundle's manifest cannot be read", path=str(stored.path))
        parent_id = stored.id
        thread = pm.thread_root
        if not to:
            parties = _reply_recipients(home, pm)
    elif kind in ("answer", "ack"):
        raise UsageError(f"a bundle of kind {kind!r} answers another: give --parent ID")
    if subject is not None and len(subject) > 1000:
        raise UsageError("the subject is longer than 1000 characters")
    work, manifest = bundle_mod.build(
        me,
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


def forward(
    home: Home, bundle_ref: str, *, to: list[str] | None = None, copy_to: Path | None = None, unverified: bool = False
) -> tuple[Manifest, Path]:
    """Sign the same payload bytes anew, recording earlier signers in `chain` as claims.

    Only a bundle that checks out may be forwarded: forwarding must never launder a
    tampered or forged bundle into one with a good signature. And only one signed by a key
    this home trusts now (confirmed by the ceremony, not retired: gage.trust.keytrust), unless
    `unverified`: then the hop names the key as unverified, never as a contact, so the
    receiver is not told "this came from carol" for what carol's thief may have signed.
    """
    if copy_to is not None:
        home.refuse_inside(copy_to, "a copy of the bundle")
    _signer(home)
    stored = resolve(home, bundle_ref)
    result = bundle_mod.check(stored.path, expect_name=True)
    if not result.ok or result.manifest is None:
        first = result.first_error()
        raise RefusedError(f"will not forward a bundle that does not verify ({first})")
    original = result.manifest
    trust = key_trust(home, Contacts.load(home.contacts_path), original.sender.key)
    if not trust.trusted and not unverified:
        raise RefusedError(
            f"will not forward a bundle signed by {trust.label()}: only a confirmed contact's unretired key vouches "
            "for what it signed. Pass --unverified to forward it anyway; the hop then says the key is unverified"
        )
    hop_name = trust.name if trust.trusted and trust.name else f"unverified: {original.sender.name}"[:MAX_CLAIMED_NAME]
    hop = Hop(
        key=original.sender.key,
        name=hop_name,
        bundle=original.id,
        kind=original.kind,
        created=original.created,
    )
    files = [(f.path, stored.path / bundle_mod.PAYLOAD / f.path) for f in original.files]
    work, manifest = bundle_mod.build(
        signing_identity(home),
        files,
        staging=home.staging,
        # An answer or ack forwarded out of its thread travels as a share; the hop keeps the kind.
        kind="share" if original.kind in KINDS_NEEDING_PARENT else original.kind,
        to=_recipients(home, to or []),
        subject=original.subject,
        chain=[*original.chain, hop],
        sizes={f.path: f.size for f in original.files},  # never more than the checked manifest declares
    )
    try:
        if [(f.path, f.sha256) for f in manifest.files] != [(f.path, f.sha256) for f in original.files]:
            raise RefusedError("the payload changed while it was being forwarded")
        dest = _publish(home, work, manifest, copy_to)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest, dest


def key_statement_bundle(home: Home, statement_file: bytes, *, subject: str, copy_to: Path | None = None) -> tuple[Manifest, Path]:
    """The bundle that carries a signed key statement (spec/keys.md section 3), signed with this home's key.

    The one bundle a key retired with no successor here still signs: the statement stands on
    its own signatures, so the carrier's signer adds no trust to it and takes none away.
    """
    if copy_to is not None:
        home.refuse_inside(copy_to, "a copy of the bundle")
    home.staging.mkdir(parents=True, exist_ok=True)
    src_dir = home.staging / f"statement-{secrets.token_hex(8)}"
    src_dir.mkdir(mode=0o700)
    try:
        src = src_dir / FILE_NAME
        src.write_bytes(statement_file)
        work, manifest = bundle_mod.build(signing_identity(home), [(FILE_NAME, src)], staging=home.staging, kind="share", subject=subject)
        try:
            dest = _publish(home, work, manifest, copy_to)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(src_dir, ignore_errors=True)
    return manifest, dest
