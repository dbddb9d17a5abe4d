"""`gage invite` against the relay and the people on it (issue 30): a man in the middle without
the code is caught before any word is read; one who learned it and swaps the claims is caught by
the ceremony on both sides; a relay killed mid-invite is a clear error that confirms nothing."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path

from invitetest import Term, ceremony, closing, pairs
from relaytest import open_mailbox, own_relay, relay  # noqa: F401 - fixtures
from spake2 import SPAKE2_B

from gage.carriers.relay import invite, mailbox, rendezvous
from gage.carriers.relay.errors import RelayError
from gage.format.keys import key_text
from gage.format.keys.file import KeyFile
from gage.home import sealing
from gage.home.contacts import Contacts
from gage.home.layout import Home


def confirmed(home: Home) -> dict[str, bytes]:
    return {c.name: c.key for c in Contacts.load(home.contacts_path).confirmed.values()}


def candidates(home: Home) -> set[bytes]:
    return set(Contacts.load(home.contacts_path).candidates)


def claims_of(home: Home, url: str, claimed: str) -> invite.Claims:
    """Mallory's own claims, under the name she pretends to."""
    address = open_mailbox(home, url)
    key = sealing.load(home.root, home.identity.key)
    assert key is not None
    return invite.Claims(KeyFile(key=home.identity.key, name=claimed, sealing=key.binding.to_carried()), address, url, home.identity.secret)


def test_a_relay_without_the_code_cannot_swap_in_its_claims(make_home, relay, tmp_path: Path) -> None:  # noqa: F811
    """Someone on the relay sees the offer (public) and gets in first with mallory's claims under a guessed code:
    a wrong try, caught before any word is read, and the real join that follows meets alice."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    code = rendezvous.parse_code(inv.code())
    fake = claims_of(mallory, relay.url, "bob")
    guess = rendezvous.Code(code.nameplate, ("aardvark", "adroitness") if code.words != ("aardvark", "adroitness") else ("absurd", "adviser"))
    pake = SPAKE2_B(guess.text.encode(), idA=invite.ID_A, idB=invite.ID_B)

    async def race() -> None:
        async with mailbox.connected(relay.url) as nc:
            offer, _ = await rendezvous.newest(nc, code.subject("i"), ("offer",), until=asyncio.get_running_loop().time() + 10)
            assert offer is not None and offer.body["kind"] == "offer"  # what anyone on the relay can read
            start = pake.start()
            msg_a = bytes.fromhex(offer.body["pake"])
            session = invite.Session(pake.finish(msg_a), "j", invite.session_id(msg_a, start))
            await rendezvous.say(nc, code.subject("j"), invite._msg("join", pake=start.hex(), box=session.seal(fake.to_json(session.id))))

    mailbox.run(race())
    inv.expect(b"wrong code (1 of 3)")
    jn = Term(bob, "join", code.text, "--relay", relay.url, "--name", "alice")
    try:
        ceremony(inv, alice, jn, bob)
        assert inv.finish() == 0, inv.text()
        assert jn.finish() == 0, jn.text()
    finally:
        inv.close()
        jn.close()
    assert mallory.identity.key not in candidates(alice)
    assert confirmed(alice) == {"bob": bob.identity.key} and confirmed(bob) == {"alice": alice.identity.key}


def test_a_man_in_the_middle_who_knows_the_code_is_caught_by_the_ceremony_on_both_sides(make_home, relay, own_relay) -> None:  # noqa: F811
    """The relay alice and bob think they share is mallory's: she joins alice's invite and invites bob
    under the same code, each with her own key claiming the other's name, and says "matched" to both."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    code = rendezvous.parse_code(inv.code())
    as_bob, as_alice = claims_of(mallory, relay.url, "bob"), claims_of(mallory, own_relay.url, "alice")
    to_alice = invite.Joiner(relay.url, None, code)
    to_bob = invite.Inviter(own_relay.url, None, code, 600)
    to_bob.open()
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(to_bob.wait_join(as_alice)), daemon=True)
    t.start()
    jn = Term(bob, "join", code.text, "--relay", own_relay.url, "--name", "alice")
    assert to_alice.meet(as_bob).keyfile.key == alice.identity.key  # mallory has alice's claims ...
    t.join(30)
    assert got and got[0].keyfile.key == bob.identity.key  # type: ignore[attr-defined]  # ... and bob's
    def tell_matched(side: invite._Side) -> None:
        # Mallory's relays may be gone before the other side answers: that ends her thread, quietly.
        with contextlib.suppress(RelayError):
            side.outcome(True)

    for side in (to_alice, to_bob):  # and tells each side the other matched, in a box they open
        threading.Thread(target=tell_matched, args=(side,), daemon=True).start()
    try:
        # Alice and bob on the phone: each types what the other reads, which is not the key they hold.
        for term, heard in ((inv, pairs(bob)[0]), (jn, pairs(alice)[0])):
            term.expect(b"their pair 1: ")
            term.send(heard)
            term.expect(b"their pair 1 again")
            term.send(heard)
            term.expect(b"their pair 1 again")
            term.send("give up")
        assert inv.finish() == 9 and jn.finish() == 9
    finally:
        inv.close()
        jn.close()
    assert "NOT confirmed" in inv.text() and "NOT confirmed" in jn.text()
    assert confirmed(alice) == {} and confirmed(bob) == {}
    # What mallory swapped in is kept nowhere: no candidate, no route.
    assert candidates(alice) == set() and candidates(bob) == set()
    assert not (alice.root / "where.json").exists() and not (bob.root / "where.json").exists()


