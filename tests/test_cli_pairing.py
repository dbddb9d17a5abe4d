"""`gage pair` as two people on a call do it (issue 18): a misheard pair is asked again with the
nearest list words, a near miss is never accepted, only `give up` ends it, a name clash is
found before any word is read, and `--mutual` does both directions in one flow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_ceremony import _keyfile, _read_until, _words

from gage.format.errors import Exit
from gage.format.keys import key_text
from gage.format.words import derive, hearing
from gage.format.words.wordlist import EVEN, ODD
from gage.home.contacts import Contacts
from gage.home.layout import Home


def converse(home: Home, args: list[str], steps: list[tuple[bytes, str]]) -> tuple[int, str]:
    """Run `gage pair ARGS` on a pseudo-terminal: for each step, wait for the text, then type the line."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(home.root), "pair", *args],
        stdin=slave, stdout=slave, stderr=slave, close_fds=True, start_new_session=True,
        env={**os.environ, "TERM": "dumb"},
    )
    os.close(slave)
    screen = b""
    try:
        for marker, line in steps:
            screen += _read_until(master, marker, 30)
            assert marker in screen, screen
            os.write(master, line.encode() + b"\n")
        screen += _read_until(master, None, 30)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, screen.decode("utf-8", errors="replace").replace("\r\n", "\n")


@pytest.fixture
def two(make_home, tmp_path: Path) -> tuple[Home, Home, Path]:
    alice, bob = make_home("alice"), make_home("bob")
    return alice, bob, _keyfile(bob, tmp_path)


def _typo(word: str) -> str:
    return word[:-1] + ("x" if word[-1] != "x" else "y")


def test_a_misheard_word_is_asked_again_with_the_nearest_words_then_confirms(two) -> None:
    alice, bob, kf = two
    w = _words(bob)
    first = " ".join([*w[:4], _typo(w[4]), *w[5:]])
    code, screen = converse(alice, [str(kf), "--name", "bob"], [
        (b"their 8 words:", first),
        (b"their pair 3 again", f"{w[4]} {w[5]}"),
    ])
    assert code == 0, screen
    assert f"did you mean {w[4]}" in screen
    assert "Confirmed." in screen
    assert {c.name for c in Contacts.load(alice.contacts_path).confirmed.values()} == {"bob"}


def test_a_near_miss_is_never_accepted_and_give_up_ends_it(two) -> None:
    alice, bob, kf = two
    w = _words(bob)
    before = alice.journal.entries()
    code, screen = converse(alice, [str(kf), "--name", "bob"], [
        (b"their 8 words:", " ".join([_typo(w[0]), *w[1:]])),
        (b"their pair 1 again", f"{_typo(w[0])} {w[1]}"),  # the same near miss again: asked again
        (b"their pair 1 again", "give up"),
    ])
    assert code == Exit.REFUSED, screen
    assert "NOT confirmed" in screen and "pair 1 did not match" in screen
    assert Contacts.load(alice.contacts_path).confirmed == {}
    assert [e for e in alice.journal.entries() if e["event"] == "paired"] == []
    assert alice.journal.entries()[: len(before)] == before


def test_a_list_word_that_differs_gets_no_suggestion(two) -> None:
    alice, bob, kf = two
    w = _words(bob)
    wrong = ODD[(ODD.index(w[3]) + 1) % 256]
    code, screen = converse(alice, [str(kf), "--name", "bob"], [
        (b"their 8 words:", " ".join([*w[:3], wrong, *w[4:]])),
        (b"their pair 2 again", "give up"),
    ])
    assert code == Exit.REFUSED
    assert "not this pair's words" in screen and "did you mean" not in screen
    assert w[3] not in screen.split("their 8 words:")[1]  # the expected word is never shown


def test_pair_by_pair_typing_works(two) -> None:
    alice, bob, kf = two
    w = _words(bob)
    code, screen = converse(alice, [str(kf), "--name", "bob"], [
        (b"their 8 words:", f"{w[0]} {w[1]}"),
        (b"their pair 2:", f"{w[2]} {w[3]}"),
        (b"their pair 3:", f"{w[4]} {w[5]}"),
        (b"their pair 4:", f"{w[6]}-{w[7]}"),
    ])
    assert code == 0, screen


def test_a_name_clash_is_refused_before_any_word_is_read(make_home, tmp_path: Path) -> None:
    from gagetest import pair

    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    pair(alice, "bob", bob)
    code, screen = converse(alice, [str(_keyfile(carol, tmp_path)), "--name", "bob"], [])
    assert code == Exit.REFUSED, screen
    assert "already confirmed as 'bob'" in screen and "gage contacts remove bob" in screen and "another --name" in screen
    for a, b in derive(alice.identity.key):
        assert f"{a}-{b}" not in screen and f"{a} {b}" not in screen  # no words were read out
    assert "their 8 words" not in screen


def test_mutual_both_homes_confirm_in_one_flow_and_show_the_same_closing_pair(two, tmp_path: Path) -> None:
    alice, bob, kf = two
    akf = _keyfile(alice, tmp_path)
    wb, wa = _words(bob), _words(alice)
    steps_a = [(f"their pair {i + 1}:".encode(), f"{wb[2 * i]} {wb[2 * i + 1]}") for i in range(4)]
    steps_b = [(f"their pair {i + 1}:".encode(), f"{wa[2 * i]} {wa[2 * i + 1]}") for i in range(4)]
    code_a, screen_a = converse(alice, [str(kf), "--name", "bob", "--mutual"], steps_a)
    code_b, screen_b = converse(bob, [str(akf), "--name", "alice", "--mutual"], steps_b)
    assert code_a == code_b == 0, screen_a + screen_b
    for i, (x, y) in enumerate(derive(alice.identity.key)):
        assert f"Read YOUR pair {i + 1}:  {x}-{y}" in screen_a  # a pair is written one way (spec/words.md)
    closing = "-".join(hearing.closing_pair(alice.identity.key, bob.identity.key))
    assert f"closing pair: {closing}" in screen_a and f"closing pair: {closing}" in screen_b
    assert key_text(bob.identity.key) in {key_text(c.key) for c in Contacts.load(alice.contacts_path).confirmed.values()}
    assert key_text(alice.identity.key) in {key_text(c.key) for c in Contacts.load(bob.contacts_path).confirmed.values()}
    method = Contacts.load(alice.contacts_path).confirmed["bob"].method
    assert method == "word-pairs, mutual"


def test_the_closing_pair_differs_when_one_side_holds_another_key(make_home) -> None:
    a, b, m = make_home("a"), make_home("b"), make_home("m")
    assert hearing.closing_pair(a.identity.key, b.identity.key) == hearing.closing_pair(b.identity.key, a.identity.key)
    assert hearing.closing_pair(a.identity.key, b.identity.key) != hearing.closing_pair(m.identity.key, b.identity.key)


def test_suggestions_come_from_the_typed_word_only() -> None:
    assert hearing.nearest("aardvarc") == ["aardvark"]
    assert hearing.nearest(EVEN[5]) [0] == EVEN[5]
    assert all(hearing.is_give_up(x) for x in ("give up", "GIVE  UP", "quit"))
    assert not any(w in EVEN or w in ODD for g in hearing.GIVE_UP for w in g.split())


def test_suggestions_look_in_the_list_of_the_words_position_first() -> None:
    assert all(w in EVEN for w in hearing.nearest("escapx", position=0))
    check = hearing.check_pair([("escape", "determine")] * 4, 0, ["escapx", "determine"])
    assert not check.ok and check.suggestions == {"escapx": hearing.nearest("escapx", position=0)}
