"""Word-pairs: four pairs of PGP words derived from a public key, for two people to read aloud.

Nobody can choose their own words: they come from an Argon2id-stretched digest of the
key, so an attacker who wants a key with someone else's words must pay one Argon2id
per guess (spec/words.md gives the numbers). Even byte positions take a word from the
even list and odd positions from the odd list, so a swapped or dropped word shows.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import nacl.pwhash

from . import homefile, strictjson
from .wordlist import EVEN, ODD

VERSION = "gage/words/v1"
WORDS_LIMIT = 16 << 20  # cache/words.json: 8 words a key, for any number of contacts a person keeps
# A fixed salt: the words must be the same on every machine. The per-key input is the key.
SALT = b"gage/words/v1\x00\x00\x00"
OPSLIMIT = nacl.pwhash.argon2id.OPSLIMIT_INTERACTIVE  # 2
MEMLIMIT = nacl.pwhash.argon2id.MEMLIMIT_INTERACTIVE  # 64 MiB
DIGEST_LEN = 16
PAIRS = 4

assert len(SALT) == nacl.pwhash.argon2id.SALTBYTES

WordPairs = tuple[tuple[str, str], ...]
_EVEN_INDEX = {w: i for i, w in enumerate(EVEN)}
_ODD_INDEX = {w: i for i, w in enumerate(ODD)}


def stretch(key: bytes) -> bytes:
    """The Argon2id digest the words are read from. Costs about 0.1 s by design."""
    return nacl.pwhash.argon2id.kdf(DIGEST_LEN, key, SALT, opslimit=OPSLIMIT, memlimit=MEMLIMIT)


def words_from_bytes(data: bytes) -> WordPairs:
    """Eight bytes to four pairs: (even[b0], odd[b1]), (even[b2], odd[b3]), ..."""
    if len(data) < 2 * PAIRS:
        raise ValueError("need 8 bytes")
    return tuple((EVEN[data[2 * i]], ODD[data[2 * i + 1]]) for i in range(PAIRS))


@functools.lru_cache(maxsize=256)
def derive(key: bytes) -> WordPairs:
    return words_from_bytes(stretch(key)[: 2 * PAIRS])


class WordCache:
    """Derived words on disk, so listing contacts never pays Argon2id twice for a key.

    The cache only saves time: a damaged or edited entry is recomputed, never believed,
    because `words_for` re-derives when an entry does not decode to valid list words.
    Comparisons in the ceremony always use a fresh derivation.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # Opened beneath the folder above the cache folder (the home), so a link in place of
        # the cache folder is refused too.
        self._root, self._rel = path.parent.parent, f"{path.parent.name}/{path.name}"
        self._data: dict[str, list[list[str]]] | None = None

    def _load(self) -> dict[str, list[list[str]]]:
        if self._data is None:
            # A derived file, opened like a stranger's below the home's cache folder: a FIFO or
            # a link in its place is said once and ignored, never waited on (issue 19).
            raw = homefile.read_derived(self._root, self._rel, WORDS_LIMIT)
            try:
                obj = json.loads(raw) if raw is not None else None
                data = obj.get(VERSION) if isinstance(obj, dict) else None
                # Anything but an object of entries is damage: start afresh rather than crash.
                self._data = data if isinstance(data, dict) else {}
            except (ValueError, RecursionError):  # RecursionError: a file nested thousands deep
                self._data = {}
        return self._data

    def words_for(self, key: bytes) -> WordPairs:
        data = self._load()
        entry = data.get(key.hex())
        if (
            isinstance(entry, list)
            and len(entry) == PAIRS
            and all(isinstance(p, list) and len(p) == 2 and p[0] in _EVEN_INDEX and p[1] in _ODD_INDEX for p in entry)
        ):
            return tuple((p[0], p[1]) for p in entry)
        words = derive(key)
        data[key.hex()] = [list(p) for p in words]
        try:
            homefile.write_derived(self._root, self._rel, strictjson.dumps({VERSION: data}))
        except Exception:  # noqa: BLE001 - the cache is an optimisation; failing to write it is not an error
            pass
        return words


def format_pairs(words: WordPairs) -> str:
    return "  ".join(f"{a}-{b}" for a, b in words)


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
    return word in _EVEN_INDEX


def is_odd_word(word: str) -> bool:
    return word in _ODD_INDEX


ALL_WORDS: tuple[str, ...] = tuple(sorted(set(EVEN) | set(ODD)))
