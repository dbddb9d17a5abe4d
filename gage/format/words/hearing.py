"""What a person heard, one word-pair at a time: which pairs match, why one does not, and
the list words nearest to a word that is not on the list (spec/ceremony.md, "Re-asking").

A misheard word should not end the ceremony and make two people start over: the pair is
asked again. But nothing here ever turns what was typed into what was expected. The
suggestions come from the whole list and from the typed word alone, never from the key's
words (which would let a person "confirm" by copying them), and a word that is on the
list but not the expected one gets no suggestion at all: that is the mismatch the
ceremony exists to find. Confirming stays `ceremony.confirm`'s, over all eight words.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass

from gage.format.words import (
    ALL_WORDS,
    PAIRS,
    WordPairs,
    derive,
    is_even_word,
    is_odd_word,
    parse_spoken,
)
from gage.format.words.wordlist import EVEN, ODD

# What a person types to end the ceremony on purpose (none of these is a list word).
GIVE_UP = ("give up", "giveup", "quit")
MUTUAL_CONTEXT = b"gage/mutual/v1\x00"


@dataclass(frozen=True)
class PairCheck:
    index: int  # 0-3
    typed: tuple[str, ...]
    ok: bool
    why: str  # empty when ok
    suggestions: dict[str, list[str]]  # a typed word that is not on the list -> the nearest list words


def nearest(word: str, *, n: int = 3, position: int | None = None) -> list[str]:
    """The list words closest in spelling to `word`. The PGP list was built so that words
    sound unlike each other, so a near miss usually has one clear neighbour.

    `position` (0: the first word of a pair, 1: the second) looks in that word's list first
    (two-syllable, then three-syllable words), which says nothing about the key's words;
    the whole list is searched when that one has nothing close."""
    if position is not None:
        found = difflib.get_close_matches(word, ODD if position % 2 else EVEN, n=n, cutoff=0.6)
        if found:
            return found
    return difflib.get_close_matches(word, ALL_WORDS, n=n, cutoff=0.6)


def is_give_up(line: str) -> bool:
    return " ".join(line.lower().split()) in GIVE_UP


def check_pair(expected: WordPairs, index: int, typed: list[str]) -> PairCheck:
    """Does `typed` (the words typed for pair `index`) equal that pair exactly, and if not, why."""
    a, b = expected[index]
    got = tuple(typed)
    if list(got) == [a, b]:
        return PairCheck(index, got, True, "", {})
    off_list = {w: nearest(w, position=i) for i, w in enumerate(got) if w not in ALL_WORDS}
    if len(got) != 2:
        why = f"a pair is two words; {len(got)} were typed"
    elif off_list:
        why = "not a word on the list (misheard?)" if len(off_list) == 1 else "not words on the list (misheard?)"
    elif list(got) == [b, a]:
        why = "the two words are the wrong way round: the first word of a pair is from the two-syllable list"
    elif not (is_even_word(got[0]) and is_odd_word(got[1])):
        why = "a pair is a two-syllable word, then a three-syllable one: a word may be missing or doubled"
    else:
        why = (
            "these are words from the list, but not this pair's words for the key you hold. Ask them to read it again; "
            "if they read the same words again, this is not the key they hold: give up"
        )
    return PairCheck(index, got, False, why, off_list)


def split_line(typed: list[str]) -> list[list[str] | None]:
    """A first line of words, as the four pairs it fills (None where no pair was typed).

    Eight words are four pairs; two words are the first pair (the person reads pair by pair).
    Any other count is split in place, so the pairs it does not fill are asked again."""
    if len(typed) == 2:
        return [typed, None, None, None]
    slots: list[list[str] | None] = []
    for i in range(PAIRS):
        got = typed[2 * i : 2 * i + 2]
        slots.append(got if got else None)
    return slots


def words_of(line: str) -> list[str]:
    return parse_spoken(line)


def closing_pair(mine: bytes, theirs: bytes) -> tuple[str, str]:
    """One pair both screens of a mutual ceremony show at the end: the same on both only if
    each side holds the other's key. Order-independent, through the same Argon2id as the
    words. It confirms nothing; each side's own typed words did that."""
    lo, hi = sorted((mine, theirs))
    return derive(hashlib.sha256(MUTUAL_CONTEXT + lo + hi).digest())[0]

