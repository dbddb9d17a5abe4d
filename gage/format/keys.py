"""Identities (Ed25519, or hybrid Ed25519 + ML-DSA-65), public key text, key files, and the
domain-separated manifest signature.

A gage signature is made over a fixed prefix followed by the manifest bytes, so a
signature made by gage can never be replayed as a signature over anything else the
same key might sign (and vice versa). The signing rule itself, classical or hybrid, is
gage/format/signing.py's, shared by every signed object.
"""

from __future__ import annotations

import dataclasses
import hashlib
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import nacl.signing

from gage.format import signing, strictjson
from gage.format.errors import (
    BadSignatureError,
    GageError,
    MalformedError,
    UsageError,
)
from gage.format.fingerprint import fingerprint
from gage.format.lockedkey import LockedSigningKey

if TYPE_CHECKING:
    from gage.format import (
        keyseal,  # imported where a key is sealed or opened (argon2 and secrets cost start-up)
    )

KEY_PREFIX = "ed25519:"
# A hybrid key's text: the Ed25519 key's 64 hex digits, then the ML-DSA-65 key's 3904.
HYBRID_PREFIX = "ed25519+mldsa65:"
SIGNATURE_CONTEXT = b"gage/manifest/v1\x00"
SIGNATURE_LEN = signing.ED25519_SIG_LEN  # a classical signature; a hybrid one is HYBRID_SIGNATURE_LEN
HYBRID_SIGNATURE_LEN = signing.HYBRID_SIG_LEN
# What `manifest.sig` is read for at most: a hybrid signature (3373 bytes) with room to spare.
SIGNATURE_CAP = signing.SIGNATURE_CAP
KEYFILE_VERSION = 1
# A hybrid key's text is 3984 characters, and a key file may carry the home's sealing-key binding (spec/relay.md),
# which names that key again and holds a hybrid signature (6746 hex digits): 32 KiB hold both and a 200-character
# name in any script.
KEYFILE_LIMIT = 32768
# An identity file also keeps this home's retired keys and their statements.
IDENTITY_LIMIT = 1 << 20
MAX_CLAIMED_NAME = 200


def key_text(key: bytes) -> str:
    """The export form of a public key: `ed25519:` and 64 lower-case hex digits, or for a
    hybrid key `ed25519+mldsa65:` and 3968 (the Ed25519 key first, then the ML-DSA-65 key)."""
    return (HYBRID_PREFIX if signing.is_hybrid(key) else KEY_PREFIX) + key.hex()


def parse_key(text: object, *, field: str = "key") -> bytes:
    if not isinstance(text, str):
        raise MalformedError("a key must be a string", field=field)
    if text.startswith(HYBRID_PREFIX):
        hexpart, digits = text[len(HYBRID_PREFIX) :], 2 * signing.HYBRID_KEY_LEN
    elif text.startswith(KEY_PREFIX):
        hexpart, digits = text[len(KEY_PREFIX) :], 2 * signing.ED25519_KEY_LEN
    else:
        raise MalformedError(f"a key must start with {KEY_PREFIX!r} or {HYBRID_PREFIX!r}", field=field)
    try:
        key = bytes.fromhex(hexpart) if len(hexpart) == digits else None
    except ValueError:
        key = None
    # fromhex takes upper case and spaces too: only exact lower-case hex gives back the same text.
    # (Checked this way, in C, because a hybrid key's 3968 digits are read for every manifest listed.)
    if key is None or key.hex() != hexpart:
        raise MalformedError(f"a key must be {digits} lower-case hex digits after the prefix", field=field)
    return key


def short_fingerprint(key: bytes) -> str:
    """A glanceable label for a key (gage/format/fingerprint.py). Not a security check: the word-pairs are.

    A hybrid key's label is made from both halves, so it never equals the label of its own
    Ed25519 half offered alone (a downgrade shows as a different key)."""
    return fingerprint(key)


def key_shown(key: bytes) -> str:
    """A key for a person to read in one line: the key text of a classical key; a hybrid key's
    3984 characters would bury the line, so it is named by its fingerprint (its full text is in
    `--json` and in `gage key export`)."""
    if signing.is_hybrid(key):
        return f"hybrid key {short_fingerprint(key)}, Ed25519 + ML-DSA-65"
    return key_text(key)


def key_scheme(key: bytes) -> str:
    """What the verdict and the frame say of a key: `hybrid` or `classical-only`. A fact, not a warning."""
    return "hybrid" if signing.is_hybrid(key) else "classical-only"


