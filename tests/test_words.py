"""Word-pairs: the derivation against the committed vectors, its cost, the cache, and the compare.

The words are what two people read to each other to bind a key to a person, so the
derivation must match spec/words.md byte for byte, and the compare must be exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nacl.pwhash
import nacl.signing
import pytest

from gage.format import words
from gage.format.keys import parse_key
from gage.format.words.wordlist import EVEN, ODD
from gage.home.cache.wordpairs import WordCache

VECTORS = json.loads((Path(__file__).resolve().parent.parent / "spec/vectors/keys-words.json").read_text(encoding="utf-8"))


def test_parameters_match_the_spec() -> None:
    a = VECTORS["argon2id"]
    assert bytes.fromhex(a["salt_hex"]) == words.SALT == b"gage/words/v1\x00\x00\x00"
    assert len(words.SALT) == 16
    assert a["opslimit"] == words.OPSLIMIT == 2
    assert a["memlimit"] == words.MEMLIMIT == 64 * 1024 * 1024
    assert a["digest_len"] == words.DIGEST_LEN == 16


def test_word_lists_are_the_pgp_lists() -> None:
    """The properties spec/wordlist-source.md records, so a damaged list cannot pass unnoticed."""
    assert len(EVEN) == len(ODD) == 256
    assert len(set(EVEN)) == len(set(ODD)) == 256
    assert not set(EVEN) & set(ODD)
    assert all(w.isascii() and w.isalpha() and w.islower() for w in EVEN + ODD)
    assert (EVEN[0x00], EVEN[0xFF], ODD[0x00], ODD[0xFF]) == ("aardvark", "zulu", "adroitness", "yucatan")
    assert (EVEN[0xE5], ODD[0xE5]) == ("topmost", "travesty")


@pytest.mark.parametrize("case", VECTORS["keys"], ids=lambda c: c["label"])
def test_derivation_matches_vectors(case: dict[str, Any]) -> None:
    key = bytes(nacl.signing.SigningKey(bytes.fromhex(case["seed_hex"])).verify_key)
    assert key.hex() == case["public_key_hex"]
    assert parse_key(case["key"]) == key
    digest = words.stretch(key)
    assert digest.hex() == case["argon2id_digest_hex"]
    expected = tuple(tuple(p) for p in case["words"])
    assert words.derive(key) == expected
    assert words.words_from_bytes(digest[:8]) == expected
    assert words.parse_spoken(case["spoken"]) == [w for p in case["words"] for w in p]
    assert words.compare(expected, words.parse_spoken(case["spoken"])) == []


def test_vector_keys_have_distinct_words() -> None:
    seen = {tuple(map(tuple, c["words"])) for c in VECTORS["keys"]}
    assert len(seen) == len(VECTORS["keys"])


@pytest.mark.parametrize("case", VECTORS["byte_mapping"], ids=lambda c: c["bytes_hex"])
def test_byte_mapping_vectors(case: dict[str, Any]) -> None:
    assert words.words_from_bytes(bytes.fromhex(case["bytes_hex"])) == tuple(tuple(p) for p in case["words"])


def test_words_from_bytes_uses_even_then_odd_lists() -> None:
    data = bytes([1, 2, 3, 4, 5, 6, 7, 8])
    assert words.words_from_bytes(data) == ((EVEN[1], ODD[2]), (EVEN[3], ODD[4]), (EVEN[5], ODD[6]), (EVEN[7], ODD[8]))
    with pytest.raises(ValueError):
        words.words_from_bytes(bytes(7))


def test_one_derivation_pays_the_pinned_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost (0.05 s to 1 s a derivation, so that grinding keys for chosen words is expensive)
    is fixed by Argon2id's parameters, checked against the spec above; here, that every derivation
    passes them. A cost is not asserted by a clock, which fails on a busy machine (issue 11)."""
    seen: list[dict[str, Any]] = []
    real = nacl.pwhash.argon2id.kdf  # imported by words.stretch when it runs (issue 28)

    def spy(size: int, password: bytes, salt: bytes, **kw: Any) -> bytes:
        seen.append({"size": size, "salt": salt, **kw})
        return real(size, password, salt, **kw)

    monkeypatch.setattr(nacl.pwhash.argon2id, "kdf", spy)
    key = bytes(nacl.signing.SigningKey(b"\x42" * 32).verify_key)
    words.stretch(key)
    assert seen == [{"size": words.DIGEST_LEN, "salt": words.SALT, "opslimit": 2, "memlimit": 64 << 20}]


@pytest.mark.parametrize("case", VECTORS["spoken"], ids=range(len(VECTORS["spoken"])))
def test_parse_spoken_vectors(case: dict[str, Any]) -> None:
    assert words.parse_spoken(case["typed"]) == case["words"]


