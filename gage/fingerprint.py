"""How a key is shown to a person who may compare it: enough bits that a collision costs a ground key pair.

`gage.keys.short_fingerprint` shows 48 bits (`fef1-f235-3c3c`), the kind gpg users learned
to distrust: a key whose first 48 bits equal a victim's takes about 2^48 unstretched
guesses (a new public key and a hash, about a microsecond each: days on one machine).
The word-pairs cost far more to grind: 2^64 guesses of one Argon2id derivation each,
0.07 s on one core (spec/words.md, "What grinding for someone's words costs"), about
1.3e18 core-seconds. A fingerprint shown for comparing must cost at least that much to
match: 2^n guesses of a microsecond reach 1.3e18 s at n = 81 bits. So a key is shown with
96 bits, six groups of four hex digits; the full key (`key_text`) stays the last word.

One helper for the whole program (the interface uses it; the command line may too), so
a key never reads one way in one place and another way elsewhere.
"""

from __future__ import annotations

DISPLAY_BITS = 96  # at least 81: see above
GROUP = 4  # hex digits per group


def display_fingerprint(key: bytes) -> str:
    """The first DISPLAY_BITS of the key in groups of four hex digits (`fef1-f235-3c3c-1a2b-3c4d-5e6f`)."""
    digits = key.hex()[: DISPLAY_BITS // 4]
    return "-".join(digits[i : i + GROUP] for i in range(0, len(digits), GROUP))
