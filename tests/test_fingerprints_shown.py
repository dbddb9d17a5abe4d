"""Fingerprints where people and agents read (issue 27, item 1).

A hybrid key's text is 3,984 characters. Every line a person reads names a key by its fingerprint
(and the name the verdict allows), never by its text; every JSON object that names a key carries
its fingerprint beside it, so a script never re-derives what the screen shows. Only `gage key
export` and `gage id --full` print the whole key, because there it is the point."""

from __future__ import annotations

import builtins
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gagetest import Run, arrive

from gage.format.keys import parse_key
from gage.format.keys.fingerprint import fingerprint
from gage.format.words import derive
from gage.home.layout import Home
from gage.inbox import send

Gage = Callable[..., Run]
LONGEST = 300


def _typed_words(monkeypatch: pytest.MonkeyPatch, key: bytes) -> None:
    """`gage pair` at a terminal, the person typing the eight words right."""
    words = " ".join(w for p in derive(key) for w in p)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(builtins, "input", lambda prompt="": words)


def _key_texts(*homes: Home) -> list[str]:
    """What must never be on a human line: any key's hex (its first 32 digits are enough to find it)."""
    return [h.identity.key.hex()[:32] for h in homes] + ["ed25519+mldsa65:"]


def _check_lines(r: Run, where: str, keys: list[str]) -> None:
    for line in (r.out + r.err).splitlines():
        assert len(line) <= LONGEST, f"{where}: a line of {len(line)} characters: {line[:120]}..."
        for k in keys:
            assert k not in line, f"{where}: key text on a line: {line[:160]}"


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


def _check_json(r: Run, where: str) -> int:
    """Every field whose value is a key text has its fingerprint beside it: `fingerprint` beside `key`,
    `<field>_fingerprint` beside any other field. Returns how many keys were named."""
    assert r.code == 0, f"{where}: {r.err}"
    named = 0
    for obj in _objects(json.loads(r.out)):
        for field, value in obj.items():
            if isinstance(value, str) and value.startswith(("ed25519:", "ed25519+mldsa65:")):
                want = "fingerprint" if field == "key" else f"{field}_fingerprint"
                assert obj.get(want) == fingerprint(parse_key(value)), f"{where}: {field} without {want}: {sorted(obj)}"
                named += 1
    return named


@pytest.fixture
def hybrid(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, Home, str]:
    alice, bob = make_home("alice"), make_home("bob")
    assert len(alice.identity.key_text) == 3984 and len(bob.identity.key_text) == 3984
    src = tmp_path / "report.txt"
    src.write_text("the numbers for Q3\n")
    m, _ = send.create(bob, [src], kind="share", subject="Q3 report", copy_to=tmp_path / "shared")
    return alice, bob, m.id


