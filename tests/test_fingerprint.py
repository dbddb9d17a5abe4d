"""Fingerprints shown for comparing carry enough bits (gage.fingerprint, issue 18)."""

from __future__ import annotations

import math

from gage.fingerprint import DISPLAY_BITS, display_fingerprint

# spec/words.md: grinding the word-pairs costs 2^64 Argon2id derivations of 0.07 s each.
WORDS_COST_SECONDS = 2**64 * 0.07
UNSTRETCHED_GUESS_SECONDS = 1e-6  # a new public key plus a hash


def test_matching_the_shown_fingerprint_costs_at_least_grinding_the_words() -> None:
    needed = math.log2(WORDS_COST_SECONDS / UNSTRETCHED_GUESS_SECONDS)
    assert DISPLAY_BITS >= needed > 80


def test_the_fingerprint_is_the_keys_first_bits_in_groups_of_four() -> None:
    key = bytes(range(32))
    shown = display_fingerprint(key)
    assert shown == "0001-0203-0405-0607-0809-0a0b"
    assert len(shown.replace("-", "")) * 4 == DISPLAY_BITS
    assert key.hex().startswith(shown.replace("-", ""))
