"""This home's X25519 sealing key, and the signed binding that ties it to the signing key.

A sealing key lets others seal envelopes that only this home can open (age, X25519
recipients: spec/relay.md section 2). It is a different key from the Ed25519 signing key,
so a leak or a rotation of one never is the other; what joins them is a *binding*: a small
versioned statement, signed by the signing key, that names both. A sender trusts a sealing
key only as far as it trusts the signing key that bound it, so a directory or a card that
swaps the sealing key has to forge a signature by a key the ceremony confirmed.

This module is core code (PyNaCl only, no age library): the binding must be readable and
checkable wherever a key file or a contact is read. Keys are written in age's own text
forms (bech32 `age1...` and `AGE-SECRET-KEY-1...`), so `age -d -i` opens what is sealed.

Long because the key, its binding and the mailbox address named after it are one thing: the file,
the signed statement that binds it and the checks of both must agree, and are read together.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nacl.exceptions
import nacl.public
import nacl.secret
import nacl.signing
import nacl.utils

from gage.bundle import atomic
from gage.format import signing, strictjson
from gage.format.bech32 import bech32_decode, bech32_encode
from gage.format.errors import GageIOError, MalformedError, RefusedError
from gage.format.keys import Identity, key_text, parse_key
from gage.format.manifest import now_text, time_problem
from gage.home import homefile

BINDING_VERSION = 1
FILE_VERSION = 1
# The signing key signs the binding under its own context: never a manifest signature, a
# key statement or a directory record (spec/relay.md section 2).
BINDING_CONTEXT = b"gage/sealing-binding/v1\x00"
BINDING_LIMIT = 8192  # a binding names the signing key: 3984 characters for a hybrid one
FILE_NAME = "sealing.json"
FILE_LIMIT = 32768  # sealing.json: the identity and the carried binding, with a hybrid signature

RECIPIENT_HRP = "age"
IDENTITY_HRP = "age-secret-key-"
BINDING_FIELDS = {"gage-sealing-binding", "signing_key", "sealing_key", "bound_at"}
# A binding's signature as hex: Ed25519, or hybrid (Ed25519 then ML-DSA-65).
SIGNATURE_HEX = (2 * signing.ED25519_SIG_LEN, 2 * signing.HYBRID_SIG_LEN)
CARRIED_FIELDS = {"binding", "signature"}

def parse_recipient(text: object, *, field: str = "sealing_key") -> bytes:
    """The 32 bytes of an age X25519 recipient (`age1...`, lower case)."""
    if not isinstance(text, str) or not text.startswith("age1") or text != text.lower():
        raise MalformedError("a sealing key is an age X25519 recipient: `age1` and bech32, lower case", field=field)
    raw = bech32_decode(text, RECIPIENT_HRP)
    if raw is None or len(raw) != 32:
        raise MalformedError("not a valid age X25519 recipient (bad bech32 or length)", field=field)
    return raw


def recipient_text(public: bytes) -> str:
    return bech32_encode(RECIPIENT_HRP, public)


def identity_text(secret: bytes) -> str:
    """age's identity form: upper-case bech32 with the `AGE-SECRET-KEY-` prefix."""
    return bech32_encode(IDENTITY_HRP, secret).upper()


# --- the binding -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """`signing_key` says `sealing_key` is its sealing key, as of `bound_at` (its claim)."""

    raw: bytes  # the exact bytes signed
    signing_key: bytes
    sealing_key: str  # age1...
    bound_at: str
    signature: bytes

    def verifies(self) -> bool:
        return binding_verifies(self.signing_key, self.raw, self.signature)

    def to_carried(self) -> dict[str, str]:
        """The form carried in a key file, a card and a directory record."""
        return {"binding": self.raw.decode("utf-8"), "signature": self.signature.hex()}

    def to_json(self) -> dict[str, Any]:
        return {
            "signing_key": key_text(self.signing_key),
            "sealing_key": self.sealing_key,
            "bound_at": self.bound_at,
            "signed": self.verifies(),
        }


