"""`--json` on the rest of the commands that report something (issue 11): init, key export, bundle,
forward, key publish, authority check and init, contacts remove and forget, demo; one sender shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gagetest import pair

from gage.cli.help import subcommands, walk
from gage.cli.main import build_parser
from gage.format import strictjson
from gage.format.errors import Exit
from gage.home.layout import Home
from gage.inbox import send, store
from gage.inbox.opening import open_home

SENDER_KEYS = {"key", "name", "status", "claimed_name", "signature_ok", "is_me"}
MADE_KEYS = {"id", "state", "path", "copied_to", "kind", "created", "subject", "parent", "thread", "to", "files", "total_size", "sender"}


def _strict(text: str) -> object:
    strictjson.loads(text.encode("utf-8"), limit=1 << 24)  # gage's own strict reader accepts it
    assert text.isascii()
    return json.loads(text)


@pytest.fixture
def two(make_home) -> tuple[Home, Home]:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    return alice, bob


def test_init_json_gives_the_home_and_the_identity_as_id_does(gage, tmp_path: Path) -> None:
    r = gage(tmp_path / "h", "init", "--name", "carol", "--json")
    assert r.code == 0, r.err
    doc = _strict(r.out)
    assert isinstance(doc, dict)
    assert doc["home"] == str(tmp_path / "h") and doc["name"] == "carol" and doc["key"].startswith("ed25519+mldsa65:")
    ident = _strict(gage(tmp_path / "h", "id", "--json").out)
    assert {k: doc[k] for k in ("name", "key", "fingerprint", "words")} == ident
    again = gage(tmp_path / "h", "init", "--name", "carol", "--json")
    # A refusal in --json mode is one error object a script can read (issue 18), nothing else.
    assert again.code == 9 and _strict(again.out)["error"]["stage"] == "refused" and again.err == ""


def test_key_export_json_with_and_without_a_file(two, gage, tmp_path: Path) -> None:
    alice, _bob = two
    doc = _strict(gage(alice, "key", "export", "--json").out)
    assert isinstance(doc, dict)
    assert doc["name"] == "alice" and doc["key"] == alice.identity.key_text and doc["path"] is None
    assert json.loads(doc["keyfile"])["key"] == alice.identity.key_text
    target = tmp_path / "alice.key"
    r = gage(alice, "key", "export", "-o", str(target), "--json")
    doc2 = _strict(r.out)
    assert isinstance(doc2, dict)
    assert doc2["path"] == str(target) and target.read_text() == doc2["keyfile"] == doc["keyfile"]


def test_bundle_json_describes_the_bundle_and_its_sender_as_verdict_does(two, gage, tmp_path: Path) -> None:
    alice, _bob = two
    f = tmp_path / "note.txt"
    f.write_bytes(b"hello\n")
    r = gage(alice, "bundle", str(f), "--kind", "share", "--subject", "hi \x1b[31m", "--to", "bob", "-o", str(tmp_path / "wire"), "--json")
    assert r.code == 0, r.err
    doc = _strict(r.out)
    assert isinstance(doc, dict) and set(doc) == MADE_KEYS
    assert doc["state"] == "outbox" and doc["kind"] == "share" and doc["subject"] == "hi \x1b[31m"
    assert doc["files"] == [{"path": "note.txt", "size": 6, "sha256": doc["files"][0]["sha256"]}]
    assert doc["total_size"] == 6 and [t["name"] for t in doc["to"]] == ["bob"]
    assert doc["copied_to"] == str(tmp_path / "wire" / doc["id"]) and Path(doc["copied_to"]).is_dir()
    assert Path(doc["path"]) == alice.state_dir("outbox") / doc["id"]
    # One shape, and the same facts, as the verdict and the list give for this bundle.
    verdict = _strict(gage(alice, "verdict", doc["id"], "--json").out)
    assert isinstance(verdict, dict)
    assert set(doc["sender"]) >= SENDER_KEYS and doc["sender"] == verdict["sender"]
    listed = _strict(gage(alice, "list", "--json").out)
    assert isinstance(listed, list)
    assert [row["sender"] for row in listed if row["id"] == doc["id"]] == [doc["sender"]]
    assert doc["sender"]["is_me"] is True and doc["sender"]["signature_ok"] is True
    # My own key is "mine", never "unknown" beside is_me (issue 18: one shape that does not contradict itself).
    assert doc["sender"]["status"] == "mine" and doc["sender"]["name"] is None


def test_my_own_key_is_mine_even_where_the_signature_fails(two, gage, tmp_path: Path) -> None:
    """status is the key's standing here, whatever signed; is_me is only for a proven signer."""
    alice, _bob = two
    f = tmp_path / "note.txt"
    f.write_bytes(b"hello\n")
    made = _strict(gage(alice, "bundle", str(f), "--kind", "share", "--json").out)
    assert isinstance(made, dict)
    sig = alice.state_dir("outbox") / made["id"] / "manifest.sig"
    raw = bytearray(sig.read_bytes())
    raw[0] ^= 1
    sig.write_bytes(bytes(raw))
    verdict = _strict(gage(alice, "verdict", made["id"], "--json").out)
    assert isinstance(verdict, dict) and verdict["verdict"] == "invalid"
    assert verdict["sender"]["status"] == "mine" and verdict["sender"]["is_me"] is False
    assert verdict["sender"]["signature_ok"] is False and verdict["sender"]["name"] is None