def matches_ref(key: bytes, wanted: str) -> bool:
    """`wanted` (lower-case hex, dashes removed) starts the key's hex or its short fingerprint."""
    return key.hex().startswith(wanted) or short_fingerprint(key).replace("-", "").startswith(wanted)


def ref_digits(ref: str) -> str:
    """A key as a person types it (key text, a fingerprint, hex digits) reduced to hex digits."""
    wanted = ref.strip().lower()
    for prefix in (HYBRID_PREFIX, KEY_PREFIX):
        wanted = wanted.removeprefix(prefix)
    return wanted.replace("-", "")


def key_digest(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()


def check_local_name(name: str) -> str:
    """Names the human types for contacts: printable, one line, not empty, not padded."""
    if not isinstance(name, str) or not name or len(name) > 64:
        raise UsageError("a name must be 1 to 64 characters")
    if name != name.strip():
        raise UsageError("a name must not start or end with white space")
    for ch in name:
        cat = unicodedata.category(ch)
        if cat.startswith("C") or cat in ("Zl", "Zp"):
            raise UsageError(f"a name must not contain control or format characters (found U+{ord(ch):04X})")
    return name


def sign_manifest(signer: signing.SecretKey | nacl.signing.SigningKey, manifest_bytes: bytes) -> bytes:
    """`manifest.sig` for these bytes: Ed25519, or Ed25519 and ML-DSA-65 for a hybrid signer."""
    return signing.sign(signer, SIGNATURE_CONTEXT, manifest_bytes)


def verify_manifest_signature(key: bytes, manifest_bytes: bytes, signature: bytes) -> None:
    """Raise BadSignatureError unless `signature` is `key`'s gage signature over these bytes.

    A hybrid key needs both halves; one half alone, a signature of the wrong length or one
    that does not verify is a bad signature here, never a crash.
    """
    why = signing.why_not(key, SIGNATURE_CONTEXT, manifest_bytes, signature)
    if why is None:
        return
    if why.startswith("signature is"):
        raise BadSignatureError(why, path="manifest.sig")
    if why.endswith("does not verify") and not signing.is_hybrid(key):
        why = "signature does not verify over manifest.json with the sender key"
    else:
        why += " over manifest.json with the sender key"
    raise BadSignatureError(why, path="manifest.sig")


@dataclass(frozen=True)
class RetiredKey:
    """One of this home's own keys that a key statement retired (spec/keys.md section 6).

    `secret` is kept for a key this home held and replaced with a new one (`gage key
    retire --new`), so what was signed with it stays this home's; it is never used to sign
    a bundle again. It is None for the current key retired without a successor here, and
    for a key of another home that this one was named to replace.
    """

    key: bytes
    name: str
    secret: bytes | None
    reason: str
    retired_at: str
    replacement: bytes | None
    statement: str  # the signed statement file, as text
    origin: str  # "this home" or "another home"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": key_text(self.key),
            "name": self.name,
            "secret": self.secret.hex() if self.secret else None,
            "reason": self.reason,
            "retired_at": self.retired_at,
            "replacement": key_text(self.replacement) if self.replacement else None,
            "statement": self.statement,
            "origin": self.origin,
        }

    @classmethod
    def from_json(cls, obj: Any) -> RetiredKey:
        if not isinstance(obj, dict):
            raise TypeError("a retired key is an object")
        secret = obj["secret"]
        replacement = obj["replacement"]
        fields = (obj["name"], obj["reason"], obj["retired_at"], obj["statement"], obj["origin"])
        if not all(isinstance(f, str) for f in fields):
            raise TypeError("retired key fields must be strings")
        return cls(
            key=parse_key(obj["key"]),
            name=obj["name"],
            secret=bytes.fromhex(secret) if secret is not None else None,
            reason=obj["reason"],
            retired_at=obj["retired_at"],
            replacement=parse_key(replacement) if replacement is not None else None,
            statement=obj["statement"],
            origin=obj["origin"],
        )


