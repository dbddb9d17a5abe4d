"""Identities (Ed25519, or hybrid Ed25519 + ML-DSA-65), key files' limits, and the
domain-separated manifest signature (public key text is gage.format.keys.text's, re-exported here).

A gage signature is made over a fixed prefix followed by the manifest bytes, so a
signature made by gage can never be replayed as a signature over anything else the
same key might sign (and vice versa). The signing rule itself, classical or hybrid, is
gage/format/signing.py's, shared by every signed object.

Long because an identity, its retired keys and the manifest signature are the same key bytes under
the same limits, read and written together by every command that signs or shows a key.
"""

from __future__ import annotations

from gage.format import signing, strictjson
from gage.format.errors import (
    BadSignatureError,
    GageError,
    MalformedError,
    PassphraseError,
)

# Public key text is gage.format.keys.text's; re-exported here, where its callers import it.
from gage.format.keys.text import HYBRID_PREFIX as HYBRID_PREFIX
from gage.format.keys.text import KEY_PREFIX as KEY_PREFIX
from gage.format.keys.text import check_local_name as check_local_name
from gage.format.keys.text import key_digest as key_digest
from gage.format.keys.text import key_scheme as key_scheme
from gage.format.keys.text import key_shown as key_shown
from gage.format.keys.text import key_text as key_text
from gage.format.keys.text import matches_ref as matches_ref
from gage.format.keys.text import parse_key as parse_key
from gage.format.keys.text import ref_digits as ref_digits
from gage.format.keys.text import short_fingerprint as short_fingerprint
from gage.format.record import Frozen, replace, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import nacl.signing

    from gage.format.keys import seal as keyseal

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


class RetiredKey(Frozen):
    """One of this home's own keys that a key statement retired (spec/keys.md section 6).

    `secret` is kept for a key this home held and replaced with a new one (`gage key
    retire --new`), so what was signed with it stays this home's; it is never used to sign
    a bundle again. It is None for the current key retired without a successor here, and
    for a key of another home that this one was named to replace.
    """

    __slots__ = ("key", "name", "secret", "reason", "retired_at", "replacement", "statement", "origin")
    key: bytes
    name: str
    secret: bytes | None
    reason: str
    retired_at: str
    replacement: bytes | None
    statement: str  # the signed statement file, as text
    origin: str  # "this home" or "another home"

    def __init__(self, key: bytes, name: str, secret: bytes | None, reason: str, retired_at: str, replacement: bytes | None, statement: str, origin: str) -> None:
        set_field(self, "key", key)
        set_field(self, "name", name)
        set_field(self, "secret", secret)
        set_field(self, "reason", reason)
        set_field(self, "retired_at", retired_at)
        set_field(self, "replacement", replacement)
        set_field(self, "statement", statement)
        set_field(self, "origin", origin)

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


def _locked() -> PassphraseError:
    return PassphraseError("this home's key is passphrase-protected and was not unlocked")