def test_bundle_without_json_still_prints_only_the_id(two, gage, tmp_path: Path) -> None:
    alice, _bob = two
    f = tmp_path / "note.txt"
    f.write_bytes(b"x")
    r = gage(alice, "bundle", str(f), "--kind", "share")
    assert r.code == 0 and len(r.out.split()) == 1 and len(r.out.strip()) == 64


def test_forward_json_names_the_bundle_forwarded(two, gage, make_home, tmp_path: Path) -> None:
    alice, bob = two
    carol = make_home("carol")
    pair(alice, "carol", carol)
    src = tmp_path / "report.txt"
    src.write_bytes(b"report\n")
    m, _dest = send.create(bob, [src], kind="share", copy_to=tmp_path / "wire")
    store.import_bundle(alice, tmp_path / "wire" / m.id)
    assert gage(alice, "accept", m.id).code == 0
    r = gage(alice, "forward", m.id, "--to", "carol", "--json")
    assert r.code == 0, r.err
    doc = _strict(r.out)
    assert isinstance(doc, dict) and set(doc) == MADE_KEYS | {"forwarded"}
    assert doc["forwarded"] == m.id and doc["id"] != m.id and doc["copied_to"] is None
    assert [t["name"] for t in doc["to"]] == ["carol"]
    verdict = _strict(gage(alice, "verdict", doc["id"], "--json").out)
    assert isinstance(verdict, dict) and doc["sender"] == verdict["sender"]


def test_key_publish_json_is_a_made_bundle(make_home, gage, tmp_path: Path) -> None:
    home = make_home("dana")
    old = home.identity.key_text
    assert gage(home, "key", "retire", "--reason", "superseded", "--new").code == 0
    r = gage(home, "key", "publish", old, "-o", str(tmp_path / "out"), "--json")
    assert r.code == 0, r.err
    doc = _strict(r.out)
    assert isinstance(doc, dict) and set(doc) == MADE_KEYS
    assert doc["files"][0]["path"] == "gage-key-statement.json"
    assert doc["copied_to"] == str(tmp_path / "out" / doc["id"])
    verdict = _strict(gage(home, "verdict", doc["id"], "--json").out)
    assert isinstance(verdict, dict) and doc["sender"] == verdict["sender"]