def sign_binding(signer: signing.SecretKey | nacl.signing.SigningKey, raw: bytes) -> bytes:
    """The one place a sealing-key binding is signed, by gage's one signing rule (gage.format.signing):
    Ed25519, and ML-DSA-65 beside it for a hybrid identity. The statement names the signer's whole
    key, so a hybrid signature cannot be cut down to its Ed25519 half."""
    return signing.sign(signer, BINDING_CONTEXT, raw)


def binding_verifies(key: bytes, raw: bytes, signature: bytes) -> bool:
    """The one place a binding signature is checked: True only for `key`'s signature over `raw`
    (both halves for a hybrid key)."""
    return signing.verifies(key, BINDING_CONTEXT, raw, signature)


def parse_binding_statement(raw: bytes) -> tuple[bytes, str, str]:
    """(signing key, sealing key, bound_at) from the exact statement bytes; closed schema."""
    if len(raw) > BINDING_LIMIT:
        raise MalformedError(f"a binding is at most {BINDING_LIMIT} bytes", field="binding")
    try:
        obj = strictjson.loads(raw, limit=BINDING_LIMIT, what="binding")
    except MalformedError as exc:  # not JSON names the binding, as a binding of the wrong shape does
        raise MalformedError(exc.message, field=exc.field or "binding") from None
    if not isinstance(obj, dict):
        raise MalformedError("a binding is a JSON object", field="binding")
    v = obj.get("gage-sealing-binding")
    if v != BINDING_VERSION or isinstance(v, bool):
        raise MalformedError(f"unknown binding version {v!r}; this gage reads version {BINDING_VERSION}", field="binding.gage-sealing-binding")
    if set(obj) != BINDING_FIELDS:
        extra = sorted(set(obj) ^ BINDING_FIELDS)
        raise MalformedError(f"a binding has exactly the fields {sorted(BINDING_FIELDS)} (not {extra})", field="binding")
    signer = parse_key(obj["signing_key"], field="binding.signing_key")
    parse_recipient(obj["sealing_key"], field="binding.sealing_key")
    problem = time_problem(obj["bound_at"])
    if problem is not None:
        raise MalformedError(problem, field="binding.bound_at")
    return signer, str(obj["sealing_key"]), str(obj["bound_at"])


def parse_carried(obj: Any, *, field: str = "sealing", members: tuple[str, str] | None = None) -> Binding:
    """A binding as carried in a key file, card or record. Checks the format, not the signature. Errors
    name the path into the input (`<field>.binding.sealing_key`); `members`, where a card keeps the two."""
    binding_at, signature_at = members or (f"{field}.binding", f"{field}.signature")
    if not isinstance(obj, dict) or set(obj) != CARRIED_FIELDS:
        raise MalformedError(f"must be an object with exactly {sorted(CARRIED_FIELDS)}", field=field)
    text, sig = obj["binding"], obj["signature"]
    if not isinstance(text, str):
        raise MalformedError("must be the binding's exact text", field=binding_at)
    if not isinstance(sig, str) or len(sig) not in SIGNATURE_HEX or any(c not in "0123456789abcdef" for c in sig):
        raise MalformedError(
            f"must be {2 * signing.ED25519_SIG_LEN} (Ed25519) or {2 * signing.HYBRID_SIG_LEN} (hybrid) lower-case hex digits",
            field=signature_at,
        )
    raw = text.encode("utf-8")
    try:
        signer_key, sealing, bound_at = parse_binding_statement(raw)
    except MalformedError as exc:  # the statement's fields are "binding" or "binding.<name>": under binding_at
        inner = (exc.field or "binding").removeprefix("binding")
        raise MalformedError(exc.message, field=binding_at + inner) from exc
    return Binding(raw=raw, signing_key=signer_key, sealing_key=sealing, bound_at=bound_at, signature=bytes.fromhex(sig))


