"""The one way a key is shown for a person to glance at: a 96-bit fingerprint.

A fingerprint is the start of the key itself, in hex groups. It is not stretched, so anyone
can make keys until one starts with the digits of someone else's; the number of digits is
chosen so that doing so costs more than grinding a key whose word-pairs match (spec/words.md,
"What grinding for someone's words costs": about 4e10 core-years for one target). At a
microsecond a key, 96 bits cost 2^96 us = 2.5e15 core-years for one target, and still 2.5e9
for a million targets at once; even at a nanosecond a key (hardware made for it), 2.5e12.
gpg's 32- and 64-bit short ids, and gage's earlier 48 bits (2^48 us, about nine core-years),
were cheap to collide. The word-pairs remain the check that confirms; this is a label.

Every list, dialog and message that names a key uses `fingerprint` (the interface too),
so the length is decided here once.
"""

from __future__ import annotations

from gage.format import signing

FINGERPRINT_BITS = 96
GROUP = 4  # hex digits between hyphens
_DIGITS = FINGERPRINT_BITS // 4


def fingerprint(key: bytes) -> str:
    """`fef1-f235-3c3c-0a1b-2c3d-4e5f`: the first 96 bits of the key, in groups of four hex digits.

    For a hybrid key, the first 96 bits of a hash of both halves (gage.format.signing), so it
    never equals the fingerprint of its own Ed25519 half offered alone: a downgrade shows as
    another key."""
    h = (signing.hybrid_fingerprint(key) if signing.is_hybrid(key) else key.hex())[:_DIGITS]
    return "-".join(h[i : i + GROUP] for i in range(0, len(h), GROUP))


def hex_of(typed: str) -> str:
    """What a person typed for a key (key text, a fingerprint or a prefix, any case) as bare hex."""
    return typed.strip().lower().removeprefix("ed25519+mldsa65:").removeprefix("ed25519:").replace("-", "").replace(" ", "")
