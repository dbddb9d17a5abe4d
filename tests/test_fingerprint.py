"""Fingerprints carry 96 bits (gage/format/keys/fingerprint.py, spec/words.md "Fingerprints"): matching one
by grinding keys costs more than matching the word-pairs, and every label uses the one helper."""

from __future__ import annotations

import math

from gage.format.keys import fingerprint as fp
from gage.format.keys import short_fingerprint
from gage.trust.verdict import Sender

KEY = bytes.fromhex("fef1f2353c3c0a1b2c3d4e5f" + "00" * 20)


def test_a_fingerprint_is_the_first_96_bits_in_groups_of_four() -> None:
    assert fp.fingerprint(KEY) == "fef1-f235-3c3c-0a1b-2c3d-4e5f"
    assert len(fp.fingerprint(KEY).replace("-", "")) * 4 == fp.FINGERPRINT_BITS == 96


def test_grinding_a_fingerprint_costs_more_than_grinding_the_words() -> None:
    """spec/words.md: the words cost 2^64 derivations at 0.07 s; a fingerprint guess is a
    fresh key, about a microsecond (a nanosecond on hardware built for it)."""
    words = 2**64 * 0.07
    assert 2**fp.FINGERPRINT_BITS * 1e-6 > words
    assert 2**fp.FINGERPRINT_BITS * 1e-9 > words / 100  # within a factor 100 even then
    assert math.log2(words / 1e-6) < fp.FINGERPRINT_BITS


def test_every_label_goes_through_the_one_helper() -> None:
    assert short_fingerprint(KEY) == fp.fingerprint(KEY)
    assert Sender(key=KEY, name=None, status="unknown", claimed_name="x").label() == "unknown key fef1-f235-3c3c-0a1b-2c3d-4e5f"


def test_what_a_person_types_for_a_key_becomes_bare_hex() -> None:
    assert fp.hex_of(" ed25519:FEF1-f235 ") == "fef1f235"