def build_binding(signer: signing.SecretKey | nacl.signing.SigningKey, sealing_key: str, bound_at: str | None = None) -> Binding:
    when = bound_at or now_text()
    public = signing.SecretKey.of(signer).public
    raw = strictjson.dumps(
        {
            "gage-sealing-binding": BINDING_VERSION,
            "signing_key": key_text(public),
            "sealing_key": sealing_key,
            "bound_at": when,
        }
    )
    parse_binding_statement(raw)  # a writer never makes what a reader refuses
    return Binding(
        raw=raw,
        signing_key=public,
        sealing_key=sealing_key,
        bound_at=when,
        signature=sign_binding(signer, raw),
    )


# --- this home's sealing key ------------------------------------------------------------------


class SealingLocked(GageIOError):
    """The sealing secret is sealed with the identity and was not unlocked in this process: a fault
    of this home's own (never a reason to drop an envelope), fixed by giving the passphrase."""


@dataclass(frozen=True)
class SealingKey:
    """The X25519 secret (in age's text form) and the binding the signing key made for it.

    `sealed`: the file keeps the secret sealed with the identity (a protected home); then
    `opened` is None until `unlock` opened it in this process."""

    opened: bytes | None
    binding: Binding
    sealed: bool = False

    @property
    def secret(self) -> bytes:
        if self.opened is None:
            raise SealingLocked(
                "this home's sealing key is sealed with its passphrase-protected key and was not unlocked: "
                "give --passphrase-file FILE or --passphrase-fd N (or run at a terminal)"
            )
        return self.opened

    @property
    def identity(self) -> str:
        return identity_text(self.secret)

    @property
    def recipient(self) -> str:
        return self.binding.sealing_key


def path_of(root: Path) -> Path:
    return root / FILE_NAME


def _public(secret: bytes) -> bytes:
    return bytes(nacl.public.PrivateKey(secret).public_key)


# A protected home's sealing.json keeps the X25519 secret in a secretbox whose key is derived
# from the Ed25519 seed of the signing key that bound it: so it opens exactly when the identity
# is unlocked (the passphrase seals that seed), a passphrase change rewrites nothing here, and a
# key retired with --new keeps its seed in identity.json, so a file it sealed still opens.
FILE_KEY_PERSON = b"gage/sealingfile"  # BLAKE2b personalisation: 16 bytes
SEALED_FIELDS = {"gage-sealed-sealing-key", "nonce", "box"}
# Opened in this process, by file and box: `load` (which the relay's landing calls with the
# home's root only) finds the secret a command unlocked before it fetched.
_opened: dict[tuple[str, bytes], bytes] = {}


def file_key(ed25519_seed: bytes) -> bytes:
    return hashlib.blake2b(ed25519_seed[:32], digest_size=32, person=FILE_KEY_PERSON).digest()


