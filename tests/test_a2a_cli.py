"""`gage a2a export|import|card`, `gage pair --card`, and transport claims in verdict and frame."""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from a2a.types import AgentCard
from gagetest import pair
from google.protobuf import json_format
from test_ceremony import run_pair_in_terminal

from gage.carriers.a2a import artifact
from gage.carriers.a2a import card as card_mod
from gage.format.keys import short_fingerprint
from gage.format.words import derive
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox import send, store


def _bundle(home: Home, tmp: Path, text: str = "the numbers\n") -> str:
    src = tmp / f"report-{home.identity.name}.txt"
    src.write_text(text)
    m, _ = send.create(home, [src], kind="share", subject="Q3")
    return m.id


def _pending(home: Home) -> list[str]:
    return sorted(os.listdir(home.state_dir("pending")))


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_export_then_import_lands_the_same_bytes_in_pending(make_home, gage, tmp_path: Path, protocol: str) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    bid = _bundle(alice, tmp_path)
    out = tmp_path / "b.json"
    r = gage(alice, "a2a", "export", bid[:10], "--protocol", protocol, "-o", str(out))
    assert r.code == 0, r.err
    r = gage(bob, "a2a", "import", str(out))
    assert r.code == 0, r.err
    assert r.out.strip() == bid
    assert "pending" in r.err and "nothing is accepted" in r.err
    assert _pending(bob) == [bid]
    assert os.listdir(bob.state_dir("accepted")) == []
    for name in ("manifest.json", "manifest.sig", "payload/report-alice.txt"):
        assert (bob.state_dir("pending") / bid / name).read_bytes() == (alice.state_dir("outbox") / bid / name).read_bytes()


def test_export_to_standard_output_is_json_of_the_default_protocol(make_home, gage, tmp_path: Path) -> None:
    alice = make_home("alice")
    bid = _bundle(alice, tmp_path)
    r = gage(alice, "a2a", "export", bid)
    assert r.code == 0
    obj = json.loads(r.out)
    assert artifact.detect_protocol(obj) == "1.0"
    assert obj["parts"][0]["filename"] == "manifest.json" and "raw" in obj["parts"][0]


def test_export_refuses_to_overwrite_without_force(make_home, gage, tmp_path: Path) -> None:
    alice = make_home("alice")
    bid = _bundle(alice, tmp_path)
    out = tmp_path / "b.json"
    out.write_text("mine")
    r = gage(alice, "a2a", "export", bid, "-o", str(out))
    assert r.code == 9 and "--force" in r.err
    assert out.read_text() == "mine"
    assert gage(alice, "a2a", "export", bid, "-o", str(out), "--force").code == 0
    assert json.loads(out.read_text())["artifactId"] == bid


def test_an_unknown_protocol_is_a_usage_error(make_home, gage, tmp_path: Path, capsys) -> None:
    alice = make_home("alice")
    bid = _bundle(alice, tmp_path)
    with pytest.raises(SystemExit) as exc:
        gage(alice, "a2a", "export", bid, "--protocol", "2.0")
    assert exc.value.code == 2
    assert "invalid choice: '2.0'" in capsys.readouterr().err


def test_a_bundle_that_does_not_verify_is_not_exported(make_home, gage, tmp_path: Path) -> None:
    alice = make_home("alice")
    bid = _bundle(alice, tmp_path)
    (alice.state_dir("outbox") / bid / "payload" / "report-alice.txt").write_text("the numbers, changed\n")
    r = gage(alice, "a2a", "export", bid, "-o", str(tmp_path / "x.json"))
    assert r.code == 9 and "does not verify" in r.err
    assert not (tmp_path / "x.json").exists()


def test_a_refused_import_writes_nothing_and_says_why(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    bid = _bundle(alice, tmp_path)
    obj = artifact.export_artifact(alice.state_dir("outbox") / bid)
    manifest = obj["parts"][0]
    obj["parts"][0] = {"data": json.loads(__import__("base64").b64decode(manifest["raw"])), "filename": "manifest.json"}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(obj))
    lines = len(bob.journal.entries())
    r = gage(bob, "a2a", "import", str(f))
    assert r.code == 9
    assert "data part" in r.err and "re-serialise" in r.err
    assert _pending(bob) == [] and len(bob.journal.entries()) == lines
    assert [n for n in os.listdir(bob.staging)] == []


def test_import_refuses_a_fifo_instead_of_hanging(make_home, gage, tmp_path: Path) -> None:
    bob = make_home("bob")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    r = gage(bob, "a2a", "import", str(fifo))
    assert r.code == 9 and "not a regular file" in r.err


