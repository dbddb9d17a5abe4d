"""`gage contacts where` sets a contact's "where" (the person's own claim), and `gage deliver`
uses it: the mailbox when known, else the A2A agent, else the drop folder, or the one `--via` names.
Each route keeps the recipient rule (confirmed contact, or a candidate with --unconfirmed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gagetest import pair, stop_process
from relaytest import bundle
from test_relay_where import _read_lines

from gage.carriers import route
from gage.format.errors import Exit
from gage.format.keys import key_text, short_fingerprint
from gage.home import listing, sealing, whereabouts
from gage.inbox import gate, store
from gage.trust import ceremony


def test_contacts_where_sets_shows_and_clears_the_persons_own_claim(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "shared"
    drop.mkdir()
    r = gage(alice, "contacts", "where", "bob", "--a2a", "http://127.0.0.1:8470/", "--folder", str(drop))
    assert r.code == 0, r.err
    assert f"where (a claim, from you): A2A http://127.0.0.1:8470/; drop folder {drop.resolve()}" in r.out
    assert "confirms no key" in r.out
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.a2a == "http://127.0.0.1:8470/" and w.source_of("drop") == "you"
    rows = {row["key"]: row for row in json.loads(gage(alice, "contacts", "--json").out)}
    got = rows[key_text(bob.identity.key)]["where"]
    assert got["status"] == "claim" and got["sources"] == {"a2a": "you", "drop": "you"}
    assert "A2A http://127.0.0.1:8470/" in gage(alice, "contacts").out
    # a key file's mailbox claim later keeps the person's own claims, each with its source
    with bob.lock():
        b = sealing.ensure(bob.root, bob.identity.secret).binding
    whereabouts.remember(alice, whereabouts.from_binding(b, relay="nats://127.0.0.1:4222", source="key file bob.key"))
    w = whereabouts.of(alice, bob.identity.key)
    assert w.source == "key file bob.key" and w.a2a and w.source_of("a2a") == "you"
    assert "(from you)" in w.summary() and "from key file bob.key" in w.summary()
    r = gage(alice, "contacts", "where", "bob", "--clear", "a2a", "--clear", "mailbox", "--json")
    obj = json.loads(r.out)["where"]
    assert obj["a2a"] is None and obj["mailbox"] is None and obj["sealing_key"] is None and obj["drop"] == str(drop.resolve())
    r = gage(alice, "contacts", "where", "bob", "--clear", "folder")
    assert r.code == 0 and "nowhere known" in r.out and whereabouts.of(alice, bob.identity.key) is None


def test_contacts_where_refuses_bad_input_and_changes_nothing(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    before = (alice.root / "where.json").exists()
    assert gage(alice, "contacts", "where", "bob", "--a2a", "ftp://x/").code == Exit.USAGE
    r = gage(alice, "contacts", "where", "bob", "--folder", str(tmp_path / "missing"))
    assert r.code == Exit.IO and "not a folder" in r.err
    assert gage(alice, "contacts", "where", "nobody", "--folder", str(tmp_path)).code == Exit.UNKNOWN_KEY
    assert gage(alice, "contacts", "where", "bob", "--a2a", "http://x/", "--clear", "a2a").code == Exit.USAGE
    assert gage(alice, "contacts", "--folder", str(tmp_path)).code == Exit.USAGE  # only with `where`
    assert (alice.root / "where.json").exists() == before


def test_deliver_to_a_drop_folder_lands_through_watch_on_the_other_home(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    drop = tmp_path / "synced"
    drop.mkdir()
    assert gage(alice, "contacts", "where", "bob", "--folder", str(drop)).code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "watch", "--drop", str(drop), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
    )
    try:
        _read_lines(proc, "watching", 30)
        bid = bundle(alice, tmp_path)
        r = gage(alice, "deliver", bid, "--to", "bob")  # no mailbox, no A2A: the folder
        assert r.code == 0, r.err
        assert f"delivered to bob's drop folder {drop.resolve()}; not yet imported (where bob is: a claim, from you)" in r.out
        lines = _read_lines(proc, f"received {bid[:12]}", 30)
        assert any(e["kind"] == "imported" and e["id"] == bid for e in lines)
    finally:
        stop_process(proc)
    assert listing.find(bob, bid).state == "pending"  # arrival is not consent
    assert sorted(os.listdir(drop)) == [bid]  # no temporary name left behind
    again = json.loads(gage(alice, "deliver", bid, "--to", "bob", "--via", "folder", "--json").out)
    assert again["route"] == "folder" and again["copied"] is False and again["where"] == {"status": "claim", "source": "you", "folder": str(drop.resolve())}


def test_a_folder_delivery_that_fails_leaves_nothing_in_the_folder(make_home, gage, tmp_path: Path, monkeypatch) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "synced"
    drop.mkdir()
    gage(alice, "contacts", "where", "bob", "--folder", str(drop))
    bid = bundle(alice, tmp_path, data=b"x" * 5000)
    from gage import bundle as bundle_mod

    real = bundle_mod.copy_bundle

    def dies(src, manifest, dst):  # a disk that fills half-way
        real(src, manifest, dst)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bundle_mod, "copy_bundle", dies)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == Exit.IO and "nothing was left there" in r.err
    assert os.listdir(drop) == []
    monkeypatch.undo()
    (drop.rename(tmp_path / "gone"))
    r = gage(alice, "deliver", bid, "--to", "bob", "--now")  # fail-fast, as before the outbox
    assert r.code == Exit.IO and "not a folder here" in r.err and not drop.exists()  # never made by gage
    r = gage(alice, "deliver", bid, "--to", "bob")  # the folder missing is a way not there: it waits
    assert r.code == Exit.QUEUED and r.out.startswith("queued for bob's drop folder: the drop folder is not there") and not drop.exists()


def test_folder_and_a2a_deliveries_only_go_to_a_candidate_with_unconfirmed(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    ceremony.add_candidate(alice, bob.identity.key, "bob", "test")
    drop = tmp_path / "synced"
    drop.mkdir()
    fp = bob.identity.key.hex()[:16]
    assert gage(alice, "contacts", "where", fp, "--folder", str(drop)).code == 0
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == Exit.REFUSED and "candidate, not a confirmed contact" in r.err and os.listdir(drop) == []
    r = gage(alice, "deliver", bid, "--to", "bob", "--unconfirmed")
    assert r.code == 0 and "sent to a CLAIM" in r.out and os.listdir(drop) == [bid]
    assert json.loads(gage(alice, "deliver", bid, "--to", "bob", "--unconfirmed", "--json").out)["recipient"] == "unconfirmed claim"


def test_deliver_says_what_is_not_known(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == Exit.UNKNOWN_KEY and "nowhere is known for 'bob'" in r.err
    r = gage(alice, "deliver", bid, "--to", "bob", "--via", "a2a")
    assert r.code == Exit.UNKNOWN_KEY and "gage contacts where bob --a2a URL" in r.err


@pytest.mark.parametrize("explicit", [False, True])
def test_deliver_to_an_a2a_agent_lands_in_its_pending(make_home, gage, tmp_path: Path, explicit: bool) -> None:
    from gage.carriers.a2a import server

    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "synced"
    drop.mkdir()
    srv = server.Server(bob, host="127.0.0.1", port=0, on_event=lambda _: None).start()
    try:
        args = ["--a2a", srv.url] + (["--folder", str(drop)] if explicit else [])
        assert gage(alice, "contacts", "where", "bob", *args).code == 0
        bid = bundle(alice, tmp_path)
        r = gage(alice, "deliver", bid, "--to", "bob", *(["--via", "a2a"] if explicit else []))
        assert r.code == 0, r.err
        assert f"delivered to bob's A2A agent {srv.url}; the agent says it is in its pending inbox; not accepted" in r.out
        assert "a claim, from you" in r.out
        assert listing.find(bob, bid).state == "pending" and os.listdir(drop) == []
    finally:
        srv.stop(timeout=5)
    r = gage(alice, "deliver", bid, "--to", "bob", "--via", "a2a", "--now")
    assert r.code in (Exit.A2A_TRANSPORT, Exit.A2A_DISCOVERY)  # the agent is gone: the A2A codes, as `a2a send`
    r = gage(alice, "deliver", bid, "--to", "bob", "--via", "a2a")  # without --now it waits for the agent
    assert r.code == Exit.QUEUED and "queued for bob's A2A agent: the agent is not answering" in r.out


def test_the_mailbox_comes_first_and_each_route_can_be_chosen(make_home, gage, tmp_path: Path, monkeypatch) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    with bob.lock():
        b = sealing.ensure(bob.root, bob.identity.secret).binding
    whereabouts.remember(alice, whereabouts.from_binding(b, relay="nats://127.0.0.1:1", source="key file"))
    drop = tmp_path / "synced"
    drop.mkdir()
    gage(alice, "contacts", "where", "bob", "--folder", str(drop), "--a2a", "http://127.0.0.1:1/")
    who = route.recipient(alice, "bob", unconfirmed=False)
    assert route.choose(who, None) == "mailbox" and route.choose(who, "folder") == "folder"
    bid = bundle(alice, tmp_path)
    assert gage(alice, "deliver", bid, "--to", "bob", "--now").code == Exit.RELAY  # the mailbox first: its relay is down
    assert gage(alice, "deliver", bid, "--to", "bob").code == Exit.QUEUED  # without --now: it waits in the outbox
    assert os.listdir(drop) == []
    assert gage(alice, "deliver", bid, "--to", "bob", "--via", "folder").code == 0 and os.listdir(drop) == [bid]


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"httpx", "a2a", "nats", "pyrage"}:
            raise ImportError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
from gage.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_missing_extra_is_named_for_the_route_that_needs_it_and_the_folder_needs_none(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "synced"
    drop.mkdir()
    gage(alice, "contacts", "where", "bob", "--a2a", "http://127.0.0.1:1/", "--folder", str(drop))
    bid = bundle(alice, tmp_path)

    def bare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", BLOCK, "--home", str(alice.root), *args], capture_output=True, text=True, timeout=60)

    r = bare("deliver", bid, "--to", "bob")
    assert r.returncode == Exit.USAGE and "gage-bundles[a2a]" in r.stderr, r.stderr
    r = bare("deliver", bid, "--to", "bob", "--via", "mailbox")
    assert r.returncode == Exit.USAGE and "gage-bundles[relay]" in r.stderr, r.stderr
    r = bare("deliver", bid, "--to", "bob", "--via", "folder")
    assert r.returncode == 0 and os.listdir(drop) == [bid], r.stderr


def test_deliver_takes_a_candidate_by_the_fingerprint_contacts_shows(make_home, gage, tmp_path: Path) -> None:
    """`gage contacts` lists a candidate by its fingerprint (for a hybrid key, not a prefix of its
    hex): `deliver --to` takes what is listed, as `contacts where` and `forget` do."""
    alice, bob = make_home("alice"), make_home("bob")
    ceremony.add_candidate(alice, bob.identity.key, "someone", "test")
    drop = tmp_path / "synced"
    drop.mkdir()
    fp = short_fingerprint(bob.identity.key)[:14]
    assert not bob.identity.key.hex().startswith(fp.replace("-", ""))  # a hybrid key: the fingerprint is not its hex
    assert gage(alice, "contacts", "where", fp, "--folder", str(drop)).code == 0
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", fp, "--unconfirmed")
    assert r.code == 0, r.err
    assert os.listdir(drop) == [bid]


def test_a_drop_folder_inside_this_home_is_refused_so_nothing_lands_around_the_gate(make_home, gage, tmp_path: Path) -> None:
    """A folder in the home (its inbox/accepted, above all) would put a bundle where only the
    import and the gate may: refused when set, and at delivery if where.json says so anyway."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    for inside in (alice.state_dir("accepted"), alice.state_dir("pending"), alice.root):
        r = gage(alice, "contacts", "where", "bob", "--folder", str(inside))
        assert r.code == Exit.REFUSED and "inside this gage home" in r.err, r.err
    assert whereabouts.of(alice, bob.identity.key) is None
    whereabouts.set_own(alice, bob.identity.key, drop=str(alice.state_dir("accepted")))  # as a hand edit would
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob", "--via", "folder")
    assert r.code == Exit.REFUSED and "inside this gage home" in r.err
    assert os.listdir(alice.state_dir("accepted")) == []


def test_bundle_and_forward_never_copy_a_bundle_into_this_home(make_home, gage, tmp_path: Path) -> None:
    """`-o DIR` is a transport folder: inside the home (its inbox/accepted, above all) it would put
    a bundle where only the import and the gate may. Refused before anything is made."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    f = tmp_path / "note.txt"
    f.write_bytes(b"hi\n")
    outbox_before = sorted(os.listdir(alice.state_dir("outbox")))
    r = gage(alice, "bundle", str(f), "-o", str(alice.state_dir("accepted")))
    assert r.code == Exit.REFUSED and "inside this gage home" in r.err, r.err
    assert os.listdir(alice.state_dir("accepted")) == [] and sorted(os.listdir(alice.state_dir("outbox"))) == outbox_before
    bid = bundle(bob, tmp_path)
    store.import_bundle(alice, bob.state_dir("outbox") / bid)
    gate.accept(alice, bid)
    r = gage(alice, "forward", bid, "--to", "bob", "-o", str(alice.state_dir("pending")))
    assert r.code == Exit.REFUSED and "inside this gage home" in r.err, r.err
    assert os.listdir(alice.state_dir("pending")) == []
