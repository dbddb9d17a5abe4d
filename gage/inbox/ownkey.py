"""This home's own key: retire it (with a new key here, or one in another home), retire a
superseded key again as compromised, countersign as a replacement, publish a statement again.

Every change to the identity is one atomic rewrite of identity.json under the home lock,
journaled after it: the key switch and the record of the retirement land together or not
at all. A retired key never signs a bundle again, except the bundle carrying its own
statement. See spec/keys.md section 6.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gage.format.errors import RefusedError, UnknownKeyError, UsageError
from gage.format.keys import (
    Identity,
    RetiredKey,
    key_text,
    matches_ref,
    ref_digits,
    short_fingerprint,
)
from gage.format.keys import statement as ks
from gage.format.keys.file import KeyFile
from gage.format.manifest import Manifest, now_text
from gage.format.record import replace
from gage.format.signing import SecretKey
from gage.format.vocab import Reason
from gage.home import sealing, unlock
from gage.home.identity import load_identity, rewrite_identity
from gage.home.layout import Home
from gage.home.unlock import signing_identity
from gage.inbox import send


@dataclass
class Retired:
    """What `retire` or `countersign` did: the statement, and the bundle carrying it (if one was made)."""

    signed: ks.Signed
    identity: Identity  # this home's identity now
    bundle: Manifest | None
    path: Path | None


def _check_reason(reason: str) -> Reason:
    """`reason` as typed by a person, as one of the reasons a statement may carry."""
    for known in ks.REASONS:
        if reason == known:
            return known
    raise UsageError(f"unknown reason {reason!r}; expected one of {', '.join(ks.REASONS)}")


def retire(
    home: Home,
    *,
    reason: str,
    new: bool = False,
    replacement: KeyFile | None = None,
    copy_to: Path | None = None,
) -> Retired:
    """Retire this home's current key, with a statement signed by it.

    `new`: make a new identity here and name it as the replacement (it signs the statement
    too); bundles from now on are signed with it, and the old key stays this home's.
    `replacement`: the new key lives in another home; the statement is signed here by the
    old key only, and the other home countersigns it and sends it (`countersign`).
    Neither: the key is retired with no successor; this home signs nothing more.
    """
    known_reason = _check_reason(reason)
    if new and replacement is not None:
        raise UsageError("give --new or --replace-with, not both")
    with home.lock():
        me = signing_identity(home, load_identity(home.identity_path))
        done = me.current_retirement
        if done is not None:
            raise RefusedError(f"this home's key is already retired ({done.reason}, {done.retired_at}); it signs nothing more")
        successor = Identity.generate(me.name) if new else None
        new_key = successor.key if successor else replacement.key if replacement else None
        if new_key is not None and me.owns(new_key):
            raise RefusedError("the replacement is this home's own key (current or retired)")
        st = ks.build(me.key, name=me.name, reason=known_reason, retired_at=now_text(), replacement=new_key)
        signed = ks.Signed(
            statement=st,
            signature=ks.sign_retiring(me.secret, st),
            replacement_signature=ks.sign_replacement(successor.secret, st) if successor else None,
        )
        text = signed.to_bytes().decode("utf-8")
        record = RetiredKey(
            key=me.key,
            name=me.name,
            secret=me.secret.seed_bytes if successor else None,
            reason=reason,
            retired_at=st.retired_at,
            replacement=new_key,
            statement=text,
            origin="this home",
        )
        now = me.with_secret((successor or me).secret, (*me.retired, record))
        # One atomic rewrite switches the key and records the retirement together.
        rewrite_identity(now, home.identity_path)
        unlock.remember(home, now)
        if successor is not None:
            # The mailbox outlives the key: the same sealing key, bound by the new one (spec/keys.md
            # section 6), so what waits on the relay still opens and senders' bindings still verify.
            sealing.rebind(home.root, me, now)
        home.journal.append(
            "key-retired",
            key=key_text(me.key),
            reason=reason,
            retired_at=st.retired_at,
            replacement=key_text(new_key) if new_key else None,
            statement=st.id,
            new_key_here=successor is not None,
            awaiting_countersignature=replacement is not None,
        )
        if replacement is not None:
            return Retired(signed=signed, identity=now, bundle=None, path=None)
        manifest, dest = send.key_statement_bundle(home, signed.to_bytes(), subject=_subject(st), copy_to=copy_to)
    return Retired(signed=signed, identity=now, bundle=manifest, path=dest)


def upgrade(home: Home, *, copy_to: Path | None = None) -> Retired:
    """Replace an Ed25519-only key with a hybrid one (Ed25519 + ML-DSA-65), here.

    Nothing new in the format: the old key is retired as superseded by the existing key
    statement, signed by the old key and by the new hybrid one (`retire --new`). Contacts who
    confirmed the old key see the new one as a linked candidate, which only their ceremony
    confirms; what the old key signed stays verified as the contact's previous key.
    """
    me = home.identity
    if me.hybrid:
        raise RefusedError(f"this home's key {short_fingerprint(me.key)} is already hybrid (Ed25519 + ML-DSA-65): nothing to upgrade")
    return retire(home, reason="superseded", new=True, copy_to=copy_to)


def escalate(home: Home, ref: str, *, copy_to: Path | None = None) -> Retired:
    """Retire again, as compromised, a key this home retired as superseded (the old laptop was stolen after all).

    Signed with the old key's secret, which `--new` kept for this; the statement names no
    replacement (receivers keep the one named before). Lowering trust needs no other key.
    """
    with home.lock():
        me = signing_identity(home, load_identity(home.identity_path))
        record = own_retired(home, ref, me=me)
        if record.reason == "compromised":
            raise RefusedError(f"{short_fingerprint(record.key)} is already retired as compromised")
        secret = record.secret if record.secret is not None else me.secret.seed_bytes if record.key == me.key else None
        if secret is None:
            raise RefusedError(
                f"this home does not hold the secret of {short_fingerprint(record.key)} (it was retired in another "
                "home): retire it again there"
            )
        old = SecretKey.from_seed_bytes(secret)
        st = ks.build(record.key, name=record.name, reason="compromised", retired_at=now_text())
        signed = ks.Signed(statement=st, signature=ks.sign_retiring(old, st), replacement_signature=None)
        updated = replace(
            record, reason="compromised", retired_at=st.retired_at, statement=signed.to_bytes().decode("utf-8")
        )
        now = replace(me, retired=tuple(updated if r is record else r for r in me.retired))
        rewrite_identity(now, home.identity_path)
        unlock.remember(home, now)
        home.journal.append(
            "key-retired",
            key=key_text(record.key),
            reason="compromised",
            retired_at=st.retired_at,
            replacement=None,
            statement=st.id,
            new_key_here=False,
            awaiting_countersignature=False,
            escalated=True,
        )
        manifest, dest = send.key_statement_bundle(home, signed.to_bytes(), subject=_subject(st), copy_to=copy_to)
    return Retired(signed=signed, identity=now, bundle=manifest, path=dest)


def countersign(home: Home, data: bytes, *, copy_to: Path | None = None) -> Retired:
    """Sign, as the replacement, a statement another home's key made naming this home's key; then send it."""
    signed = ks.parse(data)
    st = signed.statement
    with home.lock():
        me = signing_identity(home, load_identity(home.identity_path))
        if st.replacement != me.key:
            raise RefusedError(
                "this statement does not name this home's key as the replacement"
                + (f" (it names {short_fingerprint(st.replacement)})" if st.replacement else " (it names none)")
            )
        if me.current_retirement is not None:
            raise RefusedError("this home's key is itself retired; it cannot take over from another key")
        if not signed.signed_by_key():
            raise RefusedError(f"the statement is not signed by the key it retires ({short_fingerprint(st.key)}): will not countersign it")
        if not signed.signed_by_replacement():
            signed = ks.Signed(st, signed.signature, ks.sign_replacement(me.secret, st))
        now = me
        if not any(r.key == st.key for r in me.retired):
            record = RetiredKey(
                key=st.key,
                name=st.name,
                secret=None,
                reason=st.reason,
                retired_at=st.retired_at,
                replacement=st.replacement,
                statement=signed.to_bytes().decode("utf-8"),
                origin="another home",
            )
            now = replace(me, retired=(*me.retired, record))
            rewrite_identity(now, home.identity_path)
            unlock.remember(home, now)
        home.journal.append("key-countersigned", key=key_text(st.key), reason=st.reason, statement=st.id)
        manifest, dest = send.key_statement_bundle(home, signed.to_bytes(), subject=_subject(st), copy_to=copy_to)
    return Retired(signed=signed, identity=now, bundle=manifest, path=dest)


def own_retired(home: Home, ref: str, *, me: Identity | None = None) -> RetiredKey:
    """One of this home's retired keys, by key text, fingerprint or a unique hex prefix (at least 8 digits)."""
    wanted = ref_digits(ref)
    if len(wanted) < 8 or any(c not in "0123456789abcdef" for c in wanted):
        raise UsageError("give at least 8 hex digits of the retired key (as `gage id` shows it)")
    me = me or home.identity
    matches = {r.key: r for r in me.retired if matches_ref(r.key, wanted)}
    if not matches:
        raise UnknownKeyError(f"this home has no retired key starting {wanted}")
    if len(matches) > 1:
        raise UsageError(f"{wanted} matches {len(matches)} retired keys; give more of the key")
    return next(iter(matches.values()))


def publish(home: Home, ref: str, *, copy_to: Path | None = None) -> Retired:
    """A new bundle carrying a statement this home already holds (to send it again, or to someone new)."""
    record = own_retired(home, ref)
    signed = ks.parse(record.statement.encode("utf-8"))
    if signed.statement.replacement is not None and not signed.signed_by_replacement():
        raise RefusedError(
            "this statement still needs the replacement key's signature: run `gage key countersign` in the home "
            "that holds the new key; that home sends it"
        )
    manifest, dest = send.key_statement_bundle(home, signed.to_bytes(), subject=_subject(signed.statement), copy_to=copy_to)
    return Retired(signed=signed, identity=home.identity, bundle=manifest, path=dest)


def _subject(st: ks.Statement) -> str:
    what = f"key statement: {st.name}'s key {short_fingerprint(st.key)} is retired ({st.reason})"
    if st.replacement is not None:
        what += f"; new key {short_fingerprint(st.replacement)}"
    return what[:1000]