def _read(root: Path) -> tuple[dict[str, Any], Binding] | None:
    p = path_of(root)
    raw = homefile.read_bytes(p, "sealing key", FILE_LIMIT)
    if raw is None:
        return None
    try:
        obj = strictjson.loads(raw, limit=FILE_LIMIT, what="sealing key")
        if not isinstance(obj, dict) or obj.get("gage-sealing-key") != FILE_VERSION or set(obj) not in (
            {"gage-sealing-key", "identity", "sealing"},
            {"gage-sealing-key", "sealed", "sealing"},
        ):
            raise MalformedError("not a gage sealing key file (version 1)")
        if "identity" in obj:
            ident = obj["identity"]
            secret = bech32_decode(ident, IDENTITY_HRP) if isinstance(ident, str) else None
            if secret is None or len(secret) != 32:
                raise MalformedError("identity is not an age X25519 identity")
            obj["identity"] = secret
        else:
            s = obj["sealed"]
            if not isinstance(s, dict) or set(s) != SEALED_FIELDS or s.get("gage-sealed-sealing-key") != 1:
                raise MalformedError("sealed must be {gage-sealed-sealing-key: 1, nonce, box}")
            nonce, box = s.get("nonce"), s.get("box")
            if not isinstance(nonce, str) or len(nonce) != 48 or any(c not in "0123456789abcdef" for c in nonce):
                raise MalformedError("sealed.nonce must be 24 bytes of lower-case hex")
            if not isinstance(box, str) or len(box) != 2 * (32 + 16) or any(c not in "0123456789abcdef" for c in box):
                raise MalformedError("sealed.box must be 48 bytes of lower-case hex")
            obj["sealed"] = (bytes.fromhex(nonce), bytes.fromhex(box))
        binding = parse_carried(obj["sealing"])
    except MalformedError as exc:
        raise MalformedError(f"sealing key file is damaged: {exc.message}", path=str(p)) from exc
    mode = os.stat(p).st_mode & 0o777
    if mode & 0o077:
        raise RefusedError(f"sealing key is readable by others (mode {mode:o}); run chmod 600 on it", path=str(p))
    if not binding.verifies():
        raise MalformedError("sealing key file is damaged: the binding does not verify", path=str(p))
    return obj, binding


def _check(root: Path, secret: bytes, binding: Binding) -> bytes:
    if recipient_text(_public(secret)) != binding.sealing_key:
        raise MalformedError("sealing key file is damaged: the binding does not match the key", path=str(path_of(root)))
    return secret


def load(root: Path, signing_key: bytes, *, owned: Callable[[bytes], bool] | None = None) -> SealingKey | None:
    """This home's sealing key, or None if it has none yet.

    A file bound by another signing key is this home's only if `owned` says that key is one
    of its own (a key retired here: the mailbox outlives the key, spec/keys.md section 6);
    otherwise it is treated as none. A sealed file's secret is there only once `unlock` opened it.
    """
    got = _read(root)
    if got is None:
        return None
    obj, binding = got
    if binding.signing_key != signing_key and not (owned is not None and owned(binding.signing_key)):
        return None
    if "identity" in obj:
        return SealingKey(opened=_check(root, obj["identity"], binding), binding=binding)
    return SealingKey(opened=_opened.get((str(path_of(root)), obj["sealed"][1])), binding=binding, sealed=True)


def _seed_of(identity: Identity, key: bytes) -> bytes | None:
    """The Ed25519 seed of one of `identity`'s keys (current, or retired with its secret kept here)."""
    if key == identity.key:
        return bytes(identity.secret.ed25519)
    r = identity.retirement_of(key)
    return r.secret[:32] if r is not None and r.secret is not None else None


def unlock(root: Path, identity: Identity) -> SealingKey | None:
    """This home's sealing key with its secret, opened with the (unlocked) identity if it is sealed."""
    got = _read(root)
    if got is None:
        return None
    obj, binding = got
    if "sealed" in obj:
        seed = _seed_of(identity, binding.signing_key)
        if seed is None:
            return None  # bound by a key this home does not hold: not its sealing key
        nonce, box = obj["sealed"]
        try:
            secret = nacl.secret.SecretBox(file_key(seed)).decrypt(box, nonce)
        except nacl.exceptions.CryptoError:
            raise MalformedError("sealing key file is damaged: its sealed secret does not open with this home's key", path=str(path_of(root))) from None
        _opened[(str(path_of(root)), box)] = _check(root, secret, binding)
    return load(root, identity.key, owned=identity.owns)


