"""The directory's four properties (spec/relay.md section 5), each against a hostile directory
that lies about keys and addresses, drops records and replays them.

If the directory is wholly hostile the only outcomes allowed are: delivery fails, delivery
goes where it cannot be read, or a human is offered a key that fails the compare.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import nacl.signing
import nats
import pytest
from gagetest import pair
from pyrage import x25519
from relaytest import bundle, open_mailbox, own_relay, relay  # noqa: F401  (fixtures)
from test_ceremony import run_pair_in_terminal

from gage.carriers.relay import directory, dirrecord, mailbox
from gage.format.errors import Exit
from gage.format.keys import key_text
from gage.format.words import derive
from gage.home import sealing, whereabouts
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox import store


def _words(home: Home) -> str:
    return " ".join(w for p in derive(home.identity.key) for w in p)


def _confirmed(home: Home) -> dict[str, str]:
    return {c.name: key_text(c.key) for c in Contacts.load(home.contacts_path).confirmed.values()}


def _hostile_put(url: str, handle: str, data: bytes) -> None:
    mailbox.run(directory.put_raw(url, handle, data))


def _forged_for(handle: str, signer: Home, sealing_of: Home | None = None, relay_url: str | None = None) -> bytes:
    """A well-signed record under `handle` for `signer`'s key (the directory put Mallory there)."""
    with signer.lock():
        key = sealing.ensure(signer.root, signer.identity.secret)
    return dirrecord.build(signer.identity.secret, handle, key.binding, relay_url).to_bytes()


@pytest.fixture
def cast(make_home, relay):  # noqa: F811
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    for h in (alice, bob, mallory):
        open_mailbox(h, relay.url)
    return alice, bob, mallory


def _handle(tmp_path: Path, base: str) -> str:
    """A handle of this test's own (the module's relay holds one directory for every test)."""
    return f"{base}-{abs(hash(str(tmp_path))) % 10**8}"


# --- 1. The word-pair compare is the only thing that moves a key onto the list -----------------


