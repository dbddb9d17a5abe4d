"""A hostile directory replays an old record: this home remembers the newest `published_at` it has
seen per handle and signing key (directory-seen.json) and refuses an older one, on lookup and on
`pair --directory`, keeping nothing from it (spec/relay.md section 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from relaytest import open_mailbox, relay  # noqa: F401  (fixtures)
from test_relay_directory import _handle, _hostile_put

from gage.carriers.relay import dirrecord
from gage.format.errors import Exit, RefusedError
from gage.format.keys import short_fingerprint
from gage.home import dirseen, sealing, whereabouts
from gage.home.contacts import Contacts
from gage.home.layout import Home


def _record_at(home: Home, handle: str, published_at: str, relay_url: str) -> bytes:
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    return dirrecord.build(home.identity.secret, handle, key.binding, relay_url, published_at=published_at).to_bytes()


def test_an_older_record_than_one_seen_is_refused_and_nothing_is_kept(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(alice, relay.url)
    open_mailbox(bob, relay.url)
    h = _handle(tmp_path, "bob")
    old = _record_at(bob, h, "2026-01-01T00:00:00Z", "nats://old-relay.example:4222")
    new = _record_at(bob, h, "2026-03-01T00:00:00Z", relay.url)
    _hostile_put(relay.url, h, new)
    assert gage(alice, "directory", "lookup", h).code == 0
    assert dirseen.load(alice)[0].published_at == "2026-03-01T00:00:00Z"
    before = (alice.root / "where.json").read_bytes(), alice.contacts_path.read_bytes()
    # the directory serves the older record again (it was honestly signed, once)
    _hostile_put(relay.url, h, old)
    r = gage(alice, "directory", "lookup", h)
    assert r.code == Exit.REFUSED
    assert "a replayed record: it was published 2026-01-01T00:00:00Z, older than" in r.err and "2026-03-01T00:00:00Z" in r.err
    assert ((alice.root / "where.json").read_bytes(), alice.contacts_path.read_bytes()) == before  # nothing kept
    assert whereabouts.of(alice, bob.identity.key).relay == relay.url
    r = gage(alice, "pair", "--directory", h, "--name", "bob")  # the ceremony is not even offered
    assert r.code == Exit.REFUSED and "a replayed record" in r.err
    r = gage(alice, "directory", "lookup", h, "--json")
    assert r.code == Exit.REFUSED and "replayed" in json.loads(r.out)["error"]["message"]
    # the same record again, and a newer one, pass
    _hostile_put(relay.url, h, new)
    assert gage(alice, "directory", "lookup", h).code == 0
    _hostile_put(relay.url, h, _record_at(bob, h, "2026-04-01T00:00:00Z", relay.url))
    assert gage(alice, "directory", "lookup", h).code == 0
    assert [s.published_at for s in dirseen.load(alice)] == ["2026-04-01T00:00:00Z"]


def test_another_keys_older_record_for_a_seen_handle_is_flagged(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    """bob's handle, seen with bob's newer record, then served with mallory's older one: not refused
    (a handle can change hands) but flagged, and mallory's key is only ever a candidate."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    open_mailbox(alice, relay.url)
    h = _handle(tmp_path, "bob")
    _hostile_put(relay.url, h, _record_at(bob, h, "2026-03-01T00:00:00Z", relay.url))
    assert gage(alice, "directory", "lookup", h).code == 0
    _hostile_put(relay.url, h, _record_at(mallory, h, "2026-02-01T00:00:00Z", relay.url))
    r = gage(alice, "directory", "lookup", h)
    assert r.code == 0 and "WARNING" in r.out and "a new key behind this handle" in r.out and short_fingerprint(bob.identity.key) in r.out
    assert "under another key" in json.loads(gage(alice, "directory", "lookup", h, "--json").out)["note"]
    assert Contacts.load(alice.contacts_path).confirmed == {}


