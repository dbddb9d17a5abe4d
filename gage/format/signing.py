"""The one signing rule for every signed object gage makes: classical or hybrid.

A signature is checked long after it is made (an archive, evidence, a thread read a year
later), so a gage identity holds two keys of unrelated designs, Ed25519 and ML-DSA-65 (FIPS
204), and a hybrid signature is both signatures over the same domain-separated bytes. A
forger must then break both schemes; either one alone still stands if the other falls.

Every kind of signed object (a manifest, a key statement's two roles, whatever comes later:
a directory record, a sealing key's binding) has its own context, and calls `sign` and
`verifies` here with it. Nothing else in gage signs or verifies, so a new object gets the
hybrid rule, the downgrade refusal and the cross-context refusal by calling these two.

- `context` is gage's domain prefix for the object, ending in NUL (`gage/manifest/v1` 0x00).
- Ed25519 signs `context || message` (pure Ed25519, as before hybrids existed).
- ML-DSA-65 signs the same `context || message`, with its own FIPS 204 context string set to
  the prefix without the NUL, so the ML-DSA half is bound to the kind twice over.
- A hybrid signature is the 64 Ed25519 bytes followed by the 3309 ML-DSA-65 bytes; a key is
  classical (32 bytes) or hybrid (the 32 Ed25519 bytes followed by the 1952 ML-DSA-65 ones).
  A hybrid key verifies only a hybrid signature, both halves required; a classical key only a
  64-byte one. No length is ever accepted for the other kind: one half is a bad signature.

See spec/bundle.md sections 6 and 7.
"""

from __future__ import annotations

import os

from gage.format import sha256
from gage.format.record import Frozen, set_field

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Literal

    import nacl.signing
    from cryptography.hazmat.primitives.asymmetric import mldsa

# `cryptography` (ML-DSA-65) is imported only where a hybrid key signs or is checked: it is the
# largest import gage has, and a command that checks nothing (a warm `gage list`) never needs it.
# `nacl.signing` likewise, only where a signature is made or checked: it loads every libsodium
# binding PyNaCl has (8 to 11 ms of start-up).

ED25519_KEY_LEN = 32
MLDSA65_KEY_LEN = 1952
HYBRID_KEY_LEN = ED25519_KEY_LEN + MLDSA65_KEY_LEN
ED25519_SIG_LEN = 64
MLDSA65_SIG_LEN = 3309
HYBRID_SIG_LEN = ED25519_SIG_LEN + MLDSA65_SIG_LEN
SEED_LEN = 32  # each half's secret is a 32-byte seed (RFC 8032; FIPS 204's xi)
# The most any signature file is read for: a hybrid signature with room to spare, so a
# larger file is a wrong length without being read whole.
SIGNATURE_CAP = 4096

if TYPE_CHECKING:
    Scheme = Literal["classical", "hybrid"]


def scheme_of(key: bytes) -> Scheme:
    """`hybrid` for an Ed25519 + ML-DSA-65 key, `classical` for an Ed25519-only one."""
    return "hybrid" if len(key) == HYBRID_KEY_LEN else "classical"


def is_hybrid(key: bytes) -> bool:
    return len(key) == HYBRID_KEY_LEN


def ed25519_half(key: bytes) -> bytes:
    """The Ed25519 public key inside a key (all of it for a classical key)."""
    return key[:ED25519_KEY_LEN]


def signature_len(key: bytes) -> int:
    """The one signature length `key` verifies."""
    return HYBRID_SIG_LEN if is_hybrid(key) else ED25519_SIG_LEN


def _pq_context(context: bytes) -> bytes:
    """ML-DSA's own context string: gage's prefix without its NUL (at most 255 bytes, FIPS 204)."""
    ctx = context[:-1] if context.endswith(b"\x00") else context
    if not ctx or len(ctx) > 255:
        raise ValueError("a signing context is 1 to 255 bytes")
    return ctx


