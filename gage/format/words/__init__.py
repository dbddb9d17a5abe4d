"""Word-pairs: four pairs of PGP words derived from a public key, for two people to read aloud.

Nobody can choose their own words: they come from an Argon2id-stretched digest of the
key, so an attacker who wants a key with someone else's words must pay one Argon2id
per guess (spec/words.md gives the numbers). Even byte positions take a word from the
even list and odd positions from the odd list, so a swapped or dropped word shows.
"""

from __future__ import annotations

import functools
import re

from gage.format.words.wordlist import EVEN, ODD

VERSION = "gage/words/v1"
WORDS_LIMIT = 16 << 20  # cache/words.json: 8 words a key, for any number of contacts a person keeps
# A fixed salt: the words must be the same on every machine. The per-key input is the key.
SALT = b"gage/words/v1\x00\x00\x00"  # 16 bytes, Argon2id's salt in libsodium
# libsodium's OPSLIMIT_INTERACTIVE and MEMLIMIT_INTERACTIVE for Argon2id, written out: the words
# are fixed by spec/words.md whatever a later libsodium calls interactive, and `nacl.pwhash`
# (which loads every libsodium binding, 8 to 11 ms) is imported only where words are stretched,
# not by `gage id` showing cached words (start-up).
OPSLIMIT = 2
MEMLIMIT = 64 * 1024 * 1024
DIGEST_LEN = 16
PAIRS = 4

WordPairs = tuple[tuple[str, str], ...]
EVEN_INDEX = {w: i for i, w in enumerate(EVEN)}
ODD_INDEX = {w: i for i, w in enumerate(ODD)}


def stretch(key: bytes) -> bytes:
    """The Argon2id digest the words are read from. Costs about 0.1 s by design."""
    import nacl.pwhash

    return nacl.pwhash.argon2id.kdf(DIGEST_LEN, key, SALT, opslimit=OPSLIMIT, memlimit=MEMLIMIT)


def words_from_bytes(data: bytes) -> WordPairs:
    """Eight bytes to four pairs: (even[b0], odd[b1]), (even[b2], odd[b3]), ..."""
    if len(data) < 2 * PAIRS:
        raise ValueError("need 8 bytes")
    return tuple((EVEN[data[2 * i]], ODD[data[2 * i + 1]]) for i in range(PAIRS))


@functools.lru_cache(maxsize=256)
def derive(key: bytes) -> WordPairs:
    return words_from_bytes(stretch(key)[: 2 * PAIRS])


def pair_text(a: str, b: str) -> str:
    """One word-pair as every screen writes it (spec/words.md, "How pairs are written"): `mural-holiness`.
    One way everywhere, so a person reading from one screen to another never wonders whether a space matters."""
    return f"{a}-{b}"


def format_pairs(words: WordPairs) -> str:
    """The four pairs on one line, two spaces between pairs: `mural-holiness  ragtime-insincere  ...`."""
    return "  ".join(pair_text(a, b) for a, b in words)


_SPLIT = re.compile(r"[\s,\-]+")


def parse_spoken(text: str) -> list[str]:
    """What a person typed: words separated by white space, commas or hyphens, any case."""
    return [w for w in _SPLIT.split(text.strip().lower()) if w]


def compare(expected: WordPairs, typed: list[str]) -> list[int]:
    """The indexes (0-3) of the pairs that differ. Empty means an exact match of all eight words."""
    bad = []
    for i, (a, b) in enumerate(expected):
        got = typed[2 * i : 2 * i + 2]
        if got != [a, b]:
            bad.append(i)
    if len(typed) != 2 * PAIRS and not bad:
        bad.append(PAIRS - 1)
    return bad


def is_even_word(word: str) -> bool:
    return word in EVEN_INDEX


def is_odd_word(word: str) -> bool:
    return word in ODD_INDEX


ALL_WORDS: tuple[str, ...] = tuple(sorted(set(EVEN) | set(ODD)))
