"""What a fellow user on the relay can do to an invite, and what they no longer can (spec/relay.md section 10):
a route comes only from a confirmed ceremony, signed by the key that carries it for this exchange; a message is
gage's only when `"gage-invite"` is the integer 1, and what is not gage's hides nothing; junk costs no try and
wrong codes a bounded few; a flood neither holds an invite past its deadline nor is kept; Ctrl-C withdraws the
code. Every test runs a real nats-server."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from typing import Any

import pytest
from invitetest import Term, ceremony
from relaytest import open_mailbox, own_relay, relay  # noqa: F401 - fixtures
from spake2 import SPAKE2_B

from gage.carriers.relay import invite, mailbox, rendezvous
from gage.format.keys.file import KeyFile
from gage.format.words import derive
from gage.home import sealing, whereabouts
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.trust import ceremony as trust_ceremony


def claims(home: Home, url: str, *, name: str | None = None, relay_url: str | None = None, signer: Home | None = None) -> invite.Claims:
    """A home's claims (or someone else's, signed by `signer`'s key)."""
    key = sealing.load(home.root, home.identity.key)
    assert key is not None
    kf = KeyFile(key=home.identity.key, name=name or home.identity.name, sealing=key.binding.to_carried())
    return invite.Claims(kf, sealing.mailbox_address(key.recipient), relay_url or url, (signer or home).identity.secret)


def run(coro: Any) -> Any:
    return mailbox.run(coro)


async def _publish(url: str, subject: str, bodies: list[Any]) -> None:
    async with mailbox.connected(url) as nc:
        js = nc.jetstream()
        for b in bodies:
            data = b if isinstance(b, bytes) else rendezvous.strictjson.dumps(b)
            await js.publish(subject, data, stream=rendezvous.STREAM)


def _join_as(url: str, code: rendezvous.Code, password: str, body: dict[str, Any]) -> None:
    """A join under `password` (the code's, or a guess) whose box holds `body`, sealed for that exchange."""

    async def go() -> None:
        async with mailbox.connected(url) as nc:
            until = asyncio.get_running_loop().time() + 10
            offer, _ = await rendezvous.newest(nc, code.subject("i"), ("offer",), until=until)
            assert offer is not None
            pake = SPAKE2_B(password.encode(), idA=invite.ID_A, idB=invite.ID_B)
            msg_b, msg_a = pake.start(), bytes.fromhex(offer.body["pake"])
            session = invite.Session(pake.finish(msg_a), "j", invite.session_id(msg_a, msg_b))
            sealed = session.seal(body if "signature" in body else body)
            await rendezvous.say(nc, code.subject("j"), invite._msg("join", pake=msg_b.hex(), box=sealed))

    run(go())


def _session_for(url: str, code: rendezvous.Code) -> tuple[invite.Session, bytes]:
    """Mallory, who knows the code, starts an exchange with the inviter: the session and her SPAKE2 message."""

    async def go() -> tuple[invite.Session, bytes]:
        async with mailbox.connected(url) as nc:
            until = asyncio.get_running_loop().time() + 10
            offer, _ = await rendezvous.newest(nc, code.subject("i"), ("offer",), until=until)
            assert offer is not None
            pake = SPAKE2_B(code.text.encode(), idA=invite.ID_A, idB=invite.ID_B)
            msg_b, msg_a = pake.start(), bytes.fromhex(offer.body["pake"])
            return invite.Session(pake.finish(msg_a), "j", invite.session_id(msg_a, msg_b)), msg_b

    result: tuple[invite.Session, bytes] = run(go())
    return result


def _said_on(url: str, subject: str) -> list[rendezvous.Said]:
    async def go() -> list[rendezvous.Said]:
        async with mailbox.connected(url) as nc:
            until = asyncio.get_running_loop().time() + 10
            return [s async for s in rendezvous.messages(nc, subject, 0, until=until)]

    result: list[rendezvous.Said] = run(go())
    return result


