"""Key statements that arrive: the carrier rule, and applying a statement or refusing it.

A statement from another key is applied only when it is signed by a key this home has
confirmed, and applying one can only lower trust: the key becomes `retired` (superseded:
its bundles stay verified, shown as the contact's previous key; compromised: nothing it
signed is verified again), and a replacement it names becomes a candidate linked to the
contact. Nothing here confirms a key: only the ceremony does. Every statement applied or
refused is journaled, with the reason. This home's own key is gage/inbox/ownkey.py's.
See spec/keys.md.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from gage import bundle as bundle_mod
from gage.bundle import safeopen
from gage.format import vocab
from gage.format.errors import (
    GageError,
    GageIOError,
    MalformedError,
    RefusedError,
)
from gage.format.keys import Identity, key_text, short_fingerprint
from gage.format.keys import statement as ks
from gage.format.keys.asjson import with_fingerprints
from gage.format.manifest import Manifest, now_text
from gage.format.vocab import Refusal, StatementWhy
from gage.home import listing
from gage.home.contacts import Contact, Contacts, Retirement
from gage.home.identity import load_identity
from gage.home.layout import Home
from gage.home.listing import Stored
from gage.trust.downgrade import downgrade_of

APPLIED: Final = "applied"
# Why a statement changes nothing (spec/keys.md section 4), in the order they are checked.
REFUSALS = vocab.REFUSALS


@dataclass
class Outcome:
    """What became of one statement: applied, or refused and why (a code from REFUSALS)."""

    why: StatementWhy
    message: str
    statement: ks.Statement | None = None
    contact: str | None = None
    escalated: bool = False
    replacement_linked: bool = False
    carrier: str | None = None

    @property
    def applied(self) -> bool:
        return self.why == APPLIED

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "why": self.why,
            "message": self.message,
            "statement": with_fingerprints(self.statement.to_json()) if self.statement else None,
            "contact": self.contact,
            "escalated": self.escalated,
            "replacement_linked": self.replacement_linked,
            "carrier": self.carrier,
        }


# --- finding a statement in a bundle ----------------------------------------------------


def is_statement_bundle(m: Manifest) -> bool:
    """The carrier rule: a `share` that starts no thread, with one payload file, `gage-key-statement.json`."""
    return m.kind == "share" and m.parent is None and len(m.files) == 1 and m.files[0].path == ks.FILE_NAME


def read_capped(path: Path, limit: int) -> bytes:
    """A statement file given by a person: a regular file, never through a symlink as its last
    component, never blocking on a FIFO, at most `limit` bytes, else an error that says so."""
    try:
        fd, _st = safeopen.open_regular(path)
    except safeopen.NotRegularFileError as exc:
        raise RefusedError("is not a regular file", path=str(path)) from exc
    except OSError as exc:
        raise GageIOError(f"cannot open: {exc.strerror}", path=str(path)) from exc
    return _read_fd_capped(fd, limit, str(path))


def _read_fd_capped(fd: int, limit: int, shown: str) -> bytes:
    """At most `limit` bytes from `fd` (closed here), else an error that says so."""
    try:
        data = safeopen.read_fd(fd, limit)
    except OSError as exc:
        raise GageIOError(f"cannot read: {exc.strerror}", path=shown) from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise MalformedError(f"is over the limit of {limit} bytes", path=shown)
    return data


def statement_in(path: Path, *, in_home: bool) -> tuple[bundle_mod.Check, bytes | None]:
    """The bundle's check, and the statement file's bytes if it is a statement bundle that checks out."""
    try:
        _raw, quick = bundle_mod.read_manifest(path)
    except GageError:
        quick = None
    if quick is None or not is_statement_bundle(quick):
        # Not a statement bundle (or not readable): no need to hash anything.
        return bundle_mod.Check(path=path, manifest=quick), None
    check = bundle_mod.check(path, expect_name=in_home)
    m = check.manifest
    if m is None or not is_statement_bundle(m) or not check.ok:
        return check, None
    rel = f"{bundle_mod.PAYLOAD}/{ks.FILE_NAME}"
    try:
        # Beneath the bundle, no link followed at any depth: a payload folder or file swapped
        # for a symlink (or a FIFO) since the check is refused, never followed or waited on.
        fd, _st = safeopen.open_regular_beneath(path, rel)
    except OSError as exc:
        why = "is not a regular file" if isinstance(exc, safeopen.NotRegularFileError) else exc.strerror
        check.problems.append(bundle_mod.Problem("tampered", rel, f"changed while being read ({why})"))
        return check, None
    data = _read_fd_capped(fd, ks.FILE_LIMIT, rel)
    if hashlib.sha256(data).hexdigest() != m.files[0].sha256:
        # Changed since the check: read nothing rather than something else.
        check.problems.append(bundle_mod.Problem("tampered", f"payload/{ks.FILE_NAME}", "changed while being read"))
        return check, None
    return check, data


def apply_bundle(home: Home, target: Stored | Path) -> Outcome | None:
    """Apply the statement a bundle carries. None when the bundle is not a statement bundle at all."""
    if isinstance(target, Stored):
        path, in_home = target.path, True
    else:
        path, in_home = Path(target), False
    check, data = statement_in(path, in_home=in_home)
    m = check.manifest
    if m is None or not is_statement_bundle(m):
        return None
    if data is None:
        first = check.first_error()
        return _refuse(
            home,
            "invalid-carrier",
            f"the bundle carrying it does not check out ({first}); a statement is read only from a bundle that does",
            None,
            carrier=m.id,
        )
    return apply_bytes(home, data, carrier=m.id)


def apply_arrivals(home: Home, ids: list[str]) -> list[Outcome]:
    """After any import (a folder, the watcher, an A2A file or a live delivery): apply the
    key statement a newly landed bundle carries, or journal why not (spec/keys.md section 4).

    One function for every arrival path, so no carrier is a way around the rules."""

    outcomes = []
    for bid in ids:
        stored = listing.find(home, bid)
        if stored is None:
            continue
        try:
            outcome = apply_bundle(home, stored)
        except GageError as exc:
            outcome = Outcome(why="error", message=f"key statement not applied: {exc}", carrier=bid)
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes


# --- applying a statement from another key ----------------------------------------------


def evaluate(signed: ks.Signed, contacts: Contacts, me: Identity) -> tuple[Literal["applied"] | Refusal, str]:
    """The decision on a parsed statement: APPLIED or a refusal code, and why. Changes nothing."""
    st = signed.statement
    fp = short_fingerprint(st.key)
    rfp = short_fingerprint(st.replacement) if st.replacement else None
    if not signed.signed_by_key():
        if signed.signed_by_replacement():
            return "new-key-only", (
                f"it is signed only by the replacement key {rfp}, not by the key it retires ({fp}): "
                "a new key can never retire an old one"
            )
        return "not-bound", (
            f"it is not signed by the key it speaks for ({fp}): a statement counts only when the key it retires signed it"
        )
    if st.replacement is not None and not signed.signed_by_replacement():
        return "replacement-unsigned", (
            f"it names a replacement key {rfp} that did not sign it: both keys sign, so no one can name someone "
            "else's key as theirs (if this is yours, countersign it with `gage key countersign`)"
        )
    down = downgrade_of(contacts, me, st.key)
    if down is not None:
        return "downgraded", f"it speaks for key {fp}, {down.sentence()}"
    if me.owns(st.key):
        return "own-key", f"it speaks for this home's own key {fp}: `gage key retire` retires it here"
    status = contacts.status_of(st.key)
    if status == "unknown":
        return "unknown-key", (
            f"it comes from key {fp}, which this home does not know: only a key you confirmed with the ceremony "
            "can retire itself here"
        )
    if status == "candidate":
        return "candidate-key", (
            f"it comes from key {fp}, a candidate never confirmed with the ceremony: a claim cannot retire anything here"
        )
    record = contacts.retirement_of(st.key)
    if record is not None:
        contact, r = record
        if r.statement == st.id:
            return "replayed", f"this same statement was already applied to {contact.name}'s key {fp} ({r.applied_at})"
        if r.reason == "superseded" and st.reason == "compromised":
            # Lowering trust is always allowed, whatever time it claims: otherwise a thief
            # could sign a far-future "superseded" first and shut the owner's warning out.
            return APPLIED, ""
        if r.reason == "compromised" and st.reason == "superseded":
            return "would-unretire", (
                f"{contact.name}'s key {fp} is retired as compromised; calling it superseded would make what it signed "
                "verified again, and nothing does that"
            )
        if st.retired_at <= r.retired_at:
            return "older", (
                f"it is not newer than the statement already applied to {contact.name}'s key {fp} "
                f"(it says {st.retired_at}; the one applied says {r.retired_at})"
            )
        return "already-retired", f"{contact.name}'s key {fp} is already retired as {r.reason}; this changes nothing"
    return APPLIED, ""


def apply_bytes(home: Home, data: bytes, *, carrier: str | None = None, source: str | None = None) -> Outcome:
    """Apply a signed statement file's bytes. Journals the outcome, applied or refused."""
    try:
        signed = ks.parse(data)
    except MalformedError as exc:
        return _refuse(home, "malformed", f"it is not a well-formed key statement: {exc}", None, carrier=carrier, source=source)
    st = signed.statement
    with home.lock():
        contacts = Contacts.load(home.contacts_path)
        me = load_identity(home.identity_path)  # afresh: another process may have retired a key of ours
        why, message = evaluate(signed, contacts, me)
        if why != APPLIED:
            return _refuse(home, why, message, st, carrier=carrier, source=source)
        was = contacts.retirement_of(st.key)
        # An escalation that names no replacement keeps the one named before (the history stays whole).
        named = st.replacement if st.replacement is not None else was[1].replacement if was is not None else None
        retirement = Retirement(st.reason, st.retired_at, named, st.id, now_text())
        contact = contacts.set_retirement(st.key, retirement)
        linked = False
        if st.replacement is not None and not me.owns(st.replacement):
            linked = contacts.link_replacement(
                st.replacement,
                st.name,
                f"named as the replacement by {contact.name}'s retired key (statement {st.id[:12]})",
                replaces=st.key,
                contact=contact.name,
            )
        contacts.save()
        home.journal.append(
            "key-statement-applied",
            statement=st.id,
            key=key_text(st.key),
            contact=contact.name,
            reason=st.reason,
            retired_at=st.retired_at,
            replacement=key_text(st.replacement) if st.replacement else None,
            escalated=was is not None,
            carrier=carrier,
            source=source,
        )
    return Outcome(
        why=APPLIED,
        message=_applied_message(st, contact, contacts, linked),
        statement=st,
        contact=contact.name,
        escalated=was is not None,
        replacement_linked=linked,
        carrier=carrier,
    )