def _write(root: Path, secret: bytes, binding: Binding, seal_with: bytes | None) -> None:
    """sealing.json, atomically: plain, or (with `seal_with`, the binder's Ed25519 seed) sealed."""
    obj: dict[str, Any] = {"gage-sealing-key": FILE_VERSION}
    if seal_with is None:
        obj["identity"] = identity_text(secret)
    else:
        nonce = nacl.utils.random(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(file_key(seal_with)).encrypt(secret, nonce).ciphertext
        obj["sealed"] = {"gage-sealed-sealing-key": 1, "nonce": nonce.hex(), "box": box.hex()}
        _opened[(str(path_of(root)), box)] = secret
    obj["sealing"] = binding.to_carried()
    atomic.write_bytes(path_of(root), strictjson.dumps(obj) + b"\n", mode=0o600)


def ensure(root: Path, signer: signing.SecretKey | Identity) -> SealingKey:
    """This home's sealing key, made and bound on first use (call under the home lock).

    `signer`: the unlocked identity (gage.home.unlock.signing_identity), or its `.secret`. With the
    identity, a sealing key bound by one of its retired keys is bound again, the SAME key, under
    the current one (a mailbox outlives a key rotation: spec/keys.md section 6), and a protected
    identity keeps the secret sealed."""
    identity = signer if isinstance(signer, Identity) else None
    secret_key = signer.secret if isinstance(signer, Identity) else signer
    have = unlock(root, identity) if identity is not None else load(root, secret_key.public)
    if have is not None and have.binding.signing_key == secret_key.public:
        if identity is not None and identity.protected != have.sealed:
            protect_file(root, identity)
        return have
    secret = have.secret if have is not None else bytes(nacl.public.PrivateKey.generate())
    binding = build_binding(secret_key, recipient_text(_public(secret)))
    seal = bytes(secret_key.ed25519) if identity is not None and identity.protected else None
    _write(root, secret, binding, seal)
    return SealingKey(opened=secret, binding=binding, sealed=seal is not None)


def rebind(root: Path, old: Identity, new: Identity) -> SealingKey | None:
    """After `old`'s key was retired for `new`'s here (`gage key retire --new`): the same sealing
    key, bound by the new key, so the mailbox and what waits in it stay this home's."""
    have = unlock(root, old)
    if have is None or have.binding.signing_key != old.key:
        return None
    binding = build_binding(new.secret, have.recipient)
    _write(root, have.secret, binding, bytes(new.secret.ed25519) if new.protected else None)
    return SealingKey(opened=have.secret, binding=binding, sealed=new.protected)


def protect_file(root: Path, identity: Identity) -> None:
    """sealing.json sealed with the identity when it is protected, plain when it is not (`gage key
    protect` / `unprotect`); nothing if the home has no sealing key or it is another key's."""
    have = unlock(root, identity)
    if have is None or have.sealed == identity.protected:
        return
    seed = _seed_of(identity, have.binding.signing_key)
    if seed is None:
        return  # bound by a key whose secret this home does not hold: left as it is
    _write(root, have.secret, have.binding, seed if identity.protected else None)


def binding_digest(b: Binding) -> str:
    return hashlib.sha256(b.raw).hexdigest()


# --- the mailbox address ----------------------------------------------------------------------

MAILBOX_CONTEXT = b"gage/mailbox/v1\x00"
MAILBOX_PREFIX = "mb"


def mailbox_address(sealing_key: str) -> str:
    """A home's mailbox on a relay, derived from its sealing key (spec/relay.md section 1).

    A hash, not the key: the relay needs a name for a subject and never the key itself; and
    anyone holding the sealing key computes the same address, so a record that pairs a key
    with another address is caught by the reader (gage.carriers.relay.directory).
    """
    return MAILBOX_PREFIX + hashlib.sha256(MAILBOX_CONTEXT + parse_recipient(sealing_key)).hexdigest()[:40]


def is_mailbox_address(text: object) -> bool:
    return (
        isinstance(text, str)
        and len(text) == len(MAILBOX_PREFIX) + 40
        and text.startswith(MAILBOX_PREFIX)
        and all(c in "0123456789abcdef" for c in text[len(MAILBOX_PREFIX) :])
    )