def test_authority_check_and_init_json(two, gage) -> None:
    alice, _bob = two
    alice.authority_path.unlink(missing_ok=True)
    doc = _strict(gage(alice, "authority", "check", "--json").out)
    assert doc == {"path": str(alice.authority_path), "exists": False, "ok": True, "errors": [], "grants": []}
    r = gage(alice, "authority", "init", "--json")
    assert r.code == 0 and _strict(r.out) == {"path": str(alice.authority_path)}
    alice.authority_path.write_text('[[grant]]\ncontact = "bob"\nkind = "share"\nmay = "file it under reports"\n')
    r = gage(alice, "authority", "check", "--json")
    doc = _strict(r.out)
    assert r.code == 0, r.out + r.err
    assert isinstance(doc, dict) and doc["ok"] is True and doc["errors"] == []
    assert doc["grants"] == [{"contact": "bob", "kind": "share", "may": "file it under reports", "line": 1}]
    alice.authority_path.write_text('[[grant]]\ncontact = "mallory\\u001b[2J"\nkind = "share"\nmay = "x"\n')
    r = gage(alice, "authority", "check", "--json")
    doc = _strict(r.out)
    assert r.code == Exit.MALFORMED and isinstance(doc, dict) and doc["ok"] is False and doc["errors"]
    assert "\x1b" not in r.out


def test_contacts_remove_and_forget_json(two, gage, make_home, tmp_path: Path) -> None:
    alice, bob = two
    r = gage(alice, "contacts", "remove", "bob", "--json")
    doc = _strict(r.out)
    assert r.code == 0 and isinstance(doc, dict)
    assert doc["removed"]["name"] == "bob" and doc["removed"]["key"] == bob.identity.key_text
    # A candidate: a bundle from a key nobody here confirmed.
    eve = make_home("eve")
    src = tmp_path / "e.txt"
    src.write_bytes(b"e")
    m, _ = send.create(eve, [src], kind="share", copy_to=tmp_path / "wire")
    assert gage(alice, "import", str(tmp_path / "wire" / m.id)).code == 0
    cands = [c for c in _strict(gage(alice, "contacts", "--json").out) if c["status"] == "candidate"]  # type: ignore[union-attr]
    if not cands:
        pytest.skip("this tree records no candidate on import")
    r = gage(alice, "contacts", "forget", cands[0]["key"], "--json")
    assert r.code == 0 and _strict(r.out) == {"forgot": cands[0]["key"], "forgot_fingerprint": cands[0]["fingerprint"]}


def test_demo_json_gives_the_home(gage, tmp_path: Path) -> None:
    r = gage(None, "demo", "--no-tui", "--dir", str(tmp_path / "demo"), "--json")
    assert r.code == 0, r.err
    doc = _strict(r.out)
    assert isinstance(doc, dict) and set(doc) == {"home"}
    home = Path(doc["home"])
    assert home.is_relative_to(tmp_path / "demo") and open_home(home).identity.name


# Commands that print nothing a script would parse, or print data already: the terminal
# interface, the ceremony (a person at a terminal), a script or a page, an A2A artifact
# (JSON itself), the endpoint (a log), the MCP server (JSON-RPC on standard output itself), and a
# relay's server configuration (a file for nats-server).
NO_JSON = {"tui", "pair", "invite", "join", "completion", "man", "a2a export", "a2a serve", "mcp", "relay config", "relay nkey", "relay reload"}


def test_every_command_that_reports_has_json() -> None:
    missing = []
    for path, p in walk(build_parser()):
        if not path or subcommands(p) or path in NO_JSON:
            continue
        if not any("--json" in a.option_strings for a in p._actions):
            missing.append(path)
    assert missing == []


def test_man_prints_the_generated_page(gage) -> None:
    r = gage(None, "man")
    assert r.code == 0
    page = (Path(__file__).resolve().parent.parent / "docs" / "gage.1").read_text(encoding="utf-8")
    assert r.out == page