def _applied_message(st: ks.Statement, contact: Contact, contacts: Contacts, linked: bool) -> str:
    fp = short_fingerprint(st.key)
    if st.reason == "superseded":
        out = (
            f"{contact.name}'s key {fp} is retired as superseded (as of {st.retired_at}, their claim). Bundles signed "
            f"with it stay verified and are shown as signed with {contact.name}'s previous key."
        )
    else:
        out = (
            f"{contact.name}'s key {fp} is retired as COMPROMISED (as of {st.retired_at}, their claim). No bundle "
            "signed with it is verified any more, whatever time it claims: anyone holding the key could have signed it."
        )
    if st.replacement is not None:
        if linked:
            out += (
                f" It names a new key {short_fingerprint(st.replacement)}: a candidate linked to {contact.name}, not "
                f"trusted until you confirm it with the ceremony (gage pair {short_fingerprint(st.replacement)} --name {contact.name})."
            )
        else:
            owner = contacts.owner_of(st.replacement)
            who = f"already your contact {owner.name}" if owner else "this home's own key"
            out += f" The new key it names, {short_fingerprint(st.replacement)}, is {who}."
    return out


def _refuse(
    home: Home,
    why: Refusal,
    message: str,
    st: ks.Statement | None,
    *,
    carrier: str | None = None,
    source: str | None = None,
) -> Outcome:
    home.journal.append(
        "key-statement-refused",
        why=why,
        message=message,
        statement=st.id if st else None,
        key=key_text(st.key) if st else None,
        carrier=carrier,
        source=source,
    )
    return Outcome(why=why, message=f"key statement refused, nothing changed: {message}", statement=st, carrier=carrier)
