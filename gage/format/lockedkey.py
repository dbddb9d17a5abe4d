"""The signing key of a protected identity before its passphrase is given (re-exported by gage.format.keys)."""

from __future__ import annotations

from typing import Any

import nacl.signing

from gage.format import signing
from gage.format.errors import PassphraseError


class LockedSigningKey(nacl.signing.SigningKey):
    """The signing key of a passphrase-protected identity that has not been unlocked.

    It has the public half, so everything that only asks "is this me?" works without the
    passphrase; anything that needs the secret raises PassphraseError instead of signing
    with some other key. Unlock with `Identity.unlock` (gage/home/unlock.py is the one caller).
    """

    def __init__(self, public: bytes) -> None:  # no seed: deliberately not super().__init__
        self.public = public  # the whole public key: a hybrid one's Ed25519 half and ML-DSA-65 key
        self.verify_key = nacl.signing.VerifyKey(public[: signing.ED25519_KEY_LEN])

    def _locked(self) -> PassphraseError:
        return PassphraseError("this home's key is passphrase-protected and was not unlocked")

    def sign(self, message: bytes, encoder: Any = None) -> Any:
        raise self._locked()

    def __bytes__(self) -> bytes:
        raise self._locked()

    def to_curve25519_private_key(self) -> Any:
        raise self._locked()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LockedSigningKey) and other.public == self.public

    def __hash__(self) -> int:
        return hash(self.public)
