"""A passphrase seal over the secret part of identity.json (spec/keys.md section 11).

minisign and signify encrypt a secret key at rest by default; a copied backup or a stolen
laptop should not hand over the key that makes bundles verify for every contact. The seal
is Argon2id (libsodium's, through PyNaCl) from the passphrase to a 32-byte key, and an
XSalsa20-Poly1305 secretbox over the bytes of the plain identity file. The whole plain file
is sealed, not chosen fields, so whatever secret an identity holds (the Ed25519 seed, a
retired key's seed, and any half a later key type adds) is covered without this module
knowing its name.

The box authenticates: a wrong passphrase and a changed byte are the same failure, and
are told apart from a damaged file (which does not parse) by the stage of the error.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from typing import Any

import nacl.exceptions
import nacl.pwhash
import nacl.secret

from gage.format.errors import MalformedError, PassphraseError

SEALED_VERSION = 1
KDF = "argon2id13"
# The cost a new seal is made with: libsodium's MODERATE (3 passes over 256 MiB), about a
# second on the development machine (spec/keys.md section 11 has the measurement). The
# cost is stored in the file, so a reader follows whatever the writer chose within the
# bounds below.
OPSLIMIT = nacl.pwhash.argon2id.OPSLIMIT_MODERATE
MEMLIMIT = nacl.pwhash.argon2id.MEMLIMIT_MODERATE
# What a reader accepts: a hostile or damaged file must not make gage spin for an hour
# or allocate more memory than libsodium's SENSITIVE level (1 GiB).
OPSLIMIT_RANGE = (nacl.pwhash.argon2id.OPSLIMIT_MIN, 16)
MEMLIMIT_RANGE = (nacl.pwhash.argon2id.MEMLIMIT_MIN, nacl.pwhash.argon2id.MEMLIMIT_SENSITIVE)
SALT_BYTES = nacl.pwhash.argon2id.SALTBYTES  # 16
NONCE_BYTES = nacl.secret.SecretBox.NONCE_SIZE  # 24
KEY_BYTES = nacl.secret.SecretBox.KEY_SIZE  # 32
MAX_PASSPHRASE = 1024


@dataclass(frozen=True)
class Sealed:
    """A sealed secret as it is stored: the cost, the salt, the nonce, and the box (ciphertext and tag)."""

    opslimit: int
    memlimit: int
    salt: bytes
    nonce: bytes
    box: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "gage-sealed": SEALED_VERSION,
            "kdf": KDF,
            "opslimit": self.opslimit,
            "memlimit": self.memlimit,
            "salt": self.salt.hex(),
            "nonce": self.nonce.hex(),
            "box": base64.b64encode(self.box).decode("ascii"),
        }

    @classmethod
    def from_json(cls, obj: Any) -> Sealed:
        if not isinstance(obj, dict):
            raise MalformedError("the sealed secret is not an object", field="sealed")
        if obj.get("gage-sealed") != SEALED_VERSION or isinstance(obj.get("gage-sealed"), bool):
            raise MalformedError(f"not a sealed secret of version {SEALED_VERSION}", field="sealed.gage-sealed")
        extra = set(obj) - {"gage-sealed", "kdf", "opslimit", "memlimit", "salt", "nonce", "box"}
        if extra:
            raise MalformedError(f"unknown fields {sorted(extra)}", field="sealed")
        if obj.get("kdf") != KDF:
            raise MalformedError(f"unknown key derivation {obj.get('kdf')!r} (expected {KDF})", field="sealed.kdf")
        ops, mem = obj.get("opslimit"), obj.get("memlimit")
        for name, value, (lo, hi) in (("opslimit", ops, OPSLIMIT_RANGE), ("memlimit", mem, MEMLIMIT_RANGE)):
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise MalformedError(f"{name} must be a whole number from {lo} to {hi}", field=f"sealed.{name}")
        assert isinstance(ops, int) and isinstance(mem, int)
        salt = _hex(obj.get("salt"), SALT_BYTES, "salt")
        nonce = _hex(obj.get("nonce"), NONCE_BYTES, "nonce")
        text = obj.get("box")
        try:
            if not isinstance(text, str):
                raise ValueError
            box = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise MalformedError("box must be base64", field="sealed.box") from None
        if len(box) <= nacl.secret.SecretBox.MACBYTES:
            raise MalformedError("box is too short to hold anything", field="sealed.box")
        return cls(opslimit=ops, memlimit=mem, salt=salt, nonce=nonce, box=box)


@dataclass(frozen=True)
class SealKey:
    """A key derived from a passphrase, kept while a protected identity is unlocked so that a
    rewrite (a key retired) seals the new file again without asking twice."""

    opslimit: int
    memlimit: int
    salt: bytes
    key: bytes

    def __repr__(self) -> str:  # never print the key in a traceback or a log
        return f"SealKey(opslimit={self.opslimit}, memlimit={self.memlimit}, salt={self.salt.hex()})"


def _hex(value: object, n: int, name: str) -> bytes:
    if not isinstance(value, str) or len(value) != 2 * n or any(c not in "0123456789abcdef" for c in value):
        raise MalformedError(f"{name} must be {n} bytes as lower-case hex", field=f"sealed.{name}")
    return bytes.fromhex(value)


def check_passphrase(passphrase: bytes) -> bytes:
    if not passphrase:
        raise PassphraseError("the passphrase is empty")
    if len(passphrase) > MAX_PASSPHRASE:
        raise PassphraseError(f"the passphrase is longer than {MAX_PASSPHRASE} bytes")
    return passphrase


def derive(passphrase: bytes, salt: bytes, *, opslimit: int, memlimit: int) -> SealKey:
    key = nacl.pwhash.argon2id.kdf(KEY_BYTES, check_passphrase(passphrase), salt, opslimit=opslimit, memlimit=memlimit)
    return SealKey(opslimit=opslimit, memlimit=memlimit, salt=salt, key=key)


def new_key(passphrase: bytes) -> SealKey:
    """A key for a new seal: a fresh salt, at the documented cost."""
    return derive(passphrase, secrets.token_bytes(SALT_BYTES), opslimit=OPSLIMIT, memlimit=MEMLIMIT)


def seal(plain: bytes, key: SealKey, *, nonce: bytes | None = None) -> Sealed:
    """`nonce` is for the test vector only; a seal is always made with a fresh random one."""
    n = nonce if nonce is not None else secrets.token_bytes(NONCE_BYTES)
    box = nacl.secret.SecretBox(key.key).encrypt(plain, n).ciphertext
    return Sealed(opslimit=key.opslimit, memlimit=key.memlimit, salt=key.salt, nonce=n, box=box)


def open_sealed(sealed: Sealed, passphrase: bytes) -> tuple[bytes, SealKey]:
    """The plain bytes and the key that opened them; a wrong passphrase is PassphraseError."""
    key = derive(passphrase, sealed.salt, opslimit=sealed.opslimit, memlimit=sealed.memlimit)
    try:
        plain = nacl.secret.SecretBox(key.key).decrypt(sealed.box, sealed.nonce)
    except nacl.exceptions.CryptoError:
        raise PassphraseError("wrong passphrase (or the sealed key was changed): nothing was signed or written") from None
    return plain, key
