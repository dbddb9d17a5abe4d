"""Routes come only from where they may (issue 26, item 5).

A card, key file or directory record offers a route (mailbox, relay, sealing binding) only for
the key that carries it, as a claim, never over what the person set; a binding that names
another key is ignored; a refused or abandoned pairing writes nothing to where.json. And this
home's relay credentials go to its own relay only: a relay a contact's claim names is connected
to with none (a fake relay that records what a client sends it shows what would have leaked).
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from gagetest import pair
from relaytest import bundle, open_mailbox, relay  # noqa: F401  (fixtures)
from test_ceremony import run_pair_in_terminal
from test_relay_where import _where_from

from gage.carriers.relay import directory, mailbox
from gage.format.words import derive
from gage.home import sealing, settings, whereabouts
from gage.home.layout import Home


def _where_file(home: Home) -> bytes:
    p = home.root / whereabouts.FILE
    return p.read_bytes() if p.exists() else b""


def _card_of(owner: Home, gage, tmp: Path, *, binding_of: Home | None = None, relay_url: str | None = None) -> Path:
    """`owner`'s card, with another home's sealing binding and another relay put in (as a forger would)."""
    r = gage(owner, "a2a", "card", "--url", "http://127.0.0.1:8470/", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    params = doc["capabilities"]["extensions"][0]["params"]
    if binding_of is not None:
        b = sealing.load(binding_of.root, binding_of.identity.key).binding
        params["sealing_binding"], params["sealing_signature"] = b.raw.decode(), b.signature.hex()
    if relay_url is not None:
        params["relay"] = relay_url
    p = tmp / f"{owner.identity.name}-card.json"
    p.write_text(json.dumps(doc))
    return p


def _words(home: Home) -> str:
    return " ".join(w for p in derive(home.identity.key) for w in p)


def test_a_strangers_card_with_a_contacts_binding_reroutes_nobody(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    open_mailbox(bob, relay.url)
    open_mailbox(mallory, relay.url)
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    before = _where_file(alice)
    forged = _card_of(mallory, gage, tmp_path, binding_of=bob, relay_url="nats://mallory.example:4222")
    code, screen = run_pair_in_terminal(alice, ["--card", str(forged)], "bob2", "give up")
    assert code == 9 and "Nothing was confirmed" in screen
    assert _where_file(alice) == before  # refused: nothing written, bob's route untouched
    # even a pairing that succeeds (alice hears mallory's own words) files no route for bob, nor
    # bob's binding for mallory: a binding that names another key is ignored
    code, screen = run_pair_in_terminal(alice, ["--card", str(forged)], "mallory", _words(mallory))
    assert code == 0, screen
    assert _where_file(alice) == before
    assert whereabouts.of(alice, mallory.identity.key) is None
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob", "--json")
    assert r.code == 0 and json.loads(r.out)["relay"] == relay.url


def test_a_card_or_key_file_route_is_kept_only_after_the_ceremony(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    addr = open_mailbox(bob, relay.url)
    card = _card_of(bob, gage, tmp_path)
    keyfile = tmp_path / "bob.key"
    assert gage(bob, "key", "export", "-o", str(keyfile)).code == 0
    for source in (["--card", str(card)], [str(keyfile)]):
        code, _screen = run_pair_in_terminal(alice, source, "bob", "give up")
        assert code == 9 and _where_file(alice) == b""  # abandoned: nothing kept
    code, screen = run_pair_in_terminal(alice, [str(keyfile)], "bob", _words(bob))
    assert code == 0, screen
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.mailbox == addr and w.mailbox_ok()


def test_an_edited_binding_in_a_key_file_is_ignored(make_home, relay) -> None:  # noqa: F811
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    open_mailbox(bob, relay.url)
    open_mailbox(mallory, relay.url)
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    good = whereabouts.of(alice, bob.identity.key)
    b = sealing.load(bob.root, bob.identity.key).binding
    evil = sealing.load(mallory.root, mallory.identity.key).binding.sealing_key
    edited = sealing.parse_carried({"binding": b.raw.decode().replace(b.sealing_key, evil), "signature": b.signature.hex()})
    assert whereabouts.claim_of(bob.identity.key, edited, relay="nats://mallory.example:1", source="key file") is None
    # and the one write path refuses it even when a caller builds the claim itself
    assert whereabouts.remember(alice, whereabouts.from_binding(edited, relay="nats://mallory.example:1", source="key file")) is None
    assert whereabouts.of(alice, bob.identity.key) == good


def test_what_the_person_set_is_never_overwritten_by_a_record(make_home, relay, gage) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    pair(alice, "bob", bob)
    assert gage(alice, "contacts", "where", "bob", "--relay", "nats://bobs-relay.example:4222").code == 0
    assert gage(bob, "directory", "publish", "--handle", "bob", "--advertise", "nats://elsewhere.example:4222").code == 0
    assert gage(alice, "directory", "lookup", "bob", "--relay", relay.url).code == 0
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.relay == "nats://bobs-relay.example:4222" and w.source_of("relay") == "you"
    assert w.mailbox_ok()  # the record's mailbox is a claim for bob's own key: kept
    r = gage(alice, "contacts", "where", "bob", "--relay", "nats://u:p@bobs-relay.example:4222")
    assert r.code != 0 and "user or password" in r.err


def test_a_refused_directory_pairing_writes_no_route(make_home, relay, gage) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    assert gage(bob, "directory", "publish", "--handle", "bob").code == 0
    code, screen = run_pair_in_terminal(alice, ["--directory", "bob", "--relay", relay.url], "bob", "give up")
    assert code == 9, screen
    assert _where_file(alice) == b""
    code, screen = run_pair_in_terminal(alice, ["--directory", "bob", "--relay", relay.url], "bob", _words(bob))
    assert code == 0, screen
    assert whereabouts.of(alice, bob.identity.key).mailbox_ok()


class Recorder:
    """A 'relay' that records the CONNECT a client sends it (a relay a claim names, run by whoever
    wrote the claim), then refuses it. What it records is what a hostile relay would learn."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.url = f"nats://127.0.0.1:{self.port}"
        self.connects: list[dict] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                info = {"server_id": "rec", "version": "2.10.0", "go": "go", "host": "127.0.0.1", "port": self.port,
                        "headers": True, "max_payload": 1 << 20, "proto": 1, "auth_required": True, "nonce": "bm9uY2Vub25jZQ"}
                conn.sendall(b"INFO " + json.dumps(info).encode() + b"\r\n")
                conn.settimeout(5)
                data = b""
                try:
                    while b"PING" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                for line in data.split(b"\r\n"):
                    if line.startswith(b"CONNECT "):
                        self.connects.append(json.loads(line[8:]))
                try:
                    conn.sendall(b"-ERR 'Authorization Violation'\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


SECRETISH = ("user", "pass", "jwt", "sig", "nkey", "auth_token")


def test_this_homes_credentials_go_to_its_own_relay_only(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    pair(alice, "bob", bob)
    hostile, own = Recorder(), Recorder()
    try:
        # alice's own relay and her credential for it: a user with a password file (spec/relay.md section 8)
        creds = tmp_path / "alice.creds"
        creds.write_text("-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QifQ.e30.sig\n------END NATS USER JWT------\n")
        creds.chmod(0o600)
        pw = tmp_path / "alice.pw"
        pw.write_text("pw-alice\n")
        pw.chmod(0o600)
        own_settings = f'[relay]\nurl = "nats://127.0.0.1:{own.port}"\nuser = "alice"\npassword_file = "{pw}"\n'
        p = settings.path_of(alice)
        p.write_text(own_settings)
        # bob's route names a relay someone else runs (his record, a card, a key file: a claim)
        _where_from(alice, bob, hostile.url)
        bid = bundle(alice, tmp_path)
        r = gage(alice, "deliver", bid, "--to", "bob")
        assert r.code != 0 and "Traceback" not in r.err
        assert hostile.connects, "the delivery never reached the relay the claim names"
        for c in hostile.connects:
            assert not any(k in c for k in SECRETISH), c
        # --creds typed for a relay the claim chose is refused, before anything is sent
        seen = len(hostile.connects)
        r = gage(alice, "deliver", bid, "--to", "bob", "--creds", str(creds))
        assert r.code == 2 and "own relay" in r.err and len(hostile.connects) == seen
        # the same relay as this home's own, however written, is this home's own: its user goes there
        _where_from(alice, bob, f"nats://127.0.0.1:{own.port}")
        assert gage(alice, "deliver", bid, "--to", "bob").code != 0
        assert own.connects and own.connects[-1].get("user") == "alice" and own.connects[-1].get("pass") == "pw-alice"
        # a relay typed for a lookup or a fetch that is not this home's own gets none of its credentials either
        seen = len(hostile.connects)
        assert gage(alice, "directory", "lookup", "bob", "--relay", hostile.url).code != 0
        assert len(hostile.connects) > seen
        for c in hostile.connects:
            assert not any(k in c for k in SECRETISH), c
    finally:
        hostile.close()
        own.close()
    assert mailbox and directory  # (imported for the fixtures' modules)