@pytest.mark.parametrize(
    "typed",
    [
        "a b c d e f g h",
        "A,B,C,D,E,F,G,H",
        "a-b c-d e-f g-h",
        "  a-b,  c-d\n e-f\tg-h  ",
        "a, b, c, d, e, f, g, h",
        "A--B,,C - D e f g h",
    ],
)
def test_parse_spoken_separators_and_case(typed: str) -> None:
    assert words.parse_spoken(typed) == list("abcdefgh")


EXPECTED = (("aardvark", "adroitness"), ("absurd", "adviser"), ("accrue", "aftermath"), ("acme", "aggregate"))
FLAT = [w for p in EXPECTED for w in p]


def test_compare_exact_match() -> None:
    assert words.compare(EXPECTED, list(FLAT)) == []


@pytest.mark.parametrize(
    ("typed", "bad"),
    [
        (FLAT[:7] + ["aggregat"], [3]),  # a prefix is not the word
        (FLAT[:7] + ["aggregates"], [3]),  # nor a longer word
        (["adroitness", "aardvark", *FLAT[2:]], [0]),  # the two words of a pair swapped
        (FLAT[2:4] + FLAT[0:2] + FLAT[4:], [0, 1]),  # two pairs swapped
        (FLAT[:6], [3]),  # the last pair missing
        (FLAT[:3] + FLAT[4:], [1, 2, 3]),  # one word dropped shifts everything after it
        (FLAT + ["zulu"], [3]),  # an extra word
        ([], [0, 1, 2, 3]),
        (["AARDVARK", *FLAT[1:]], [0]),  # compare itself is exact; parse_spoken lower-cases
        (FLAT[:4] + ["accrue", "aggregate", "acme", "aftermath"], [2, 3]),  # odd words swapped across pairs
    ],
)
def test_compare_names_the_pairs_that_differ(typed: list[str], bad: list[int]) -> None:
    assert words.compare(EXPECTED, typed) == bad


def test_cache_returns_the_same_words_and_persists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = bytes(nacl.signing.SigningKey(b"\x07" * 32).verify_key)
    expected = words.derive(key)
    path = tmp_path / "cache" / "words.json"
    assert WordCache(path).words_for(key) == expected
    assert path.exists()
    assert (path.stat().st_mode & 0o777) == 0o600

    # A new cache object reads the file and does not derive again.
    def no_derive(_key: bytes) -> words.WordPairs:
        raise AssertionError("derived although the cache holds the words")

    monkeypatch.setattr(words, "derive", no_derive)
    assert WordCache(path).words_for(key) == expected


def _pairs(change: Any) -> Any:
    return lambda e: {**e, "pairs": change(e["pairs"])}


@pytest.mark.parametrize(
    "damage",
    [
        _pairs(lambda e: [[p[1], p[0]] for p in e]),  # each pair reversed: even/odd in the wrong slots
        _pairs(lambda e: e[:3]),  # a pair missing
        _pairs(lambda e: "aardvark adroitness"),  # not a list
        _pairs(lambda e: [[p[0], p[1], "x"] for p in e]),  # three words in a pair
        _pairs(lambda e: [[p[0], "notaword"] for p in e]),
        _pairs(lambda e: [e[1], e[0], *e[2:]]),  # list words, well formed, not this key's: only the seal tells
        lambda e: {**e, "seal": e["seal"][::-1]},
        lambda e: {**e, "extra": 1},
        lambda e: e["pairs"],  # an entry of the unsealed shape
        lambda e: [],
        lambda e: None,
    ],
)
def test_damaged_cache_entry_is_recomputed(tmp_path: Path, damage: Any) -> None:
    key = bytes(nacl.signing.SigningKey(b"\x08" * 32).verify_key)
    expected = words.derive(key)
    path = tmp_path / "words.json"
    WordCache(path).words_for(key)
    data = json.loads(path.read_bytes())
    entry = data[words.VERSION][key.hex()]
    data[words.VERSION][key.hex()] = damage(entry)
    path.write_text(json.dumps(data))
    assert WordCache(path).words_for(key) == expected
    assert json.loads(path.read_bytes())[words.VERSION][key.hex()] == entry


@pytest.mark.parametrize("content", [b"", b"not json", b"[1,2]", b'{"gage/words/v1": []}', b"\xff\xfe"])
def test_unreadable_cache_file_is_recomputed(tmp_path: Path, content: bytes) -> None:
    key = bytes(nacl.signing.SigningKey(b"\x09" * 32).verify_key)
    path = tmp_path / "words.json"
    path.write_bytes(content)
    assert WordCache(path).words_for(key) == words.derive(key)


def test_format_pairs() -> None:
    assert words.format_pairs(EXPECTED) == "aardvark-adroitness  absurd-adviser  accrue-aftermath  acme-aggregate"
    assert words.parse_spoken(words.format_pairs(EXPECTED)) == FLAT