@dataclass(frozen=True)
class Identity:
    name: str
    signing_key: nacl.signing.SigningKey
    # This home's own retired keys, oldest first (spec/keys.md section 6). The current key
    # is among them when it was retired with no successor in this home.
    retired: tuple[RetiredKey, ...] = ()
    # The ML-DSA-65 seed of a hybrid identity; None for a classical (Ed25519-only) one, and for
    # a locked one (its seed is inside the seal).
    mldsa65_seed: bytes | None = field(default=None, repr=False)
    # Passphrase protection (spec/keys.md section 11): the seal as read, and once unlocked
    # the key that opened it, so a rewrite seals again. Both None for a plain identity.
    sealed: keyseal.Sealed | None = None
    seal_key: keyseal.SealKey | None = None
    # The public key the identity file names, when read from one: a hybrid identity's ML-DSA-65
    # key is then derived from its seed (which needs `cryptography`, the costliest import gage
    # has) only when it first signs, and compared with this then (issue 28: a command that
    # signs nothing never loads it). The Ed25519 half is compared when the file is read.
    public: bytes | None = field(default=None, compare=False, repr=False)
    # Made once: an ML-DSA key is derived from its seed, and `key` is asked for per bundle.
    # None while locked (there is nothing to sign with), or not derived yet.
    _secret: signing.SecretKey | None = field(init=False, compare=False, repr=False)
    _key: bytes = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.signing_key, LockedSigningKey):
            object.__setattr__(self, "_secret", None)
            object.__setattr__(self, "_key", self.signing_key.public)
            return
        if self.public is not None and self.mldsa65_seed is not None:
            object.__setattr__(self, "_secret", None)
            object.__setattr__(self, "_key", self.public)
            return
        secret = signing.SecretKey(self.signing_key, self.mldsa65_seed)
        object.__setattr__(self, "_secret", secret)
        object.__setattr__(self, "_key", secret.public)

    @property
    def secret(self) -> signing.SecretKey:
        """What signs: both halves of a hybrid identity, or the Ed25519 key of a classical one."""
        if self._secret is None:
            if self.locked:
                raise self.signing_key._locked()  # type: ignore[attr-defined]
            secret = signing.SecretKey(self.signing_key, self.mldsa65_seed)
            if secret.public != self._key:
                raise MalformedError("identity file is damaged: its key is not the key of its secret")
            object.__setattr__(self, "_secret", secret)
            return secret
        return self._secret

    @property
    def hybrid(self) -> bool:
        return signing.is_hybrid(self.key)

    @property
    def protected(self) -> bool:
        return self.sealed is not None or self.seal_key is not None

    @property
    def locked(self) -> bool:
        """Protected and not unlocked: the public half only."""
        return isinstance(self.signing_key, LockedSigningKey)

    def unlock(self, passphrase: bytes) -> Identity:
        """This identity with its secret, opened with `passphrase` (PassphraseError if wrong)."""
        if not self.locked:
            return self
        assert self.sealed is not None
        from gage.format import keyseal

        plain, key = keyseal.open_sealed(self.sealed, passphrase)
        try:
            inner = Identity._parse(strictjson.loads(plain, limit=IDENTITY_LIMIT, what="sealed identity"))
        except KeyError as exc:
            raise MalformedError(f"the sealed identity is damaged: field {exc} is missing") from exc
        except (ValueError, TypeError, GageError) as exc:
            raise MalformedError(f"the sealed identity is damaged: {exc}") from exc
        if inner.key != self.key:
            raise MalformedError("the sealed identity holds another key than the file names")
        return dataclasses.replace(inner, sealed=self.sealed, seal_key=key)

    def protect(self, passphrase: bytes) -> Identity:
        """This (unlocked) identity, to be written sealed with a new passphrase and a fresh salt."""
        self.secret  # noqa: B018 - raises PassphraseError while locked
        from gage.format import keyseal

        return dataclasses.replace(self, sealed=None, seal_key=keyseal.new_key(passphrase))

    def unprotected(self) -> Identity:
        """This (unlocked) identity, to be written as plain hex again."""
        self.secret  # noqa: B018 - raises PassphraseError while locked
        return dataclasses.replace(self, sealed=None, seal_key=None)

    def with_secret(self, secret: signing.SecretKey, retired: tuple[RetiredKey, ...]) -> Identity:
        """This identity signing with `secret` from now on, with these retired keys; protected as before."""
        return dataclasses.replace(
            self, signing_key=secret.ed25519, mldsa65_seed=secret.mldsa65_seed, retired=retired, public=None
        )

    @property
    def key(self) -> bytes:
        return self._key

    @property
    def key_text(self) -> str:
        return key_text(self.key)

    @property
    def current_retirement(self) -> RetiredKey | None:
        """The statement that retired the current key, if one did: then nothing is signed with it."""
        return self.retirement_of(self.key)

    def retirement_of(self, key: bytes) -> RetiredKey | None:
        for r in reversed(self.retired):
            if r.key == key:
                return r
        return None

    def owns(self, key: bytes) -> bool:
        """The current key, or one of this home's retired keys: a key that is "me"."""
        return key == self.key or self.retirement_of(key) is not None

    @classmethod
    def generate(cls, name: str, *, hybrid: bool = True) -> Identity:
        """A new identity: hybrid (Ed25519 + ML-DSA-65) unless asked for a classical one."""
        return cls.from_secret(name, signing.SecretKey.generate(hybrid=hybrid))

    @classmethod
    def from_secret(cls, name: str, secret: signing.SecretKey, retired: tuple[RetiredKey, ...] = ()) -> Identity:
        return cls(name=name, signing_key=secret.ed25519, retired=retired, mldsa65_seed=secret.mldsa65_seed)

    def sign(self, manifest_bytes: bytes) -> bytes:
        return sign_manifest(self.secret, manifest_bytes)

    def _plain_bytes(self) -> bytes:
        # `secret`: the Ed25519 seed, followed for a hybrid identity by the ML-DSA-65 seed.
        obj: dict[str, Any] = {"gage-identity": 1, "name": self.name, "secret": self.secret.seed_bytes.hex(), "key": self.key_text}
        if self.retired:
            obj["retired"] = [r.to_json() for r in self.retired]
        return strictjson.dumps(obj) + b"\n"

    def to_bytes(self) -> bytes:
        """The identity file's bytes: plain, or for a protected key the public fields in the clear
        and everything else sealed (spec/keys.md section 11); written by gage.home.identity."""
        if self.seal_key is None:
            if self.locked:
                raise self.signing_key._locked()  # type: ignore[attr-defined]
            return self._plain_bytes()
        # Protected: the public fields in the clear (so "is this me?" needs no passphrase),
        # every secret only inside the seal, which holds the whole plain file.
        from gage.format import keyseal

        sealed = keyseal.seal(self._plain_bytes(), self.seal_key)
        obj: dict[str, Any] = {"gage-identity": 1, "name": self.name, "key": self.key_text}
        if self.retired:
            obj["retired"] = [{**r.to_json(), "secret": None} for r in self.retired]
        obj["sealed"] = sealed.to_json()
        return strictjson.dumps(obj) + b"\n"

    @classmethod
    def parse(cls, raw: bytes, *, path: str | None = None) -> Identity:
        """An identity file's bytes to an Identity (spec/bundle.md section 7); the file itself,
        its caps and its mode are gage.home.identity's."""
        try:
            obj = strictjson.loads(raw, limit=IDENTITY_LIMIT, what="identity")
            parsed = cls._parse(obj)
        except KeyError as exc:
            raise MalformedError(f"identity file is damaged: field {exc} is missing", path=path) from exc
        except (ValueError, TypeError, GageError) as exc:
            raise MalformedError(f"identity file is damaged: {exc}", path=path) from exc
        return parsed

    @classmethod
    def _parse(cls, obj: Any) -> Identity:
        """A plain identity (with `secret`), or a protected one (`sealed`, no `secret`: locked)."""
        if not isinstance(obj, dict) or obj.get("gage-identity") != 1:
            raise MalformedError("not a gage identity file (version 1)")
        sealed = None
        public: bytes | None = None
        if "sealed" in obj:
            if "secret" in obj:
                raise TypeError("a protected identity must not also hold its secret in the clear")
            from gage.format import keyseal

            sealed = keyseal.Sealed.from_json(obj["sealed"])
            sk: nacl.signing.SigningKey = LockedSigningKey(parse_key(obj["key"]))
            mldsa65_seed = None
        else:
            secret = obj["secret"]
            if not isinstance(secret, str) or len(secret) not in (64, 128):
                raise TypeError("secret must be 64 hex digits (Ed25519) or 128 (Ed25519 and ML-DSA-65)")
            seeds = bytes.fromhex(secret)
            public = parse_key(obj["key"])
            sk = nacl.signing.SigningKey(seeds[: signing.SEED_LEN])
            mldsa65_seed = seeds[signing.SEED_LEN :] or None
            # The Ed25519 half here; a hybrid key's ML-DSA-65 half when it first signs (`secret`).
            if bytes(sk.verify_key) != signing.ed25519_half(public) or signing.is_hybrid(public) != (mldsa65_seed is not None):
                raise ValueError("its key is not the key of its secret")
        name = obj["name"]
        if not isinstance(name, str):
            raise TypeError("name must be text")
        check_local_name(name)
        retired_list = obj.get("retired", [])
        if not isinstance(retired_list, list):
            raise TypeError("retired must be a list")
        retired = tuple(RetiredKey.from_json(r) for r in retired_list)
        if sealed is not None and any(r.secret is not None for r in retired):
            raise TypeError("a protected identity must not hold a retired key's secret in the clear")
        return cls(name=name, signing_key=sk, retired=retired, mldsa65_seed=mldsa65_seed, sealed=sealed, public=public)
