"""A mailbox outlives a key rotation (issue 26, item 7), and a protected home's sealing key is
sealed with its identity and opened with the same passphrase options as signing (item 11).

`gage key retire --reason superseded --new` binds the SAME sealing key again under the new
signing key (spec/keys.md section 6): what waits on the relay still opens, `mailbox fetch` finds
the same mailbox, and `directory publish` names the same sealing key under the new key.
A real nats-server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gagetest import pair
from relaytest import bundle, open_mailbox, relay  # noqa: F401  (fixtures)
from test_relay_where import _read_lines, _where_from

from gage.carriers.relay import directory, mailbox
from gage.home import listing, sealing
from gage.home.layout import Home

PASS = "correct horse battery staple"


def _fresh(home: Home) -> Home:
    return Home(home.root)


def _quiet_gage(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command with no terminal to ask on (a new session, standard input closed)."""
    return subprocess.run(
        [sys.executable, "-m", "gage.cli.main", "--home", str(home.root), *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, start_new_session=True, timeout=120, env={**os.environ},
    )


def test_a_waiting_envelope_lands_after_the_key_is_rotated(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    addr = open_mailbox(bob, relay.url)
    before = sealing.load(bob.root, bob.identity.key)
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    bid = bundle(alice, tmp_path)
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    old_key = bob.identity.key
    r = gage(bob, "key", "retire", "--reason", "superseded", "--new")
    assert r.code == 0, r.err
    bob = _fresh(bob)
    assert bob.identity.key != old_key
    now = sealing.load(bob.root, bob.identity.key)
    assert now is not None and now.recipient == before.recipient and now.binding.signing_key == bob.identity.key
    s = json.loads(gage(bob, "mailbox", "show", "--json").out)
    assert s["address"] == addr
    r = gage(bob, "mailbox", "fetch")
    assert r.code == 0, r.err
    assert listing.find(bob, bid) is not None and listing.find(bob, bid).state == "pending"
    r = gage(bob, "directory", "publish", "--handle", "bob", "--json")
    assert r.code == 0, r.err
    rec = json.loads(r.out)
    assert rec["sealing_key"] == before.recipient and rec["mailbox"] == addr and rec["signing_key"] == bob.identity.key_text
    assert mailbox and directory


def test_a_rotation_cut_short_is_healed_by_the_next_fetch(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    """sealing.json still bound by the retired key (a crash between the two writes): fetch finds the
    mailbox, binds the same key again under the new one, and lands what waits; nothing is dropped."""
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    bid = bundle(alice, tmp_path)
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    old_file = sealing.path_of(bob.root).read_bytes()
    recipient = sealing.load(bob.root, bob.identity.key).recipient
    assert gage(bob, "key", "retire", "--reason", "superseded", "--new").code == 0
    sealing.path_of(bob.root).write_bytes(old_file)
    bob = _fresh(bob)
    r = gage(bob, "mailbox", "fetch")
    assert r.code == 0 and "dropped" not in r.err, r.err
    assert listing.find(bob, bid) is not None
    k = sealing.load(bob.root, bob.identity.key)
    assert k is not None and k.recipient == recipient


def _protect(gage, home: Home, tmp: Path) -> str:
    pf = tmp / f"{home.identity.name}.pass"
    pf.write_text(PASS + "\n")
    pf.chmod(0o600)
    r = gage(home, "key", "protect", "--new-passphrase-file", str(pf))
    assert r.code == 0, r.err
    return str(pf)


def test_key_protect_seals_the_sealing_key_and_unprotect_opens_it(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    bob = make_home("bob")
    open_mailbox(bob, relay.url)
    plain = json.loads(sealing.path_of(bob.root).read_text())
    secret_text = plain["identity"]
    pf = _protect(gage, bob, tmp_path)
    doc = sealing.path_of(bob.root).read_text()
    assert secret_text not in doc and "AGE-SECRET-KEY" not in doc and "identity" not in json.loads(doc)
    assert (sealing.path_of(bob.root).stat().st_mode & 0o777) == 0o600
    r = gage(_fresh(bob), "key", "unprotect", "--passphrase-file", pf)
    assert r.code == 0, r.err
    assert json.loads(sealing.path_of(bob.root).read_text())["identity"] == secret_text


def test_a_protected_home_uses_the_relay_with_its_passphrase(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    pf = _protect(gage, bob, tmp_path)
    bob = _fresh(bob)
    # mailbox create and directory publish sign (the binding, the record): the passphrase options, like bundle's
    r = _quiet_gage(bob, "mailbox", "create", "--relay", relay.url)
    assert r.returncode == 13 and "passphrase" in r.stderr
    r = gage(bob, "mailbox", "create", "--relay", relay.url, "--passphrase-file", pf)
    assert r.code == 0, r.err
    assert "AGE-SECRET-KEY" not in sealing.path_of(bob.root).read_text()
    r = gage(bob, "directory", "publish", "--handle", "bob", "--passphrase-file", pf)
    assert r.code == 0, r.err
    assert gage(alice, "directory", "lookup", "bob", "--relay", relay.url).code == 0
    pair(alice, "bob", bob)
    bid = bundle(alice, tmp_path)
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    # no passphrase, no terminal: a clear refusal, and the envelope waits (nothing is dropped)
    r = _quiet_gage(bob, "mailbox", "fetch")
    assert r.returncode == 13 and "passphrase" in r.stderr and "dropped" not in r.stderr
    assert listing.find(_fresh(bob), bid) is None
    r = _quiet_gage(bob, "mailbox", "fetch", "--passphrase-file", pf)
    assert r.returncode == 0, r.stderr
    assert listing.find(_fresh(bob), bid) is not None
    # watch --mailbox takes the same options
    second = bundle(alice, tmp_path, name="two.txt", data=b"two")
    assert gage(alice, "deliver", second, "--to", "bob").code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "watch", "--mailbox", "--json", "--passphrase-file", pf],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ},
    )
    try:
        lines = _read_lines(proc, f"received {second[:12]}", 60)
        assert any(e["kind"] == "imported" and e["id"] == second for e in lines)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