class Identity(Frozen):
    """This home's identity: its name, its secret, its retired keys.

    Reading the file does not derive its key from its seed (PyNaCl's bindings, 8 to 11 ms to
    import, and `cryptography` for ML-DSA-65), which `gage list` and `gage verdict` must not
    pay to ask "is this key mine?". The key the file names is held to its seed where it
    matters: the Ed25519 half when the signing key is made, that is when something signs or
    the key is shown or given (`key`, `key_text`); both halves when something signs (`secret`);
    a mismatch is refused then, as damage. `named_key`, the file's unchecked claim, only tells
    whether a key is this home's: a forged claim signs nothing.
    """

    __slots__ = ("name", "ed25519_seed", "retired", "mldsa65_seed", "sealed", "seal_key", "public", "_secret", "_key", "_ed")
    # The public key is compared too, so two locked identities (no seed) differ by their keys.
    _uncompared = ("public", "_secret", "_ed")
    _unshown = ("ed25519_seed", "mldsa65_seed", "public", "_secret", "_key", "_ed")  # secrets never in a repr
    _uninit = ("_secret", "_key", "_ed")
    name: str
    # The Ed25519 seed (32 bytes); None for a locked identity (its seed is inside the seal).
    ed25519_seed: bytes | None
    # This home's own retired keys, oldest first (spec/keys.md section 6). The current key
    # is among them when it was retired with no successor in this home.
    retired: tuple[RetiredKey, ...]
    # The ML-DSA-65 seed of a hybrid identity; None for a classical (Ed25519-only) one, and for
    # a locked one (its seed is inside the seal).
    mldsa65_seed: bytes | None
    # Passphrase protection (spec/keys.md section 11): the seal as read, and once unlocked
    # the key that opened it, so a rewrite seals again. Both None for a plain identity.
    sealed: keyseal.Sealed | None
    seal_key: keyseal.SealKey | None
    # The public key the identity file names, when read from one (or of a locked identity),
    # compared with the seed's as the class docstring says.
    public: bytes | None
    # Made once: an ML-DSA key is derived from its seed, and `key` is asked for per bundle.
    # None while locked (there is nothing to sign with), or not derived yet.
    _secret: signing.SecretKey | None
    _key: bytes
    _ed: nacl.signing.SigningKey | None  # made from `ed25519_seed` when first asked for

    def __init__(
        self, name: str, signing_key: nacl.signing.SigningKey | None = None, retired: tuple[RetiredKey, ...] = (), mldsa65_seed: bytes | None = None,
        sealed: keyseal.Sealed | None = None, seal_key: keyseal.SealKey | None = None, public: bytes | None = None, *, ed25519_seed: bytes | None = None,
    ) -> None:
        """`signing_key` (a PyNaCl key, as a new identity has) or `ed25519_seed` (as a file
        has); neither for a locked identity, which has `public` only."""
        if signing_key is not None:
            if ed25519_seed is not None:
                raise TypeError("an identity takes its signing key or its seed, not both")
            ed25519_seed = bytes(signing_key)
        set_field(self, "name", name)
        set_field(self, "ed25519_seed", ed25519_seed)
        set_field(self, "retired", retired)
        set_field(self, "mldsa65_seed", mldsa65_seed)
        set_field(self, "sealed", sealed)
        set_field(self, "seal_key", seal_key)
        set_field(self, "public", public)
        set_field(self, "_ed", None)
        set_field(self, "_secret", None)
        if public is not None:
            set_field(self, "_key", public)
            if signing_key is not None:
                self._keep_ed(signing_key)
        elif ed25519_seed is None:
            raise TypeError("an identity without its seed (locked) needs its public key")
        else:  # no key named: it is the seed's
            if signing_key is None:
                import nacl.signing

                signing_key = nacl.signing.SigningKey(ed25519_seed)
            set_field(self, "_ed", signing_key)
            secret = signing.SecretKey(signing_key, mldsa65_seed)
            set_field(self, "_secret", secret)
            set_field(self, "_key", secret.public)

    @property
    def signing_key(self) -> nacl.signing.SigningKey:
        """The Ed25519 signing key (PassphraseError while locked), made when first asked for,
        and refused (MalformedError) unless its public key is the Ed25519 half of `key`."""
        if self.ed25519_seed is None:
            raise _locked()
        ed = self._ed
        if ed is None:
            import nacl.signing

            ed = self._keep_ed(nacl.signing.SigningKey(self.ed25519_seed))
        return ed

    def _keep_ed(self, ed: nacl.signing.SigningKey) -> nacl.signing.SigningKey:
        if bytes(ed.verify_key) != signing.ed25519_half(self._key):
            raise MalformedError("identity file is damaged: its key is not the key of its secret")
        set_field(self, "_ed", ed)
        return ed

    @property
    def secret(self) -> signing.SecretKey:
        """What signs: both halves of a hybrid identity, or the Ed25519 key of a classical one."""
        if self._secret is None:
            if self.locked:
                raise _locked()
            secret = signing.SecretKey(self.signing_key, self.mldsa65_seed)
            if secret.public != self._key:
                raise MalformedError("identity file is damaged: its key is not the key of its secret")
            set_field(self, "_secret", secret)
            return secret
        return self._secret

    @property
    def hybrid(self) -> bool:
        return signing.is_hybrid(self._key)  # the file's claim, held to its seeds when read

    @property
    def protected(self) -> bool:
        return self.sealed is not None or self.seal_key is not None

    @property
    def locked(self) -> bool:
        """Protected and not unlocked: the public half only."""
        return self.ed25519_seed is None

    def unlock(self, passphrase: bytes) -> Identity:
        """This identity with its secret, opened with `passphrase` (PassphraseError if wrong)."""
        if not self.locked:
            return self
        assert self.sealed is not None
        from gage.format.keys import seal as keyseal

        plain, key = keyseal.open_sealed(self.sealed, passphrase)
        try:
            inner = Identity._parse(strictjson.loads(plain, limit=IDENTITY_LIMIT, what="sealed identity"))
        except KeyError as exc:
            raise MalformedError(f"the sealed identity is damaged: field {exc} is missing") from exc
        except (ValueError, TypeError, GageError) as exc:
            raise MalformedError(f"the sealed identity is damaged: {exc}") from exc
        if inner.key != self.key:
            raise MalformedError("the sealed identity holds another key than the file names")
        return replace(inner, sealed=self.sealed, seal_key=key)

    def protect(self, passphrase: bytes) -> Identity:
        """This (unlocked) identity, to be written sealed with a new passphrase and a fresh salt."""
        self.secret  # noqa: B018 - raises PassphraseError while locked
        from gage.format.keys import seal as keyseal

        return replace(self, sealed=None, seal_key=keyseal.new_key(passphrase))

    def unprotected(self) -> Identity:
        """This (unlocked) identity, to be written as plain hex again."""
        self.secret  # noqa: B018 - raises PassphraseError while locked
        return replace(self, sealed=None, seal_key=None)

    def with_secret(self, secret: signing.SecretKey, retired: tuple[RetiredKey, ...]) -> Identity:
        """This identity signing with `secret` from now on, with these retired keys; protected as before."""
        return Identity(self.name, secret.ed25519, retired, secret.mldsa65_seed, sealed=self.sealed, seal_key=self.seal_key)

    @property
    def key(self) -> bytes:
        """This home's public key, to show, give or sign under: its Ed25519 half checked
        against the seed first (MalformedError if the file is damaged), unless locked."""
        if self._ed is None and self.ed25519_seed is not None:
            self.signing_key  # noqa: B018 - makes the signing key, which checks it
        return self._key

    @property
    def named_key(self) -> bytes:
        """The public key the identity file names, unchecked: only to tell whether a key is
        this home's (a damaged file's claim signs nothing)."""
        return self._key

    @property
    def key_text(self) -> str:
        return key_text(self.key)

    @property
    def current_retirement(self) -> RetiredKey | None:
        """The statement that retired the current key, if one did: then nothing is signed with it."""
        return self.retirement_of(self._key)

    def retirement_of(self, key: bytes) -> RetiredKey | None:
        for r in reversed(self.retired):
            if r.key == key:
                return r
        return None

    def owns(self, key: bytes) -> bool:
        """The current key, or one of this home's retired keys: a key that is "me"."""
        return key == self._key or self.retirement_of(key) is not None

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
                raise _locked()
            return self._plain_bytes()
        # Protected: the public fields in the clear (so "is this me?" needs no passphrase),
        # every secret only inside the seal, which holds the whole plain file.
        from gage.format.keys import seal as keyseal

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
            from gage.format.keys import seal as keyseal

            sealed = keyseal.Sealed.from_json(obj["sealed"])
            public = parse_key(obj["key"])
            ed25519_seed = None
            mldsa65_seed = None
        else:
            secret = obj["secret"]
            if not isinstance(secret, str) or len(secret) not in (64, 128):
                raise TypeError("secret must be 64 hex digits (Ed25519) or 128 (Ed25519 and ML-DSA-65)")
            seeds = bytes.fromhex(secret)
            public = parse_key(obj["key"])
            ed25519_seed = seeds[: signing.SEED_LEN]
            mldsa65_seed = seeds[signing.SEED_LEN :] or None
            # Only the key's kind here: its halves are held to the seeds when the key is
            # shown or signs (the class docstring).
            if signing.is_hybrid(public) != (mldsa65_seed is not None):
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
        return cls(name=name, ed25519_seed=ed25519_seed, retired=retired, mldsa65_seed=mldsa65_seed, sealed=sealed, public=public)
