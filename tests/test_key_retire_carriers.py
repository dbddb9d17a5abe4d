"""A key statement is applied on every arrival path: the drop-folder watcher and a live A2A delivery too.

`gage import` and `gage a2a import` are covered in test_key_retire_apply.py; a carrier
that skipped the statement would leave a compromised key verified.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from gagetest import pair

from gage.carriers.a2a import client, server
from gage.carriers.events import WatchEvent
from gage.carriers.watch import Watcher
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox import ownkey, store
from gage.inbox.opening import open_home
from gage.trust import verdict as verdict_mod


def _retired_alice(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, Home, str, str]:
    """bob confirmed alice and holds one of her bundles; alice then retires her key as compromised."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    src = tmp_path / "report.txt"
    src.write_text("numbers")
    from gage.inbox import send

    m, dest = send.create(alice, [src], kind="share")
    store.import_bundle(bob, dest)
    done = ownkey.retire(alice, reason="compromised", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    assert verdict_mod.compute(bob, listing.resolve(bob, m.id)).verdict == "verified"
    return alice, bob, m.id, done.bundle.id


def test_the_watcher_applies_a_statement_it_imports(make_home, tmp_path: Path) -> None:
    alice, bob, old, statement = _retired_alice(make_home, tmp_path)
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copytree(tmp_path / "shared" / statement, drop / statement)
    events = []
    w = Watcher(bob, [drop], on_event=events.append)
    w.scan()
    assert any(e.kind == "key-statement" and "applied" in e.message for e in events), [e.message for e in events]
    assert Contacts.load(bob.contacts_path).by_name("alice").retired.reason == "compromised"
    assert verdict_mod.compute(bob, listing.resolve(bob, old)).verdict == "unverified"


def test_a_live_a2a_delivery_applies_a_statement(make_home, tmp_path: Path) -> None:
    alice, bob, old, statement = _retired_alice(make_home, tmp_path)
    events: list[WatchEvent] = []
    srv = server.Server(bob, host="127.0.0.1", port=0, on_event=events.append).start()
    try:
        result = client.send(alice, alice.state_dir("outbox") / statement, srv.url)
    finally:
        srv.stop(timeout=5)
    assert result.delivered
    # The watcher's `key-statement` event, as the test above has it from a drop folder.
    assert any(e.kind == "key-statement" and "key statement applied" in e.message for e in events), events
    assert Contacts.load(bob.contacts_path).by_name("alice").retired.reason == "compromised"
    assert verdict_mod.compute(bob, listing.resolve(bob, old)).verdict == "unverified"


def test_a_card_never_advertises_a_retired_key(make_home, gage, tmp_path: Path) -> None:
    alice = make_home("alice")
    done = ownkey.retire(alice, reason="compromised", new=False, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    alice = open_home(alice.root)
    r = gage(alice, "a2a", "card", "--json")
    # With --json the refusal is the one JSON object on standard output (issue 18).
    assert r.code == 9 and "retired" in json.loads(r.out)["error"]["message"]
    assert set(json.loads(r.out)) == {"error"}  # no card is printed, only the refusal