def test_import_json_reports_each_landing(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    bid = _bundle(alice, tmp_path)
    f = tmp_path / "b.json"
    f.write_text(json.dumps(artifact.export_artifact(alice.state_dir("outbox") / bid, protocol="0.3")))
    r = gage(bob, "a2a", "import", str(f), "--json")
    assert r.code == 0
    assert json.loads(r.out)["landed"] == [{"id": bid, "state": "pending", "new": True, "ok": True, "notes": [], "problem": None}]


# --- cards ------------------------------------------------------------------------------


def test_card_extension_and_whole_card_parse_with_the_sdk(make_home, gage) -> None:
    alice = make_home("alice")
    r = gage(alice, "a2a", "card", "--json")
    ext = json.loads(r.out)
    assert ext["uri"] == artifact.EXTENSION_URI
    assert ext["params"]["key"] == alice.identity.key_text and ext["params"]["name"] == "alice"
    assert all(isinstance(v, (str, list)) for v in ext["params"].values())
    r = gage(alice, "a2a", "card", "--url", "http://127.0.0.1:8470/", "--json")
    whole = json.loads(r.out)
    parsed = json_format.ParseDict(whole, AgentCard())
    assert {(i.protocol_version, i.protocol_binding) for i in parsed.supported_interfaces} == {("1.0", "JSONRPC"), ("0.3", "JSONRPC")}
    assert [e.uri for e in parsed.capabilities.extensions] == [artifact.EXTENSION_URI]
    assert parsed.capabilities.streaming is False
    # And back through our own card reader: the key is read as a claim.
    claim = card_mod.parse_card(r.out.encode(), "card.json")
    assert claim.key == alice.identity.key and claim.agent_name == "gage: alice"


def test_a_card_without_the_gage_extension_names_no_key(make_home, gage, tmp_path: Path) -> None:
    bob = make_home("bob")
    f = tmp_path / "card.json"
    f.write_text(json.dumps({"name": "someone", "capabilities": {"extensions": [{"uri": "urn:other"}]}}))
    r = gage(bob, "pair", "--card", str(f), "--name", "x")
    assert r.code == 3 and "does not advertise the gage extension" in r.err
    assert Contacts.load(bob.contacts_path).candidates == {}


def _whole_card(home: Home, tmp: Path) -> Path:
    f = tmp / f"{home.identity.name}.card.json"
    f.write_text(json.dumps(card_mod.agent_card(home, "http://127.0.0.1:9/")))
    return f


def test_a_card_key_becomes_a_candidate_never_a_contact(make_home, gage, tmp_path: Path) -> None:
    """No terminal: the ceremony cannot run, and the card's key stays a claim."""
    alice, bob = make_home("alice"), make_home("bob")
    r = gage(bob, "pair", "--card", str(_whole_card(alice, tmp_path)), "--name", "alice")
    assert r.code == 9 and "human act" in r.err
    contacts = Contacts.load(bob.contacts_path)
    assert contacts.status_of(alice.identity.key) == "candidate"
    assert contacts.confirmed == {}
    cand = contacts.candidates[alice.identity.key]
    assert "agent card" in cand.source
    assert not [e for e in bob.journal.entries() if e.get("event") == "paired"]


def _pair_card_in_terminal(home: Home, source: str, name: str, typed: str) -> tuple[int, str]:
    return run_pair_in_terminal(home, ["--card", source], name, typed)


def test_the_ceremony_started_from_a_card_confirms_only_with_the_right_words(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    f = str(_whole_card(alice, tmp_path))
    wrong = " ".join(" ".join(p) for p in derive(bob.identity.key))
    code, screen = _pair_card_in_terminal(bob, f, "alice", wrong + "\ngive up")  # re-asked until given up
    assert code == 9, screen
    assert Contacts.load(bob.contacts_path).status_of(alice.identity.key) == "candidate"
    right = " ".join(" ".join(p) for p in derive(alice.identity.key))
    code, screen = _pair_card_in_terminal(bob, f, "alice", right)
    assert code == 0, screen
    assert "agent card" in screen and "a claim" in screen
    assert Contacts.load(bob.contacts_path).status_of(alice.identity.key) == "confirmed"


class _CardServer:
    """A card on loopback that counts how often it is fetched."""

    def __init__(self, body: bytes) -> None:
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                outer.hits += 1
                if self.path != card_mod.CARD_PATH:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def card_server(make_home) -> Iterator[tuple[_CardServer, Home]]:
    alice = make_home("alice")
    srv = _CardServer(json.dumps(card_mod.agent_card(alice, "http://127.0.0.1:9/")).encode())
    yield srv, alice
    srv.close()


def test_a_card_from_a_url_is_cached_and_refetched_on_refresh(card_server, make_home, gage) -> None:
    srv, alice = card_server
    bob = make_home("bob")
    assert gage(bob, "pair", "--card", srv.url, "--name", "alice").code == 9  # no terminal
    assert srv.hits == 1
    assert Contacts.load(bob.contacts_path).status_of(alice.identity.key) == "candidate"
    assert gage(bob, "pair", "--card", srv.url, "--name", "alice").code == 9
    assert srv.hits == 1, "a card fetched within 15 minutes comes from the cache"
    assert gage(bob, "pair", "--card", srv.url, "--name", "alice", "--refresh").code == 9
    assert srv.hits == 2


def test_a_stale_cached_card_is_fetched_again(card_server, make_home) -> None:
    srv, alice = card_server
    bob = make_home("bob")
    card_mod.load(bob, srv.url)
    cached = next((bob.cache / "cards").iterdir())
    old = cached.stat().st_mtime - card_mod.CARD_TTL_SECONDS - 1
    os.utime(cached, (old, old))
    claim = card_mod.load(bob, srv.url)
    assert srv.hits == 2 and claim.key == alice.identity.key


def test_an_unreachable_card_url_is_an_io_error(make_home, gage) -> None:
    bob = make_home("bob")
    r = gage(bob, "pair", "--card", "http://127.0.0.1:9/", "--name", "x")
    assert r.code == 7 and "cannot fetch the agent card" in r.err


# --- transport claims never change the verdict --------------------------------------------


def _deliver(sender: Home, receiver: Home, tmp: Path, claims: dict[str, str]) -> str:
    bid = _bundle(sender, tmp)
    msg = artifact.export_message(sender.state_dir("outbox") / bid, protocol="1.0", claims=claims)
    [landed] = artifact.receive(receiver, msg, transport={"peer": "127.0.0.1"})
    return landed.id


def test_a_transport_naming_another_key_is_shown_and_the_signature_wins(make_home, gage, tmp_path: Path) -> None:
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    pair(bob, "alice", alice)
    bid = _deliver(alice, bob, tmp_path, {"from_name": "mallory", "from_key": mallory.identity.key_text})
    r = gage(bob, "verdict", bid, "--json")
    v = json.loads(r.out)
    assert v["verdict"] == "verified" and v["sender"]["name"] == "alice"
    t = v["transport"]
    assert t["carrier"] == "a2a" and t["protocol"] == "1.0" and t["peer"] == "127.0.0.1"
    # Both keys by their fingerprints, as every line names a key (issue 27).
    fp_m, fp_a = short_fingerprint(mallory.identity.key), short_fingerprint(alice.identity.key)
    assert any(fp_m in d and fp_a in d and "signature wins" in d for d in t["disagreements"])
    assert not any(mallory.identity.key_text[:40] in d for d in t["disagreements"])
    assert t["from_key"] == mallory.identity.key_text and t["from_key_fingerprint"] == fp_m
    assert f"naming key {fp_m}" in t["claim"] and mallory.identity.key_text[:40] not in t["claim"]
    assert any('"mallory"' in d for d in t["disagreements"])
    r = gage(bob, "read", bid, "--pending")
    frame = r.out.split("\n==== end of gage frame")[0]
    assert "via:" in frame and "DISAGREES with the signature" in frame


def test_a_transport_claiming_a_contact_does_not_lift_a_stranger(make_home, gage, tmp_path: Path) -> None:
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    pair(bob, "alice", alice)
    bid = _deliver(mallory, bob, tmp_path, {"from_name": "alice", "from_key": alice.identity.key_text})
    v = json.loads(gage(bob, "verdict", bid, "--json").out)
    assert v["verdict"] == "unverified"
    assert v["sender"]["name"] is None and v["sender"]["key"] == mallory.identity.key_text
    assert len(v["transport"]["disagreements"]) == 2


def test_a_transport_that_agrees_shows_no_disagreement(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    bid = _deliver(alice, bob, tmp_path, {"from_name": "alice", "from_key": alice.identity.key_text})
    v = json.loads(gage(bob, "verdict", bid, "--json").out)
    assert v["verdict"] == "verified" and v["transport"]["disagreements"] == []
    assert f"naming key {short_fingerprint(alice.identity.key)}" in v["transport"]["claim"]  # by its fingerprint (issue 27)


def test_a_folder_import_has_no_transport_claim(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    bid = _bundle(alice, tmp_path)
    store.import_bundle(bob, alice.state_dir("outbox") / bid)
    assert json.loads(gage(bob, "verdict", bid, "--json").out)["transport"] is None