def test_a_hybrid_home_s_human_lines_are_short_and_name_keys_by_fingerprint(
    gage: Gage, hybrid: tuple[Home, Home, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_home: Callable[[str], Home]
) -> None:
    alice, bob, bid = hybrid
    keys = _key_texts(alice, bob)
    folder = str(tmp_path / "shared" / bid)
    before = [
        ("verify", folder), ("import", folder), ("list",), ("verdict", bid), ("read", bid, "--pending"),
        ("contacts",), ("id",), ("journal", "show"), ("a2a", "card"), ("a2a", "card", "--url", "http://127.0.0.1:8471/"),
    ]
    for argv in before:
        r = gage(alice, *argv)
        assert r.code == 0, (argv, r.err)
        _check_lines(r, " ".join(argv), keys)
    r = gage(alice, "verify", folder)
    assert f"signed by key {fingerprint(bob.identity.key)}" in r.out
    _typed_words(monkeypatch, bob.identity.key)
    r = gage(alice, "pair", str(bid), "--name", "bob")
    assert r.code == 0, r.err
    _check_lines(r, "pair", keys)
    assert f"Confirmed. bob is now a contact ({fingerprint(bob.identity.key)})." in r.out
    after = [("list",), ("verdict", bid), ("contacts",), ("verify", bid), ("accept", bid), ("journal", "show"), ("id",)]
    for argv in after:
        r = gage(alice, *argv)
        assert r.code == 0, (argv, r.err)
        _check_lines(r, " ".join(argv), keys)
    assert f"signed by bob ({fingerprint(bob.identity.key)})" in gage(alice, "verify", bid).out
    r = gage(alice, "contacts", "remove", "bob")
    assert r.code == 0, r.err
    _check_lines(r, "contacts remove", keys)
    carol = make_home("carol")
    m, dest = send.create(carol, [tmp_path / "shared" / bid / "payload" / "report.txt"], kind="share")
    arrive(alice, dest)
    r = gage(alice, "contacts", "forget", fingerprint(carol.identity.key))
    assert r.code == 0, r.err
    _check_lines(r, "contacts forget", _key_texts(alice, bob, carol))
    assert fingerprint(carol.identity.key) in r.out


def test_id_full_prints_the_whole_key(gage: Gage, hybrid: tuple[Home, Home, str]) -> None:
    alice, _, _ = hybrid
    r = gage(alice, "id", "--full")
    assert r.code == 0, r.err
    assert alice.identity.key_text in r.out.splitlines()
    assert fingerprint(alice.identity.key) in r.out


def test_every_json_object_that_names_a_key_has_its_fingerprint(
    gage: Gage, hybrid: tuple[Home, Home, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob, bid = hybrid
    folder = str(tmp_path / "shared" / bid)
    r = gage(alice, "verify", "--json", folder)
    assert _check_json(r, "verify") == 1
    signer = json.loads(r.out)["signer"]
    assert signer["fingerprint"] == fingerprint(bob.identity.key) and signer["claimed_name"] == "bob"
    assert _check_json(gage(alice, "import", "--json", folder), "import") >= 1
    for argv in [("list", "--json"), ("verdict", "--json", bid), ("contacts", "--json"), ("id", "--json"), ("journal", "show", "--json")]:
        assert _check_json(gage(alice, *argv), " ".join(argv)) >= 1, argv
    _typed_words(monkeypatch, bob.identity.key)
    assert gage(alice, "pair", bid, "--name", "bob").code == 0
    src = tmp_path / "answer.txt"
    src.write_text("thanks\n")
    for argv in [
        ("list", "--json"), ("verdict", "--json", bid), ("contacts", "--json"), ("bundle", "--json", str(src), "--to", "bob"),
    ]:
        assert _check_json(gage(alice, *argv), " ".join(argv)) >= 1, argv
    r = gage(alice, "list", "--json")
    sender = next(x["sender"] for x in json.loads(r.out) if x["id"] == bid)
    assert sender["name"] == "bob" and sender["fingerprint"] == fingerprint(bob.identity.key)


def test_the_relay_s_lines_name_keys_by_fingerprint(gage: Gage, make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """`mailbox create`, `mailbox show` and `directory lookup` on hybrid homes: short lines, no key text,
    sizes as people read them; --json has the whole key beside its fingerprint."""
    pytest.importorskip("nats")
    from relaytest import relay as _unused  # noqa: F401  (the fixture's module is importable)

    from gage.carriers.relay import directory, server

    srv = server.Server(store=tmp_path / "relay-store", name="fp-relay")
    srv.start()
    try:
        alice, bob = make_home("alice"), make_home("bob")
        keys = _key_texts(alice, bob)
        r = gage(alice, "mailbox", "create", "--relay", srv.url)
        assert r.code == 0, r.err
        _check_lines(r, "mailbox create", keys)
        assert "MiB" in r.err or "KiB" in r.err or "GiB" in r.err, r.err  # sizes as people read them
        r = gage(alice, "mailbox", "show")
        _check_lines(r, "mailbox show", keys)
        assert fingerprint(alice.identity.key) in r.out
        shown = json.loads(gage(alice, "mailbox", "show", "--json").out)
        assert shown["signing_key"] == alice.identity.key_text and shown["signing_key_fingerprint"] == fingerprint(alice.identity.key)
        assert gage(bob, "mailbox", "create", "--relay", srv.url).code == 0
        directory.publish(bob, "bob-fp", srv.url, relay_for_record=srv.url)
        r = gage(alice, "directory", "lookup", "bob-fp")
        assert r.code == 0, r.err
        _check_lines(r, "directory lookup", keys)
        assert fingerprint(bob.identity.key) in r.out
        assert _check_json(gage(alice, "directory", "lookup", "bob-fp", "--json"), "directory lookup --json") >= 1
    finally:
        srv.stop(kill=True)


def test_pair_takes_a_candidate_s_fingerprint_as_contacts_shows_it(
    gage: Gage, hybrid: tuple[Home, Home, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The messages that suggest pairing name a key by its fingerprint, so `gage pair` takes one."""
    alice, bob, bid = hybrid
    assert gage(alice, "import", str(tmp_path / "shared" / bid)).code == 0
    fp = fingerprint(bob.identity.key)
    assert fp in gage(alice, "contacts").out
    _typed_words(monkeypatch, bob.identity.key)
    r = gage(alice, "pair", fp, "--name", "bob")
    assert r.code == 0, r.err
    assert f"Confirmed. bob is now a contact ({fp})." in r.out
    assert 'claims the name "bob"' in r.out  # the candidate's claim and source, as from the bundle
    assert gage(alice, "pair", "0000-0000-0000", "--name", "x").code == 6  # no such candidate