def test_a_new_key_behind_a_handle_is_always_flagged_and_a_future_date_moves_nothing(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    """Issue 26 item 11: mallory's record for bob's handle, NEWER than bob's (even dated 2099), is
    flagged on lookup and on `pair --directory`; bob's genuine record, read again afterwards, is not."""
    from test_ceremony import run_pair_in_terminal

    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    open_mailbox(alice, relay.url)
    h = _handle(tmp_path, "bob")
    genuine = _record_at(bob, h, "2026-03-01T00:00:00Z", relay.url)
    _hostile_put(relay.url, h, genuine)
    r = gage(alice, "directory", "lookup", h)
    assert r.code == 0 and "WARNING" not in r.out
    for when in ("2026-04-01T00:00:00Z", "2099-01-01T00:00:00Z"):
        _hostile_put(relay.url, h, _record_at(mallory, h, when, relay.url))
        r = gage(alice, "directory", "lookup", h)
        assert r.code == 0 and "WARNING" in r.out and "a new key behind this handle" in r.out, r.out
        assert json.loads(gage(alice, "directory", "lookup", h, "--json").out)["note"]
    code, screen = run_pair_in_terminal(alice, ["--directory", h, "--relay", relay.url], "bob", "give up")
    assert code == Exit.REFUSED and "WARNING" in screen and "a new key behind this handle" in screen
    # the genuine record again, after the future-dated swap: no warning moved onto it
    _hostile_put(relay.url, h, _record_at(bob, h, "2026-05-01T00:00:00Z", relay.url))
    r = gage(alice, "directory", "lookup", h)
    assert r.code == 0 and "WARNING" not in r.out, r.out
    assert json.loads(gage(alice, "directory", "lookup", h, "--json").out)["note"] is None


def test_the_rule_the_vectors_state() -> None:
    assert dirseen.replay_problem(None, "2026-01-01T00:00:00Z") is None
    assert dirseen.replay_problem("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z") is None
    assert dirseen.replay_problem("2026-01-01T00:00:01Z", "2026-01-01T00:00:00Z") is not None


def test_a_damaged_memory_is_an_error_naming_it_and_is_never_overwritten(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(alice, relay.url)
    h = _handle(tmp_path, "bob")
    _hostile_put(relay.url, h, _record_at(bob, h, "2026-03-01T00:00:00Z", relay.url))
    (alice.root / dirseen.FILE).write_bytes(b"{not json")
    r = gage(alice, "directory", "lookup", h)
    assert r.code == Exit.MALFORMED and "directory-seen" in r.err
    assert (alice.root / dirseen.FILE).read_bytes() == b"{not json"
    with pytest.raises(RefusedError):
        (alice.root / dirseen.FILE).unlink()
        dirseen.admit(alice, h, bob.identity.key, "2026-03-01T00:00:00Z")
        dirseen.admit(alice, h, bob.identity.key, "2026-02-01T00:00:00Z")


def test_two_keys_first_seen_in_the_same_second_keep_their_order(make_home, monkeypatch) -> None:
    """`first_seen` has whole seconds: a handle seen under bob's key and then, in the same second,
    under mallory's still flags mallory's, however the two keys sort (a tie is decided by order)."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    monkeypatch.setattr(dirseen, "now_text", lambda: "2026-06-01T00:00:00Z")
    for first, second in ((bob, mallory), (mallory, bob)):
        for p in alice.root.glob(dirseen.FILE):
            p.unlink()
        assert dirseen.admit(alice, "h", first.identity.key, "2026-05-01T00:00:00Z") is None
        assert dirseen.admit(alice, "h", second.identity.key, "2026-05-01T00:00:00Z") is not None
        assert dirseen.admit(alice, "h", first.identity.key, "2026-05-02T00:00:00Z") is None
        assert dirseen.admit(alice, "h", second.identity.key, "2026-05-02T00:00:00Z") is not None
