"""The Ed25519 public key of a seed, with one libsodium call and none of PyNaCl's signing module.

Why: reading this home's identity checks that the key its file names is its seed's key, and
every command reads the identity. `nacl.signing` (and `nacl.bindings`, which any of PyNaCl's
public functions imports) loads all of PyNaCl's libsodium bindings, 8 to 11 ms of a 25 ms
budget for `gage id` (issue 28), while the check needs one function of the compiled module
underneath them, `nacl._sodium` (under 1 ms to import, 0.05 ms to call). The signing key
itself is built with `nacl.signing` only when something signs (gage.format.keys).

`nacl._sodium` is PyNaCl's own cffi module, not its documented interface: should a PyNaCl
lay it out otherwise, this falls back to `nacl.bindings.crypto_sign_seed_keypair`, the same
libsodium call, slower to import but the same answer (tests/test_identity_lazy.py compares
the two).
"""

from __future__ import annotations

SEED_LEN = 32
PUBLIC_LEN = 32
_SECRET_LEN = 64  # libsodium's Ed25519 secret key: the seed, then the public key


def public_of(seed: bytes) -> bytes:
    """The Ed25519 public key of a 32-byte seed (RFC 8032), as libsodium derives it."""
    if not isinstance(seed, bytes) or len(seed) != SEED_LEN:
        raise ValueError("an Ed25519 seed is 32 bytes")
    try:
        from nacl._sodium import ffi, lib  # type: ignore[import-not-found]

        keypair = lib.crypto_sign_seed_keypair
        init, wipe = lib.sodium_init, lib.sodium_memzero
    except (ImportError, AttributeError):  # a PyNaCl laid out otherwise
        return bindings_public_of(seed)
    # libsodium wants sodium_init before use (it picks implementations once); a second call,
    # here or in nacl.bindings, returns 1 and does nothing.
    if init() == -1:
        raise RuntimeError("libsodium could not be initialised")
    pk = ffi.new("unsigned char[]", PUBLIC_LEN)
    sk = ffi.new("unsigned char[]", _SECRET_LEN)
    try:
        if keypair(pk, sk, seed) != 0:
            raise RuntimeError("libsodium could not derive an Ed25519 key")
        return bytes(ffi.buffer(pk, PUBLIC_LEN))
    finally:
        wipe(sk, _SECRET_LEN)  # the expanded secret is not left in freed memory


def bindings_public_of(seed: bytes) -> bytes:
    """The same key through PyNaCl's public binding (imports all of nacl.bindings)."""
    from nacl.bindings import crypto_sign_seed_keypair

    return crypto_sign_seed_keypair(seed)[0]