class SecretKey(Frozen):
    """The secret half of an identity: an Ed25519 seed, and for a hybrid key an ML-DSA-65 seed.

    `seed_bytes` (32 or 64 bytes, Ed25519 first) is how a home stores it; the public key is
    recomputed from the seeds, never stored beside them as a second truth.
    """

    __slots__ = ("ed25519", "mldsa65_seed", "_pq")
    ed25519: nacl.signing.SigningKey
    mldsa65_seed: bytes | None  # a secret: never in a repr
    _pq: mldsa.MLDSA65PrivateKey | None
    _uncompared = ("_pq",)
    _unshown = ("mldsa65_seed", "_pq")

    def __init__(
        self,
        ed25519: nacl.signing.SigningKey,
        mldsa65_seed: bytes | None = None,
        _pq: mldsa.MLDSA65PrivateKey | None = None,
    ) -> None:
        set_field(self, "ed25519", ed25519)
        set_field(self, "mldsa65_seed", mldsa65_seed)
        set_field(self, "_pq", _pq)
        if mldsa65_seed is not None:
            if len(mldsa65_seed) != SEED_LEN:
                raise ValueError("an ML-DSA-65 seed is 32 bytes")
            from cryptography.hazmat.primitives.asymmetric import mldsa
            pq = mldsa.MLDSA65PrivateKey.from_seed_bytes(mldsa65_seed)
            set_field(self, "_pq", pq)

    @classmethod
    def generate(cls, *, hybrid: bool = True) -> SecretKey:
        import nacl.signing

        return cls(nacl.signing.SigningKey.generate(), os.urandom(SEED_LEN) if hybrid else None)

    @classmethod
    def from_seed_bytes(cls, seeds: bytes) -> SecretKey:
        """32 bytes: a classical key; 64 bytes: a hybrid key (Ed25519 seed, then ML-DSA-65 seed)."""
        import nacl.signing

        if len(seeds) == SEED_LEN:
            return cls(nacl.signing.SigningKey(seeds))
        if len(seeds) == 2 * SEED_LEN:
            return cls(nacl.signing.SigningKey(seeds[:SEED_LEN]), seeds[SEED_LEN:])
        raise ValueError("a secret is 32 bytes (Ed25519) or 64 bytes (Ed25519 and ML-DSA-65)")

    @classmethod
    def of(cls, signer: SecretKey | nacl.signing.SigningKey) -> SecretKey:
        return signer if isinstance(signer, SecretKey) else cls(signer)

    @property
    def seed_bytes(self) -> bytes:
        return bytes(self.ed25519) + (self.mldsa65_seed or b"")

    @property
    def hybrid(self) -> bool:
        return self._pq is not None

    @property
    def public(self) -> bytes:
        ed = bytes(self.ed25519.verify_key)
        if self._pq is None:
            return ed
        return ed + self._pq.public_key().public_bytes_raw()


def sign(signer: SecretKey | nacl.signing.SigningKey, context: bytes, message: bytes) -> bytes:
    """`signer`'s gage signature over `message` for the object kind named by `context`."""
    secret = SecretKey.of(signer)
    data = context + message
    ed = secret.ed25519.sign(data).signature
    if secret._pq is None:
        return ed
    return ed + secret._pq.sign(data, _pq_context(context))


def why_not(key: bytes, context: bytes, message: bytes, signature: bytes) -> str | None:
    """None when `signature` is `key`'s gage signature over `message` in `context`; else why not.

    Never raises for bad input: a signature or key of any length, any bytes, is an answer.
    """
    want = signature_len(key)
    if len(key) not in (ED25519_KEY_LEN, HYBRID_KEY_LEN):
        return "the key is neither an Ed25519 nor an Ed25519 + ML-DSA-65 key"
    if len(signature) != want:
        if is_hybrid(key) and len(signature) == ED25519_SIG_LEN:
            return "the key is hybrid (Ed25519 + ML-DSA-65) but only an Ed25519 signature is there: both are required"
        if is_hybrid(key) and len(signature) == MLDSA65_SIG_LEN:
            return "the key is hybrid (Ed25519 + ML-DSA-65) but only an ML-DSA-65 signature is there: both are required"
        return f"signature is {len(signature)} bytes, not {want}"
    data = context + message
    import nacl.exceptions
    import nacl.signing

    try:
        nacl.signing.VerifyKey(ed25519_half(key)).verify(data, signature[:ED25519_SIG_LEN])
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return "the Ed25519 signature does not verify"
    if not is_hybrid(key):
        return None
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import mldsa

    try:
        pub = mldsa.MLDSA65PublicKey.from_public_bytes(key[ED25519_KEY_LEN:])
        pub.verify(signature[ED25519_SIG_LEN:], data, _pq_context(context))
    except (InvalidSignature, ValueError, TypeError):
        return "the ML-DSA-65 signature does not verify"
    return None


def verifies(key: bytes, context: bytes, message: bytes, signature: bytes) -> bool:
    """True only when every half `key` has signed `context || message` (spec/bundle.md section 6)."""
    return why_not(key, context, message, signature) is None


def hybrid_fingerprint(key: bytes) -> str:
    """Hex digits naming a hybrid key as a whole: both halves, never the Ed25519 half alone,
    so a hybrid key and its own Ed25519 half never share a label. gage.format.keys.fingerprint
    shows the first 24 (96 bits)."""
    return sha256.hexdigest(b"gage/fingerprint/v1\x00" + key)
