"""The word-pair ceremony: the only way a key becomes a confirmed contact.

Two people read their four word-pairs to each other over a channel neither machine
controls. Each types the eight words they hear; the machine, not the person, compares
them with the words derived from the key it holds. Only an exact match confirms. There
is deliberately no "they match" shortcut anywhere in gage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from gage.format.keys import check_local_name, key_text
from gage.format.words import (
    PAIRS,
    WordPairs,
    derive,
    is_even_word,
    is_odd_word,
    parse_spoken,
)
from gage.home.cache.wordpairs import WordCache
from gage.home.contacts import Contact, Contacts
from gage.home.layout import Home
from gage.trust.downgrade import Downgrade, downgrade_of

METHOD = "word-pairs"
# Both directions in one call (spec/ceremony.md, "--mutual"): the command line and the interface alike.
MUTUAL_METHOD = "word-pairs, mutual"


@dataclass(frozen=True)
class SignerClaim:
    """The key whose signature verified on a bundle just landed, and the name it claims.

    The store only reports it: the storage layer never writes contacts. What the key
    becomes (a candidate, never more) is decided by gage.trust.ceremony.remember_signer."""

    key: bytes
    claimed_name: str


class Landed(Protocol):
    """What an import reports (gage.inbox.store.ImportResult): the id, and the signer if its signature held."""

    @property
    def id(self) -> str: ...

    @property
    def signer(self) -> SignerClaim | None: ...


@dataclass
class Outcome:
    confirmed: bool
    mismatched: list[int] = field(default_factory=list)  # pair indexes 0-3
    message: str = ""
    contact: Contact | None = None


def my_words(home: Home) -> WordPairs:
    return WordCache(home.cache / "words.json").words_for(home.identity.key)


def explain(expected: WordPairs, typed: list[str]) -> tuple[list[int], str]:
    """Which pairs differ, and a sentence a person can act on."""
    if len(typed) != 2 * PAIRS:
        bad = [i for i in range(PAIRS) if typed[2 * i : 2 * i + 2] != list(expected[i])]
        return bad or [PAIRS - 1], f"expected 8 words (4 pairs), got {len(typed)}: nothing was confirmed"
    bad = []
    notes = []
    for i, (a, b) in enumerate(expected):
        got = typed[2 * i : 2 * i + 2]
        if got == [a, b]:
            continue
        bad.append(i)
        if got == [b, a] or (not is_even_word(got[0]) and is_odd_word(got[0])):
            notes.append(f"pair {i + 1}: words out of order or shifted")
        elif not (is_even_word(got[0]) and is_odd_word(got[1])):
            notes.append(f"pair {i + 1}: {' '.join(got)!r} is not a word-pair from the list (misheard?)")
        else:
            notes.append(f"pair {i + 1} differs")
    if not bad:
        return [], "all four pairs match"
    return bad, "; ".join(notes) + ": nothing was confirmed. Read the words again, or stop: this may not be their key."


def downgrade(home: Home, key: bytes, contacts: Contacts | None = None) -> Downgrade | None:
    """`key` offered alone is the Ed25519 half of a hybrid key confirmed here: a mismatch, never a pairing."""
    return downgrade_of(contacts or Contacts.load(home.contacts_path), home.identity, key)


def mismatch_message(down: Downgrade) -> str:
    return (
        f"key mismatch: this key is only the Ed25519 half of {down.whose()}; a hybrid key is confirmed whole, "
        "so its half alone is not that key (someone may be offering a downgraded copy). Nothing was confirmed."
    )


def confirm(home: Home, name: str, key: bytes, heard: str, *, method: str = METHOD) -> Outcome:
    """Compare what the person heard with the words of `key`; on an exact match, confirm it.

    The words are derived afresh here, never taken from the cache, so a damaged cache
    cannot make a wrong key match.
    """
    check_local_name(name)
    down = downgrade(home, key)
    if down is not None:
        return Outcome(confirmed=False, message=mismatch_message(down))
    expected = derive(key)
    typed = parse_spoken(heard)
    bad, message = explain(expected, typed)
    if bad:
        return Outcome(confirmed=False, mismatched=bad, message=message)
    with home.lock():
        contacts = Contacts.load(home.contacts_path)
        before = contacts.by_name(name)
        contact = contacts._confirm(name, key, method)
        contacts.save()
        fields = {"name": name, "key": key_text(key), "method": method}
        if before is not None and before.key != key:
            # A retired key gave way to this one under the same name (spec/keys.md).
            fields["replaces"] = key_text(before.key)
        home.journal.append("paired", **fields)
    if "replaces" in fields:
        return Outcome(confirmed=True, message=f"confirmed: {name}'s new key replaces the retired one", contact=contact)
    return Outcome(confirmed=True, message=f"confirmed: {name} is now a contact", contact=contact)


def add_candidate(home: Home, key: bytes, claimed_name: str, source: str) -> bool:
    """Remember a key as an unconfirmed claim. Never confirms anything."""
    if home.identity.owns(key):
        return False
    with home.lock():
        contacts = Contacts.load(home.contacts_path)
        if downgrade(home, key, contacts) is not None:
            return False  # the half of a confirmed hybrid key is not a new key to remember
        added = contacts.add_candidate(key, claimed_name, source)
        if added:
            contacts.save()
    return added


def remember_signer(home: Home, result: Landed) -> bool:
    """After an import: the key that signed a newly landed bundle becomes a candidate.

    The store reports the signer and writes no contacts; every carrier (`gage import`,
    the watcher, an A2A file or a live delivery) calls this once per import, before any
    key statement the bundle carries is applied (whose refusal names a known candidate)."""
    if result.signer is None:
        return False
    return add_candidate(home, result.signer.key, result.signer.claimed_name, f"bundle {result.id[:12]}")


def remember_signers(home: Home, results: Iterable[Landed]) -> int:
    """`remember_signer` for a batch of imports: the contacts read and written once, under one
    lock, each signer added in turn by the same rule. Returns how many were added."""
    signers = [r for r in results if r.signer is not None and not home.identity.owns(r.signer.key)]
    if not signers:
        return 0
    added = 0
    with home.lock():
        contacts = Contacts.load(home.contacts_path)
        for r in signers:
            assert r.signer is not None
            if downgrade(home, r.signer.key, contacts) is not None:
                continue  # the half of a confirmed hybrid key is not a new key to remember
            added += bool(contacts.add_candidate(r.signer.key, r.signer.claimed_name, f"bundle {r.id[:12]}"))
        if added:
            contacts.save()
    return added


def forget_candidate(home: Home, key: bytes) -> bool:
    """Drop a remembered, unconfirmed key. False if `key` is not a candidate.

    A confirmed contact is never touched here (unpairing is `unpair`, and is journaled).
    A candidate was only ever a claim: forgetting it leaves every verdict as it was (a
    bundle from that key stays unverified), so it needs no journal line.
    """
    with home.lock():
        contacts = Contacts.load(home.contacts_path)
        if contacts.candidates.pop(key, None) is None:
            return False
        contacts.save()
    return True


def unpair(home: Home, name: str) -> Contact:
    with home.lock():
        contacts = Contacts.load(home.contacts_path)
        contact = contacts.remove(name)
        contacts.save()
        home.journal.append("unpaired", name=name, key=key_text(contact.key))
    return contact
