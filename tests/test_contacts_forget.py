"""Forgetting a candidate key: only that remembered claim goes; a confirmed contact never does."""

from __future__ import annotations

from collections.abc import Callable

from gagetest import pair

from gage.home.contacts import Candidate, Contacts
from gage.home.layout import Home
from gage.trust import ceremony


def test_forget_removes_only_that_candidate(make_home: Callable[[str], Home]) -> None:
    me, bob, carol, dave = (make_home(n) for n in ("me", "bob", "carol", "dave"))
    pair(me, "dave", dave)
    assert ceremony.add_candidate(me, bob.identity.key, "bob?", "key file")
    assert ceremony.add_candidate(me, carol.identity.key, "carol?", "bundle 0123")
    journal_before = me.journal.entries()

    assert ceremony.forget_candidate(me, bob.identity.key) is True

    after = Contacts.load(me.contacts_path)
    assert bob.identity.key not in after.candidates
    assert after.candidates[carol.identity.key].claimed_name == "carol?"  # the other candidate stays
    assert after.by_name("dave") is not None and after.by_name("dave").key == dave.identity.key
    assert after.status_of(bob.identity.key) == "unknown"
    # A claim that gave no trust goes without a journal line (none is required, and none is faked).
    assert [e.get("event") for e in me.journal.entries()] == [e.get("event") for e in journal_before]

    # Forgetting again, or a key never seen: nothing to forget, nothing changes.
    assert ceremony.forget_candidate(me, bob.identity.key) is False
    assert ceremony.forget_candidate(me, me.identity.key) is False
    assert set(Contacts.load(me.contacts_path).candidates) == {carol.identity.key}


def test_a_confirmed_contact_cannot_be_forgotten_this_way(make_home: Callable[[str], Home]) -> None:
    me, dave = make_home("me"), make_home("dave")
    pair(me, "dave", dave)
    before = me.contacts_path.read_bytes()

    assert ceremony.forget_candidate(me, dave.identity.key) is False

    assert me.contacts_path.read_bytes() == before  # not even rewritten
    contacts = Contacts.load(me.contacts_path)
    assert contacts.status_of(dave.identity.key) == "confirmed"
    assert not [e for e in me.journal.entries() if e.get("event") == "unpaired"]  # unpairing is `unpair`, journaled


def test_a_candidate_line_beside_a_confirmed_key_goes_but_the_contact_stays(make_home: Callable[[str], Home]) -> None:
    """A hand-edited file may list a key both ways: forgetting drops the claim, never the confirmation."""
    me, dave = make_home("me"), make_home("dave")
    pair(me, "dave", dave)
    contacts = Contacts.load(me.contacts_path)
    contacts.candidates[dave.identity.key] = Candidate(dave.identity.key, "dave from a file", "key file", "2026-01-01T00:00:00Z")
    contacts.save()

    assert ceremony.forget_candidate(me, dave.identity.key) is True

    after = Contacts.load(me.contacts_path)
    assert dave.identity.key not in after.candidates
    assert after.by_name("dave") is not None and after.status_of(dave.identity.key) == "confirmed"