def test_1_lookup_never_confirms_and_a_swapped_key_fails_the_compare(cast, gage, relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, mallory = cast
    h = _handle(tmp_path, "bob")
    directory.publish(bob, h, relay.url, relay_for_record=relay.url)
    for _ in range(3):
        assert gage(alice, "directory", "lookup", h).code == 0
    assert _confirmed(alice) == {}  # looking up, however often, moves nothing
    # The directory now swaps in Mallory's (validly signed) record under bob's handle.
    _hostile_put(relay.url, h, _forged_for(h, mallory))
    # A pair that does not match is asked again (issue 18); only a deliberate `give up` ends it.
    code, screen = run_pair_in_terminal(alice, ["--directory", h, "--relay", relay.url], "bob", _words(bob) + "\ngive up")
    assert code == Exit.REFUSED and "NOT confirmed" in screen and "UNCONFIRMED" in screen
    assert _confirmed(alice) == {}
    # The honest record again, and the words bob reads: now, and only now, bob is a contact.
    directory.publish(bob, h, relay.url, relay_for_record=relay.url)
    code, screen = run_pair_in_terminal(alice, ["--directory", h, "--relay", relay.url], "bob", _words(bob))
    assert code == 0, screen
    assert _confirmed(alice) == {"bob": key_text(bob.identity.key)}
    assert [e["method"] for e in alice.journal.entries() if e["event"] == "paired"] == ["word-pairs"]


# --- 2. A key from the directory is marked unconfirmed everywhere ----------------------------------


def test_2_a_directory_key_renders_unconfirmed_in_cli_contacts_verdict_and_frame(cast, gage, relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, _mallory = cast
    h = _handle(tmp_path, "bob")
    directory.publish(bob, h, relay.url, relay_for_record=relay.url)
    r = gage(alice, "directory", "lookup", h)
    assert "UNCONFIRMED" in r.out and "not confirmed" in r.out
    assert json.loads(gage(alice, "directory", "lookup", h, "--json").out)["status"] == "unconfirmed"
    rows = json.loads(gage(alice, "contacts", "--json").out)
    assert [(c["key"], c["status"]) for c in rows] == [(key_text(bob.identity.key), "candidate")]
    assert "candidate" in gage(alice, "contacts").out and "(unconfirmed)" in gage(alice, "contacts").out
    # bob delivers to alice, sealing to the claim (alice is only a candidate for bob too)
    with alice.lock():
        ak = sealing.ensure(alice.root, alice.identity.secret)
    whereabouts.remember(bob, whereabouts.from_binding(ak.binding, relay=relay.url, source="test"))
    from gage.trust import ceremony

    ceremony.add_candidate(bob, alice.identity.key, "alice", "test")
    bid = bundle(bob, tmp_path)
    assert gage(bob, "deliver", bid, "--to", "alice", "--unconfirmed").code == 0
    assert gage(alice, "mailbox", "fetch").code == 0
    v = json.loads(gage(alice, "verdict", bid, "--json").out)
    assert v["verdict"] == "unverified" and v["sender"]["status"] == "candidate"
    frame = gage(alice, "read", bid, "--pending").out
    assert "UNVERIFIED" in frame and "candidate key" in frame and "never confirmed by the ceremony" in frame
    # and the interface's contacts screen shows it as a candidate (gage/tui/contacts.py reads the same list)
    assert Contacts.load(alice.contacts_path).status_of(bob.identity.key) == "candidate"


# --- 3. Nothing the directory publishes is an input to the verdict ----------------------------


def test_3_rewriting_every_record_changes_no_verdict(cast, gage, relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, mallory = cast
    hb, hm = _handle(tmp_path, "bob"), _handle(tmp_path, "mallory")
    directory.publish(bob, hb, relay.url, relay_for_record=relay.url)
    directory.publish(mallory, hm, relay.url, relay_for_record=relay.url)
    pair(alice, "bob", bob)
    directory.lookup(alice, hb, relay.url)
    directory.lookup(alice, hm, relay.url)
    ids = []
    for sender in (bob, mallory):
        bid = bundle(sender, tmp_path)
        store.import_bundle(alice, sender.state_dir("outbox") / bid)
        ids.append(bid)

    def verdicts() -> list[dict]:
        out = []
        for bid in ids:
            v = json.loads(gage(alice, "verdict", bid, "--json").out)
            out.append(v)
        return out

    before = verdicts()
    assert [v["verdict"] for v in before] == ["verified", "unverified"]
    # Every record rewritten: bob's handle -> mallory's key, mallory's -> bob's, garbage, and deleted.
    _hostile_put(relay.url, hb, _forged_for(hb, mallory))
    _hostile_put(relay.url, hm, _forged_for(hm, bob))
    for lie in (hb, hm):
        try:
            directory.lookup(alice, lie, relay.url)  # the lies are read, and kept as claims
        except Exception:
            pass
    _hostile_put(relay.url, hb, b'{"not": "a record"}')
    with pytest.raises(Exception, match="not a signed directory record"):
        directory.lookup(alice, hb, relay.url)
    assert verdicts() == before
    assert _confirmed(alice) == {"bob": key_text(bob.identity.key)}


# --- 4. Everything but discovery works without a directory -----------------------------------


def test_4_without_a_directory_everything_but_discovery_works(make_home, own_relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(alice, own_relay.url)
    open_mailbox(bob, own_relay.url)
    # pairing from a key file that carries the mailbox: no directory involved
    assert gage(bob, "key", "export", "-o", str(tmp_path / "bob.key")).code == 0
    code, screen = run_pair_in_terminal(alice, tmp_path / "bob.key", "bob", _words(bob))
    assert code == 0, screen
    assert whereabouts.of(alice, bob.identity.key).mailbox_ok()
    bid = bundle(alice, tmp_path)
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    assert json.loads(gage(bob, "mailbox", "fetch", "--json").out)["fetched"][0]["id"] == bid
    r = gage(alice, "directory", "lookup", "bob")
    assert r.code == Exit.NOT_FOUND and "no gage directory" in r.err

    async def streams() -> list[str]:
        nc = await nats.connect(own_relay.url)
        names = [s.config.name for s in await nc.jetstream().streams_info()]
        await nc.close()
        return names

    assert not any("DIRECTORY" in n for n in asyncio.run(streams()))  # none was made by any of this


# --- the hostile directory's lies, each with an allowed outcome --------------------------------


def test_a_record_whose_sealing_key_or_mailbox_is_swapped_is_refused(cast, gage, relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, mallory = cast
    h = _handle(tmp_path, "bob")
    honest = dirrecord.build(bob.identity.secret, h, sealing.load(bob.root, bob.identity.key).binding, relay.url)
    obj = json.loads(honest.raw)
    # (a) mallory's sealing key in bob's record: bob's signature over the record no longer verifies
    mk = sealing.load(mallory.root, mallory.identity.key).binding
    obj_a = {**obj, "sealing": mk.to_carried(), "mailbox": sealing.mailbox_address(mk.sealing_key)}
    raw_a = json.dumps(obj_a, sort_keys=True, separators=(",", ":")).encode()
    forged = json.dumps({"gage-signed-directory-record": 1, "record": raw_a.decode(), "signature": honest.signature.hex()}).encode()
    _hostile_put(relay.url, h, forged)
    r = gage(alice, "directory", "lookup", h)
    assert r.code == Exit.REFUSED and "not signed by the signing key it names" in r.err
    # (b) the directory re-signs with a key of its own but names bob's signing key with its sealing key
    dk = nacl.signing.SigningKey.generate()
    fake_binding = sealing.build_binding(dk, str(x25519.Identity.generate().to_public()))
    raw_b = json.dumps({**obj, "sealing": fake_binding.to_carried(), "mailbox": sealing.mailbox_address(fake_binding.sealing_key)},
                       sort_keys=True, separators=(",", ":")).encode()
    _hostile_put(relay.url, h, json.dumps({"gage-signed-directory-record": 1, "record": raw_b.decode(),
                                           "signature": dirrecord.sign_record(dk, raw_b).hex()}).encode())
    assert gage(alice, "directory", "lookup", h).code == Exit.REFUSED
    # (c) bob's own binding, but a mailbox that is not its sealing key's, signed by the directory key
    raw_c = json.dumps({**obj, "mailbox": "mb" + "0" * 40}, sort_keys=True, separators=(",", ":")).encode()
    _hostile_put(relay.url, h, json.dumps({"gage-signed-directory-record": 1, "record": raw_c.decode(),
                                           "signature": dirrecord.sign_record(dk, raw_c).hex()}).encode())
    assert gage(alice, "directory", "lookup", h).code == Exit.REFUSED
    # (d) bob's real record moved under another handle
    _hostile_put(relay.url, h + "-x", honest.to_bytes())
    r = gage(alice, "directory", "lookup", h + "-x")
    assert r.code == Exit.REFUSED and "is for the handle" in r.err
    assert json.loads(gage(alice, "contacts", "--json").out) == []  # nothing refused is remembered


def test_a_dropped_or_replayed_record_leaves_delivery_to_the_confirmed_key(cast, gage, relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, mallory = cast
    h = _handle(tmp_path, "bob")
    directory.publish(bob, h, relay.url, relay_for_record=relay.url)
    old = mailbox.run(directory.get_raw(relay.url, h))
    pair(alice, "bob", bob)
    directory.lookup(alice, h, relay.url)
    # bob binds a new sealing key later (a new mailbox) and publishes again
    time.sleep(1.1)  # bindings are dated to the second
    (bob.root / "sealing.json").unlink()
    new_addr = open_mailbox(bob, relay.url)
    directory.publish(bob, h, relay.url, relay_for_record=relay.url)
    directory.lookup(alice, h, relay.url)
    assert whereabouts.of(alice, bob.identity.key).mailbox == new_addr
    # the directory replays the old record: refused (tests/test_relay_replay.py), and alice keeps the newer binding
    _hostile_put(relay.url, h, old)
    r = gage(alice, "directory", "lookup", h)
    assert r.code == Exit.REFUSED and "a replayed record" in r.err
    assert whereabouts.of(alice, bob.identity.key).mailbox == new_addr
    # the directory drops the record, then puts mallory's there: delivery still goes to bob's key
    _hostile_put(relay.url, h, b"")
    assert gage(alice, "directory", "lookup", h).code != 0
    _hostile_put(relay.url, h, _forged_for(h, mallory))
    directory.lookup(alice, h, relay.url)  # mallory's key becomes a candidate: a claim
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob", "--json")
    assert r.code == 0 and json.loads(r.out)["mailbox"] == new_addr
    got = json.loads(gage(bob, "mailbox", "fetch", "--json").out)["fetched"]
    assert [g["id"] for g in got] == [bid]
    assert mailbox.run(mailbox.fetch(mallory, relay.url, sealing.mailbox_address(
        sealing.load(mallory.root, mallory.identity.key).recipient))).opened == []