def _confirm(home: Home, name: str, other: Home, url: str) -> None:
    """`home` has `other` confirmed under `name`, with the route of `other`'s key file."""
    heard = " ".join(w for pair in derive(other.identity.key) for w in pair)
    assert trust_ceremony.confirm(home, name, other.identity.key, heard).confirmed
    key = sealing.load(other.root, other.identity.key)
    assert key is not None
    whereabouts.remember(home, whereabouts.from_binding(key.binding, relay=url, source="key file bob.gagekey"))


def _state(home: Home) -> tuple[bytes, bytes]:
    return home.contacts_path.read_bytes(), (home.root / "where.json").read_bytes()


def test_a_joiner_with_bobs_real_key_file_and_its_own_relay_changes_nothing(make_home, relay) -> None:  # noqa: F811
    """Finding 3: mallory knows the code and sends bob's real key file and binding with her relay. bob is a confirmed
    contact of alice's: her contacts and routes stay byte for byte as they were."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    open_mailbox(bob, relay.url)
    open_mailbox(mallory, relay.url)
    _confirm(alice, "bob", bob, relay.url)
    before = _state(alice)
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    code = rendezvous.parse_code(inv.code())
    fake = claims(bob, relay.url, relay_url="nats://mallory.example:4222", signer=mallory)
    with pytest.raises(invite.InviteRefused, match="refused what we sent"):
        invite.Joiner(relay.url, None, code).meet(fake)
    assert inv.finish() == 9, inv.text()
    assert "claims refused" in inv.text() and "their pair" not in inv.text()
    assert _state(alice) == before


def test_bobs_signed_route_from_another_exchange_does_not_pass(make_home, relay) -> None:  # noqa: F811
    """Someone in the middle runs one exchange with each side: bob's route, signed by bob for his exchange with her,
    is refused in hers with alice (the relay swapped or not), so both real keys cannot carry her relay."""
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    code = rendezvous.parse_code(inv.code())
    try:
        session, msg_b = _session_for(relay.url, code)
        bobs = claims(bob, relay.url).to_json(invite.session_id(b"A" * 33, b"B" * 33))  # bob signed his own exchange
        for relay_url in ("nats://mallory.example:4222", bobs["relay"]):
            forged = {**bobs, "relay": relay_url}
            with pytest.raises(Exception, match="not signed by their key for this exchange"):
                invite.parse_claims(forged, session.id)
        run(_publish(relay.url, code.subject("j"), [invite._msg("join", pake=msg_b.hex(), box=session.seal({**bobs, "relay": "nats://mallory.example:4222"}))]))
        assert inv.finish() == 9, inv.text()
    finally:
        inv.close()
    assert "claims refused" in inv.text()
    assert Contacts.load(alice.contacts_path).candidates == {} and not (alice.root / "where.json").exists()


def test_only_the_integer_1_is_gages_and_what_is_not_gages_hides_no_offer(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    for h in (alice, bob):
        open_mailbox(h, relay.url)
    said = rendezvous.Said(1, 0.0, {"gage-invite": True, "kind": "closed"})
    assert said.kind() is None and rendezvous.Said(1, 0.0, {"gage-invite": 1.0, "kind": "closed"}).kind() is None
    assert rendezvous.Said(1, 0.0, {"gage-invite": 1, "kind": "closed"}).kind() == "closed"
    inviter = invite.Inviter(relay.url, None, None, 60)
    code = inviter.open()
    # After the real offer: `true`, a float, not JSON, a list. None of them is gage's; the offer stands.
    run(_publish(relay.url, code.subject("i"), [
        {"gage-invite": True, "kind": "closed", "why": "expired"}, {"gage-invite": 1.0, "kind": "answer", "to": 1},
        b"not json", b"[1,2]",
    ]))
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(inviter.wait_join(claims(alice, relay.url))), daemon=True)
    t.start()
    assert invite.Joiner(relay.url, None, code).meet(claims(bob, relay.url)).keyfile.key == alice.identity.key
    t.join(30)
    assert got and got[0].keyfile.key == bob.identity.key  # type: ignore[attr-defined]


def test_junk_joins_cost_nothing_and_wrong_codes_close_the_invite_after_three(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    for h in (alice, bob):
        open_mailbox(h, relay.url)
    inviter = invite.Inviter(relay.url, None, None, 60)
    code = inviter.open()
    junk = [b"junk", {"gage-invite": 1, "kind": "join"}, {"gage-invite": 1, "kind": "join", "pake": "zz" * 33, "box": "00"},
            {"gage-invite": 1, "kind": "join", "pake": "42" + "00" * 31, "box": "00"},
            {"gage-invite": 1, "kind": "join", "pake": "42" + "ff" * 32, "box": "00"}]
    run(_publish(relay.url, code.subject("j"), junk))
    got: list[object] = []
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            got.append(inviter.wait_join(claims(alice, relay.url)))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    # The junk spent nothing: the right code still meets.
    assert invite.Joiner(relay.url, None, code).meet(claims(bob, relay.url)).keyfile.key == alice.identity.key
    t.join(30)
    assert got and not errors
    assert not [s for s in _said_on(relay.url, code.subject("i")) if s.kind() == "refused"]

    # A second invite: three wrong codes (well-formed SPAKE2 messages) close it; the right code then finds it closed.
    inviter = invite.Inviter(relay.url, None, None, 60)
    code = inviter.open()
    t = threading.Thread(target=wait, daemon=True)
    t.start()
    for guess in ("absurd-adviser", "aardvark-adroitness", "adult-amulet"):
        if f"{code.words[0]}-{code.words[1]}" == guess:
            continue
        _join_as(relay.url, code, f"{code.nameplate}-{guess}", {"kind": "claims"})
    t.join(30)
    assert errors and "wrong code" in str(errors[-1]), errors
    kinds = [s.kind() for s in _said_on(relay.url, code.subject("i"))]
    assert kinds[-4:] == ["refused", "refused", "refused", "closed"], kinds
    with pytest.raises(invite.InviteRefused, match="closed"):
        invite.Joiner(relay.url, None, code).meet(claims(bob, relay.url))


def test_a_flood_neither_holds_the_invite_past_its_deadline_nor_fills_a_subject_past_its_limit(make_home, relay) -> None:  # noqa: F811
    alice = make_home("alice")
    inv = Term(alice, "invite", "--relay", relay.url, "--expires", "3s")
    code = rendezvous.parse_code(inv.code())
    stop = threading.Event()
    refused: list[int] = []

    async def flood() -> None:
        async with mailbox.connected(relay.url) as nc:
            js = nc.jetstream()
            big = rendezvous.strictjson.dumps({"gage-invite": 1, "kind": "join", "pake": "00", "box": "ab" * 30000})
            while not stop.is_set():
                for data in (b"x" * 60000, big):
                    try:
                        await js.publish(code.subject("j"), data, stream=rendezvous.STREAM)
                    except Exception:  # noqa: BLE001 - the stream refuses past the per-subject limit
                        refused.append(1)

    t = threading.Thread(target=lambda: run(flood()), daemon=True)
    started = time.monotonic()
    t.start()
    try:
        assert inv.finish(timeout=30) == 9, inv.text()
        assert time.monotonic() - started < 10, "the deadline held while messages arrived"
        assert "expired before anyone joined" in inv.text()
    finally:
        stop.set()
        t.join(30)
    assert refused, "the stream refused the flood past the per-subject limit"
    assert len(_said_on(relay.url, code.subject("j"))) <= rendezvous.PER_SUBJECT

    async def limits() -> Any:
        async with mailbox.connected(relay.url) as nc:
            return (await nc.jetstream().stream_info(rendezvous.STREAM)).config

    config = run(limits())
    assert config.max_msgs_per_subject == rendezvous.PER_SUBJECT and config.discard_new_per_subject


def test_ctrl_c_withdraws_the_code_and_a_join_is_told_at_once(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--expires", "40s")
    code = inv.code()
    inv.expect(b"for 40 seconds")
    os.kill(inv.proc.pid, signal.SIGINT)
    assert inv.finish() == 130, inv.text()
    assert "withdrawn" in inv.text()
    jn = Term(bob, "join", code, "--relay", relay.url)
    jn.expect(b"waiting for the inviter")
    started = time.monotonic()
    assert jn.finish() == 9, jn.text()
    assert time.monotonic() - started < 10 and "closed" in jn.text()


def test_a_side_that_presses_ctrl_c_mid_ceremony_tells_the_other_at_once(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    jn = Term(bob, "join", inv.code(), "--relay", relay.url, "--name", "alice")
    try:
        inv.expect(b"their pair 1: ")
        jn.expect(b"their pair 1: ")
        os.kill(inv.proc.pid, signal.SIGINT)
        assert inv.finish() == 130, inv.text()
        started = time.monotonic()
        assert jn.finish(timeout=20) == 9, jn.text()  # bob typed nothing more
        assert time.monotonic() - started < 10
    finally:
        inv.close()
        jn.close()
    assert "the other side stopped (Ctrl-C)" in jn.text()
    assert "gage pair ed25519" in inv.text() and "--name bob --mutual" in inv.text(), inv.text()
    assert Contacts.load(alice.contacts_path).confirmed == {} and Contacts.load(bob.contacts_path).confirmed == {}


def test_a_wrong_closing_pair_confirms_nothing_on_either_side(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob")
    jn = Term(bob, "join", inv.code(), "--relay", relay.url, "--name", "alice")
    try:
        from invitetest import pairs

        for i in range(4):
            for term, heard in ((inv, pairs(bob)[i]), (jn, pairs(alice)[i])):
                term.expect(f"their pair {i + 1}: ".encode())
                term.send(heard)
        inv.expect(b"their closing pair: ")
        inv.send("abacus aardvark")  # not what bob's screen reads
        inv.expect(b"their closing pair again")
        inv.send("give up")
        assert inv.finish() == 9, inv.text()
        assert jn.finish(timeout=20) == 9, jn.text()
    finally:
        inv.close()
        jn.close()
    assert "Confirmed." not in inv.text() + jn.text()
    assert Contacts.load(alice.contacts_path).confirmed == {} and Contacts.load(bob.contacts_path).confirmed == {}


@pytest.mark.parametrize(("args", "said"), [
    (("join", "7-tigr-guitarist"), "did you mean tiger"),
    (("join", "7-tiger-guitarst"), "did you mean guitarist"),
    (("join", "seven-tiger-guitarist"), "not an invite code"),
    (("invite", "--code", "7-guitarist-tiger"), "not a word an invite code uses"),
    (("invite", "--expires", "0.5m"), "not a duration"),
])
def test_a_malformed_code_or_duration_is_exit_2_before_anything(make_home, args: tuple[str, ...], said: str) -> None:
    from gagetest import run_gage_process

    alice = make_home("alice")
    r = run_gage_process(*args, "--relay", "nats://127.0.0.1:1", home=alice.root, input="")
    assert r.code == 2 and said in r.err, r
    assert not (alice.root / "sealing.json").exists()


def test_the_right_code_after_everything_still_pairs(make_home, relay) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob", "--expires", "1m30s")
    jn = Term(bob, "join", inv.code(), "--relay", relay.url, "--name", "alice")
    try:
        assert b"for 1 minute 30 seconds" in inv.screen or inv.expect(b"1 minute 30 seconds")
        ceremony(inv, alice, jn, bob)
        assert inv.finish() == 0 and jn.finish() == 0
    finally:
        inv.close()
        jn.close()
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.mailbox_ok() and w.source == f"gage invite on {relay.url}"


def test_an_earlier_invites_outcome_under_the_same_number_does_not_use_up_the_next(make_home, own_relay) -> None:  # noqa: F811
    # A relay of its own: the test chooses number 33, and on the module's shared relay another
    # test's invite (a random number) could still hold it ("in use by another invite", seen once).
    relay = own_relay  # noqa: F811
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    for h in (alice, bob, carol):
        open_mailbox(h, relay.url)

    def meet(code: rendezvous.Code | None, inviter_home: Home, joiner_home: Home) -> tuple[invite.Inviter, invite.Joiner]:
        inviter = invite.Inviter(relay.url, None, code, 60)
        made = inviter.open()
        t = threading.Thread(target=lambda: inviter.wait_join(claims(inviter_home, relay.url)), daemon=True)
        t.start()
        joiner = invite.Joiner(relay.url, None, made)
        assert joiner.meet(claims(joiner_home, relay.url)).keyfile.key == inviter_home.identity.key
        t.join(30)
        return inviter, joiner

    first, first_joiner = meet(rendezvous.Code(33, ("tiger", "guitarist")), alice, bob)
    # The number is free once answered: a second invite under it, and then the first pair's outcomes come late.
    second = invite.Inviter(relay.url, None, rendezvous.Code(33, ("orca", "ohio")), 60)
    second.open()
    t = threading.Thread(target=lambda: first.outcome(True), daemon=True)
    t.start()
    assert first_joiner.outcome(True) is None
    t.join(30)
    kinds = [s.kind() for s in _said_on(relay.url, second.code.subject("i"))]
    assert kinds[-2:] == ["offer", "outcome"], kinds
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(second.wait_join(claims(alice, relay.url))), daemon=True)
    t.start()
    assert invite.Joiner(relay.url, None, second.code).meet(claims(carol, relay.url)).keyfile.key == alice.identity.key
    t.join(30)
    assert got and got[0].keyfile.key == carol.identity.key  # type: ignore[attr-defined]


def test_a_rendezvous_stream_made_before_the_per_subject_limit_gets_it(own_relay) -> None:  # noqa: F811
    from nats.js import api

    async def old_stream() -> None:
        async with mailbox.connected(own_relay.url) as nc:
            await nc.jetstream().add_stream(api.StreamConfig(
                name=rendezvous.STREAM, subjects=[rendezvous.SUBJECT_PREFIX + "*"], discard=api.DiscardPolicy.NEW,
                max_age=3600, max_msg_size=rendezvous.MAX_MESSAGE, max_bytes=rendezvous.MAX_BYTES,
                allow_rollup_hdrs=False, deny_delete=True, deny_purge=True))

    async def limit() -> Any:
        async with mailbox.connected(own_relay.url) as nc:
            return (await nc.jetstream().stream_info(rendezvous.STREAM)).config

    run(old_stream())
    assert run(limit()).max_msgs_per_subject in (-1, 0, None)
    invite.Inviter(own_relay.url, None, None, 60).open()
    config = run(limit())
    assert config.max_msgs_per_subject == rendezvous.PER_SUBJECT and config.discard_new_per_subject


def test_a_full_subject_is_said_and_a_claimed_relay_with_a_password_is_refused(make_home, relay) -> None:  # noqa: F811
    subject = rendezvous.Code(4321, ("tiger", "guitarist")).subject("j")

    async def fill() -> None:
        async with mailbox.connected(relay.url) as nc:
            await rendezvous.ensure_stream(nc)
            for _ in range(rendezvous.PER_SUBJECT):
                await rendezvous.say(nc, subject, {"x": 1})
            with pytest.raises(rendezvous.Full, match="keeps no more"):
                await rendezvous.say(nc, subject, {"x": 1})

    run(fill())
    bob = make_home("bob")
    open_mailbox(bob, relay.url)
    session = invite.session_id(b"A" * 33, b"B" * 33)
    body = claims(bob, relay.url, relay_url="nats://bob:secret@relay.example:4222").to_json(session)
    assert body["relay"] == "nats://relay.example:4222"  # what a home sends has no credential in it
    with pytest.raises(Exception, match="user or password"):
        invite.parse_claims({**body, "relay": "nats://bob:secret@relay.example:4222"}, session)
    assert invite.parse_claims(body, session).relay == "nats://relay.example:4222"


def test_a_protected_home_signs_its_route_with_its_passphrase(make_home, relay, gage, tmp_path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    pf = tmp_path / "alice.pass"
    pf.write_text("correct horse battery staple\n")
    pf.chmod(0o600)
    assert gage(alice, "key", "protect", "--new-passphrase-file", str(pf)).code == 0
    inv = Term(alice, "invite", "--relay", relay.url, "--name", "bob", "--passphrase-file", str(pf))
    jn = Term(bob, "join", inv.code(), "--relay", relay.url, "--name", "alice")
    try:
        ceremony(inv, Home.open(alice.root), jn, bob)
        assert inv.finish() == 0, inv.text()
        assert jn.finish() == 0, jn.text()
    finally:
        inv.close()
        jn.close()
    w = whereabouts.of(bob, alice.identity.key)
    assert w is not None and w.mailbox_ok()
