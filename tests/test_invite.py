"""`gage invite` / `gage join` (issue 30): two fresh homes and a real nats-server, one command each,
the mutual ceremony through pseudo-terminals, then mail both ways landing verified; and every way
the code or the relay can go wrong leaves nothing confirmed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from invitetest import Term, ceremony, pairs
from relaytest import bundle, own_relay, relay  # noqa: F401 - fixtures

from gage.format.keys import key_text
from gage.home import whereabouts
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.home.listing import find
from gage.trust import verdict


def confirmed(home: Home) -> dict[str, bytes]:
    return {c.name: c.key for c in Contacts.load(home.contacts_path).confirmed.values()}


def candidates(home: Home) -> set[bytes]:
    return set(Contacts.load(home.contacts_path).candidates)


def invite_and_join(alice: Home, bob: Home, url: str, *extra: str) -> tuple[Term, Term]:
    inv = Term(alice, "invite", "--relay", url, "--name", "bob", *extra)
    code = inv.code()
    jn = Term(bob, "join", code, "--relay", url, "--name", "alice")
    return inv, jn


def test_invite_join_ceremony_then_mail_flows_both_ways_verified(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv, jn = invite_and_join(alice, bob, relay.url)
    try:
        ceremony(inv, alice, jn, bob)
        assert inv.finish() == 0, inv.text()
        assert jn.finish() == 0, jn.text()
    finally:
        inv.close()
        jn.close()
    assert "Confirmed. bob is now a contact" in inv.text()
    assert "Confirmed. alice is now a contact" in jn.text()
    assert confirmed(alice) == {"bob": bob.identity.key}
    assert confirmed(bob) == {"alice": alice.identity.key}
    # The relay route is set: the mailbox their sealing key derives, on the relay.
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.mailbox_ok() and w.relay == relay.url
    # Then mail flows with nothing else: deliver, and the other side's fetch lands it verified.
    for sender, receiver, name in ((alice, bob, "bob"), (bob, alice, "alice")):
        bid = bundle(sender, tmp_path, name=f"to-{name}.txt")
        d = gage(sender, "deliver", bid, "--to", name)
        assert d.code == 0, d.err
        f = gage(receiver, "mailbox", "fetch", "--json")
        assert f.code == 0, f.err
        assert [o["id"] for o in json.loads(f.out)["fetched"]] == [bid]
        stored = find(receiver, bid)
        assert stored is not None
        v = verdict.compute(receiver, stored)
        assert v.verdict == "verified", v
        assert v.sender.label() == ("alice" if receiver is bob else "bob")


def test_the_code_is_one_use_a_third_party_after_it_is_refused_and_changes_nothing(make_home, relay) -> None:  # noqa: F811
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    code = inv.code()
    jn = Term(bob, "join", code, "--relay", relay.url, "--name", "alice")
    try:
        ceremony(inv, alice, jn, bob)
        assert inv.finish() == 0 and jn.finish() == 0
    finally:
        inv.close()
        jn.close()
    before = (alice.contacts_path.read_bytes(), (alice.root / "where.json").read_bytes())
    for who in (bob, carol):  # the same code again, and someone who learned it later
        again = Term(who, "join", code, "--relay", relay.url, "--name", "alice")
        assert again.finish() == 9, again.text()
        assert "already used" in again.text()
        assert "their pair" not in again.text()
    assert (alice.contacts_path.read_bytes(), (alice.root / "where.json").read_bytes()) == before
    assert confirmed(carol) == {} and candidates(carol) == set()


def test_an_expired_code_is_refused_on_both_sides(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--expires", "2s")
    code = inv.code()
    assert inv.finish(timeout=20) == 9
    assert "expired before anyone joined" in inv.text()
    jn = Term(bob, "join", code, "--relay", relay.url)
    assert jn.finish() == 9
    assert "expired" in jn.text()
    assert candidates(alice) == set() and candidates(bob) == set()


def test_a_wrong_code_fails_before_any_word_and_the_right_one_still_joins(make_home, own_relay) -> None:  # noqa: F811
    relay = own_relay  # noqa: F811 - its own: the number it chooses (41) may be held by another test's invite on a shared one
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--code", "41-aardvark-adroitness", "--name", "bob")
    try:
        assert inv.code() == "41-aardvark-adroitness"
        jn = Term(bob, "join", "41-absurd-adroitness", "--relay", relay.url)
        assert jn.finish() == 9, jn.text()
        assert "did not match" in jn.text() and "their pair" not in jn.text()
        inv.expect(b"wrong code (1 of 3)")
        assert candidates(alice) == set() and candidates(bob) == set()
        # A mistyped code is one of a few tries, not the end: the right code joins.
        jn = Term(bob, "join", "41-aardvark-adroitness", "--relay", relay.url, "--name", "alice")
        ceremony(inv, alice, jn, bob)
        assert inv.finish() == 0, inv.text()
        assert jn.finish() == 0, jn.text()
    finally:
        inv.close()
    assert confirmed(alice) == {"bob": bob.identity.key}


def test_a_code_nobody_made_is_refused(make_home, relay) -> None:  # noqa: F811
    bob = make_home("bob")
    jn = Term(bob, "join", "9876-aardvark-adroitness", "--relay", relay.url)
    assert jn.finish() == 9
    assert "no invite with this code" in jn.text()


def test_either_side_giving_up_confirms_nothing_on_either_side(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv, jn = invite_and_join(alice, bob, relay.url)
    try:
        theirs, mine = pairs(bob), pairs(alice)
        for i in range(2):
            inv.expect(f"their pair {i + 1}: ".encode())
            jn.expect(f"their pair {i + 1}: ".encode())
            inv.send(theirs[i])
            jn.send(mine[i])
        inv.expect(b"their pair 3: ")
        inv.send("give up")  # alice stops; bob is told at once, without typing the two pairs left
        jn.expect(b"their pair 3: ")
        assert inv.finish() == 9, inv.text()
        assert jn.finish(timeout=20) == 9, jn.text()
    finally:
        inv.close()
        jn.close()
    assert "NOT confirmed" in inv.text(), inv.text()
    assert "NOT confirmed" in jn.text() and "the other side stopped (gave up)" in jn.text(), jn.text()
    assert confirmed(alice) == {} and confirmed(bob) == {}
    # Nothing was filed: no candidate, no route.
    assert candidates(alice) == set() and candidates(bob) == set()
    assert not (alice.root / "where.json").exists() and not (bob.root / "where.json").exists()
    assert not [e for h in (alice, bob) for e in h.journal.entries() if e.get("event") == "paired"]


def test_the_name_is_asked_with_their_claim_offered(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url)
    code = inv.code()
    jn = Term(bob, "join", code, "--relay", relay.url)
    try:
        inv.expect(b"their name here")
        inv.send("")  # their claim, "bob"
        jn.expect(b"their name here")
        jn.send("Alice Smith")
        ceremony(inv, alice, jn, bob)
        assert inv.finish() == 0 and jn.finish() == 0
    finally:
        inv.close()
        jn.close()
    assert confirmed(alice) == {"bob": bob.identity.key}
    assert confirmed(bob) == {"Alice Smith": alice.identity.key}
    assert key_text(bob.identity.key)


def test_codes_are_a_number_and_two_list_words_and_only_the_number_reaches_the_relay() -> None:
    from gage.carriers.relay import rendezvous
    from gage.format.errors import UsageError

    code = rendezvous.parse_code("  7-Tiger-Guitarist ")
    assert code.text == "7-tiger-guitarist"
    # The subject is the number's alone: the words are the PAKE's password and never travel, hashed or not.
    assert code.subject("i") == rendezvous.Code(7, ("orca", "ohio")).subject("i") != code.subject("j")
    assert "tiger" not in code.subject("i") and code.subject("i").startswith("gage.rv.")
    for bad in ("7-guitar-orbit", "tiger-guitarist", "07-tiger-guitarist", "7-guitarist-tiger", "10000-tiger-guitarist", "7 tiger guitarist"):
        with pytest.raises(UsageError):
            rendezvous.parse_code(bad)
    new = rendezvous.new_code()
    assert rendezvous.parse_code(new.text) == new and 1 <= new.nameplate <= 99
    assert rendezvous.parse_duration("10m") == 600 and rendezvous.parse_duration("90s") == 90 and rendezvous.parse_duration("1h") == 3600
    assert rendezvous.parse_duration("1m30s") == 90 and rendezvous.parse_duration("45") == 45
    assert [rendezvous.say_duration(n) for n in (20, 40, 60, 90, 600, 3600)] == [
        "20 seconds", "40 seconds", "1 minute", "1 minute 30 seconds", "10 minutes", "1 hour"]
    for bad in ("0s", "2h", "ten", "-5m", "1.5m", "30s1m", "m", ""):
        with pytest.raises(UsageError):
            rendezvous.parse_duration(bad)


def test_invite_and_join_need_a_person_at_a_terminal_before_any_code_is_made_or_spent(make_home, relay) -> None:  # noqa: F811
    from gagetest import run_gage_process

    alice = make_home("alice")
    for args in (("invite", "--relay", relay.url), ("join", "7-tiger-guitarist", "--relay", relay.url)):
        r = run_gage_process(*args, home=alice.root, input="")
        assert r.code == 9 and "human act" in r.err, r
    assert not (alice.root / "sealing.json").exists()  # not even the mailbox was made


def test_a_chosen_code_whose_number_is_in_use_is_refused(make_home, own_relay) -> None:  # noqa: F811
    relay = own_relay  # noqa: F811 - its own: the number it chooses (55) may be held by another test's invite on a shared one
    alice, bob = make_home("alice"), make_home("bob")
    first = Term(alice, "invite", "--relay", relay.url, "--code", "55-orca-ohio")
    try:
        assert first.code() == "55-orca-ohio"
        second = Term(bob, "invite", "--relay", relay.url, "--code", "55-tiger-guitarist")
        assert second.finish() == 9 and "in use" in second.text()
    finally:
        first.close()


def test_an_offer_left_by_a_killed_inviter_expires_by_the_relays_clock(make_home, relay) -> None:  # noqa: F811
    import time

    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--expires", "2s")
    code = inv.code()
    inv.close()  # killed: it never says `closed`
    time.sleep(2.5)
    jn = Term(bob, "join", code, "--relay", relay.url)
    assert jn.finish() == 9 and "expired" in jn.text(), jn.text()
    assert candidates(bob) == set()