def test_the_relay_killed_while_the_inviter_waits_is_a_clear_error(make_home, own_relay) -> None:  # noqa: F811
    alice = make_home("alice")
    inv = Term(alice, "invite", "--relay", own_relay.url)
    inv.code()
    own_relay.stop(kill=True)
    started = time.monotonic()
    assert inv.finish() == 15, inv.text()
    assert time.monotonic() - started < 10
    assert ("lost the relay" in inv.text() or "cannot reach the relay" in inv.text()) and "nothing was confirmed" in inv.text()
    assert candidates(alice) == set()


def test_the_relay_killed_mid_ceremony_confirms_nothing_and_the_code_stays_spent(make_home, own_relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", own_relay.url, "--name", "bob")
    code = inv.code()
    jn = Term(bob, "join", code, "--relay", own_relay.url, "--name", "alice")
    try:
        theirs, mine = pairs(bob), pairs(alice)
        for i in range(3):
            inv.expect(f"their pair {i + 1}: ".encode())
            jn.expect(f"their pair {i + 1}: ".encode())
            inv.send(theirs[i])
            jn.send(mine[i])
        inv.expect(b"their pair 4: ")
        jn.expect(b"their pair 4: ")
        own_relay.stop(kill=True)
        inv.send(theirs[3])
        jn.send(mine[3])
        for t in (inv, jn):
            t.expect(b"their closing pair: ")
            t.send(closing(alice, bob))
        assert inv.finish() == 15, inv.text()
        assert jn.finish() == 15, jn.text()
    finally:
        inv.close()
        jn.close()
    for t, other in ((inv, bob), (jn, alice)):
        assert "relay" in t.text().splitlines()[-1] and "nothing was confirmed" in t.text() and "Confirmed." not in t.text()
        # Told how to finish without the relay: `pair --mutual` with the key it holds.
        assert f"gage pair {key_text(other.identity.key)} --name" in t.text() and "--mutual" in t.text()
    assert confirmed(alice) == {} and confirmed(bob) == {}
    assert candidates(alice) == set() and candidates(bob) == set()
    for home in (alice, bob):  # nothing half-written: no scratch left, every file whole
        assert list(home.staging.iterdir()) == []
        Contacts.load(home.contacts_path)
    own_relay.start()  # the same store and port: the code is still spent
    again = Term(bob, "join", code, "--relay", own_relay.url)
    assert again.finish() == 9 and "already used" in again.text()
