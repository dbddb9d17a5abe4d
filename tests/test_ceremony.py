"""The word-pair ceremony, driven the way a person drives it: through a real terminal.

`gage pair` runs in a subprocess whose standard input, output and error are a
pseudo-terminal; the test reads the prompt and types words, as a person would. What
counts is what lands on disk: contacts.toml and the journal.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from gagetest import pair, run_gage_process

from gage.cli.main import build_parser
from gage.format.errors import Exit, RefusedError
from gage.format.keys import key_text, short_fingerprint
from gage.format.keys.file import KeyFile
from gage.format.words import PAIRS, derive
from gage.format.words.wordlist import EVEN, ODD
from gage.home.cache.wordpairs import WordCache
from gage.home.contacts import Contacts
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.trust import ceremony

PROMPT = b"their 8 words:"
ROOT = Path(__file__).resolve().parent.parent


def _keyfile(home: Home, where: Path, claimed: str | None = None) -> Path:
    """The key file `gage key export` would write (optionally claiming another name)."""
    path = where / f"{home.identity.name}.gagekey"
    path.write_bytes(KeyFile(key=home.identity.key, name=claimed or home.identity.name).to_bytes())
    return path


def _words(home: Home) -> list[str]:
    return [w for p in derive(home.identity.key) for w in p]


def _read_until(fd: int, marker: bytes | None, timeout: float) -> bytes:
    """Read the terminal until `marker` shows (or, with None, until the other side closes)."""
    buf = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker is not None and marker in buf:
            return buf
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            return buf
        if not chunk:
            return buf
        buf += chunk
    if marker is None:
        return buf
    raise AssertionError(f"timed out waiting for {marker!r}; got {buf!r}")


def run_pair_in_terminal(home: Home, keyfile: Path | list[str], name: str, typed: str) -> tuple[int, str]:
    """`gage pair KEYFILE --name NAME` on a pseudo-terminal; types `typed` at the prompt.

    `keyfile` may instead be the arguments that name the source (`["--card", FILE]`)."""
    source = keyfile if isinstance(keyfile, list) else [str(keyfile)]
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(home.root), "pair", *source, "--name", name],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
        start_new_session=True,
        env={**os.environ, "TERM": "dumb"},
    )
    os.close(slave)
    try:
        before = _read_until(master, PROMPT, 30)
        os.write(master, typed.encode("utf-8") + b"\n")
        after = _read_until(master, None, 30)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, (before + after).decode("utf-8", errors="replace").replace("\r\n", "\n")


@pytest.fixture
def two(make_home, tmp_path: Path) -> tuple[Home, Home, Path]:
    """alice pairs with bob, from the key file bob exported."""
    alice, bob = make_home("alice"), make_home("bob")
    return alice, bob, _keyfile(bob, tmp_path)


def _confirmed(home: Home) -> dict[str, str]:
    return {c.name: key_text(c.key) for c in Contacts.load(home.contacts_path).confirmed.values()}


def _events(home: Home, event: str) -> list[dict]:
    return [e for e in home.journal.entries() if e.get("event") == event]


# --- right words ------------------------------------------------------------------------


def test_right_words_typed_at_a_terminal_confirm(two) -> None:
    alice, bob, kf = two
    code, screen = run_pair_in_terminal(alice, kf, "bob", " ".join(_words(bob)))
    assert code == 0, screen
    # alice was shown her own words to read aloud, and was never shown bob's.
    for a, b in derive(alice.identity.key):
        assert f"{a}-{b}" in screen  # a pair is written one way (spec/words.md)
    assert "Confirmed." in screen
    doc = tomllib.loads(alice.contacts_path.read_text("utf-8"))
    assert [(c["name"], c["key"], c["method"]) for c in doc["contact"]] == [("bob", key_text(bob.identity.key), "word-pairs")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["contact"][0]["confirmed_at"])
    # The candidate made from the key file is gone: the key is now confirmed.
    assert doc.get("candidate", []) == []
    paired = _events(alice, "paired")
    assert [(e["name"], e["key"], e["method"]) for e in paired] == [("bob", key_text(bob.identity.key), "word-pairs")]
    assert verify_journal(alice.journal).ok


@pytest.mark.parametrize(
    "style",
    ["upper", "commas", "hyphens", "mixed"],
)
def test_separators_and_case_are_accepted(make_home, style: str) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    w = _words(bob)
    typed = {
        "upper": " ".join(x.upper() for x in w),
        "commas": ",".join(w),
        "hyphens": "  ".join(f"{w[2 * i]}-{w[2 * i + 1]}" for i in range(PAIRS)),
        "mixed": f"  {w[0].title()}-{w[1]}, {w[2]}\t{w[3].upper()} ,{w[4]} - {w[5]}   {w[6]},{w[7]}  ",
    }[style]
    outcome = ceremony.confirm(alice, "bob", bob.identity.key, typed)
    assert outcome.confirmed, outcome.message
    assert _confirmed(alice) == {"bob": key_text(bob.identity.key)}


def test_mixed_separators_through_the_terminal(two) -> None:
    alice, bob, kf = two
    w = _words(bob)
    typed = f"{w[0].upper()}-{w[1]}, {w[2]} {w[3]},{w[4]}-{w[5].title()}   {w[6]} , {w[7]}"
    code, screen = run_pair_in_terminal(alice, kf, "bob", typed)
    assert code == 0, screen
    assert _confirmed(alice) == {"bob": key_text(bob.identity.key)}


# --- wrong words confirm nothing ----------------------------------------------------------


def _other_word(word: str, table: tuple[str, ...]) -> str:
    return table[(table.index(word) + 1) % 256]


def _typed_variant(w: list[str], variant: str) -> str:
    w = list(w)
    if variant == "one-wrong-word":
        w[5] = _other_word(w[5], ODD)  # second word of pair 3
    elif variant == "pairs-swapped":
        w[0:2], w[2:4] = w[2:4], w[0:2]  # pair 1 and pair 2 exchanged
    elif variant == "words-swapped-in-pair":
        w[6], w[7] = w[7], w[6]  # pair 4 read backwards
    elif variant == "missing-word":
        del w[3]  # second word of pair 2 dropped
    elif variant == "extra-word":
        w.insert(8, EVEN[0])
    elif variant == "empty":
        w = []
    return " ".join(w)


# Which pairs each variant must name as differing.
EXPECTED_BAD = {
    "one-wrong-word": [3],
    "pairs-swapped": [1, 2],
    "words-swapped-in-pair": [4],
    "missing-word": [2, 3, 4],
    "extra-word": [4],
    "empty": [1, 2, 3, 4],
}


@pytest.mark.parametrize("variant", ["one-wrong-word", "pairs-swapped", "missing-word", "words-swapped-in-pair"])
def test_wrong_words_at_a_terminal_confirm_nothing(two, variant: str) -> None:
    alice, bob, kf = two
    # A first attempt without a terminal registers the key file's key as a candidate;
    # from then on a failed ceremony must leave contacts.toml byte for byte as it is.
    assert run_gage_process("pair", str(kf), "--name", "bob", home=alice.root, input="").code == Exit.REFUSED
    before = alice.contacts_path.read_bytes()
    journal_before = alice.journal.entries()
    # A pair that does not match is asked again (issue 18); only a deliberate `give up` ends it.
    code, screen = run_pair_in_terminal(alice, kf, "bob", _typed_variant(_words(bob), variant) + "\ngive up")
    assert code == Exit.REFUSED, screen
    assert "again" in screen
    assert "NOT confirmed" in screen
    named = sorted(int(n) for n in re.findall(r"pair (\d) did not match", screen))
    assert named == EXPECTED_BAD[variant], screen
    assert alice.contacts_path.read_bytes() == before
    assert _confirmed(alice) == {}
    assert alice.journal.entries() == journal_before  # no `paired`, nothing else either


@pytest.mark.parametrize("variant", sorted(EXPECTED_BAD))
def test_wrong_words_explained_pair_by_pair(make_home, variant: str) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    outcome = ceremony.confirm(alice, "bob", bob.identity.key, _typed_variant(_words(bob), variant))
    assert not outcome.confirmed
    assert [i + 1 for i in outcome.mismatched] == EXPECTED_BAD[variant]
    assert "nothing was confirmed" in outcome.message
    if variant == "words-swapped-in-pair":
        assert "pair 4: words out of order" in outcome.message
    if variant == "one-wrong-word":
        assert "pair 3" in outcome.message and "pair 1" not in outcome.message
    if variant in ("missing-word", "extra-word", "empty"):
        assert "expected 8 words" in outcome.message
    assert not alice.contacts_path.exists() or _confirmed(alice) == {}
    assert _events(alice, "paired") == []


def test_another_keys_words_never_confirm(make_home) -> None:
    """Mallory's key with bob's words (what a person would read if mallory sat in the middle)."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    outcome = ceremony.confirm(alice, "bob", mallory.identity.key, " ".join(_words(bob)))
    assert not outcome.confirmed
    assert _confirmed(alice) == {}


def test_the_compare_uses_a_fresh_derivation_not_the_cache(make_home) -> None:
    """A poisoned word cache cannot make the wrong words match."""
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    cache = WordCache(alice.cache / "words.json")
    cache.words_for(bob.identity.key)
    import json

    from gage.home.cache import sealkey, wordpairs

    doc = json.loads((alice.cache / "words.json").read_bytes())
    (v,) = doc.keys()
    planted = [list(p) for p in derive(mallory.identity.key)]
    # Planted with its seal under the home's own cache key, as whoever can read that key can: the cache then serves it.
    seal = wordpairs._seal(sealkey.home_key(alice.root), bob.identity.key, planted)
    doc[v][bob.identity.key.hex()] = {"pairs": planted, "seal": seal}
    (alice.cache / "words.json").write_text(json.dumps(doc))
    assert WordCache(alice.cache / "words.json").words_for(bob.identity.key) == derive(mallory.identity.key)
    outcome = ceremony.confirm(alice, "bob", bob.identity.key, " ".join(_words(mallory)))
    assert not outcome.confirmed
    assert _confirmed(alice) == {}


# --- no terminal ---------------------------------------------------------------------------


@pytest.mark.parametrize("stdin", ["pipe", "devnull"])
def test_no_terminal_confirms_nothing(two, stdin: str) -> None:
    alice, bob, kf = two
    words = " ".join(_words(bob)) + "\n"
    proc = subprocess.run(
        [sys.executable, "-m", "gage.cli.main", "--home", str(alice.root), "pair", str(kf), "--name", "bob"],
        input=words if stdin == "pipe" else None,
        stdin=subprocess.DEVNULL if stdin == "devnull" else None,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == Exit.REFUSED, proc.stderr
    assert "terminal" in proc.stderr and "Nothing was confirmed" in proc.stderr
    assert PROMPT.decode() not in proc.stdout  # it never even asked
    assert _confirmed(alice) == {}
    assert _events(alice, "paired") == []
    # The key from the file is now a candidate: listed, never trusted.
    contacts = Contacts.load(alice.contacts_path)
    assert contacts.status_of(bob.identity.key) == "candidate"


def test_no_flag_skips_the_compare() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    pair_parser = sub.choices["pair"]
    options = {s for a in pair_parser._actions for s in a.option_strings}
    # --card, --refresh, --directory and --relay only choose where the key comes from; --home, which
    # home; --mutual only interleaves the reading (every pair is still typed and compared).
    assert options == {"-h", "--help", "--name", "--card", "--refresh", "--directory", "--relay", "--home", "--mutual"}


# --- candidates ---------------------------------------------------------------------------


def test_key_file_key_is_a_candidate_claim_before_the_ceremony(two, gage) -> None:
    alice, bob, _ = two
    kf = _keyfile(bob, alice.root.parent, claimed="Alice's bank")
    assert run_gage_process("pair", str(kf), "--name", "bob", home=alice.root, input="").code == Exit.REFUSED
    r = gage(alice, "contacts", "--json")
    assert r.code == 0
    import json

    rows = json.loads(r.out)
    assert rows == [
        {
            "name": None,
            "claimed_name": "Alice's bank",
            "key": key_text(bob.identity.key),
            "fingerprint": short_fingerprint(bob.identity.key),
            "status": "candidate",
            "source": f"key file {kf.name}",
            "seen_at": rows[0]["seen_at"],
            "confirmed_at": None,
            "method": None,
        }
    ]
    # Adding it again, or via a bundle, does not promote it.
    assert not ceremony.add_candidate(alice, bob.identity.key, "bob", "bundle 0123")
    assert Contacts.load(alice.contacts_path).status_of(bob.identity.key) == "candidate"
    # My own key is never a candidate.
    assert not ceremony.add_candidate(alice, alice.identity.key, "me", "key file")


def test_only_the_ceremony_calls_confirm() -> None:
    """Nothing but gage/trust/ceremony.py may turn a key into a confirmed contact."""
    callers = []
    for path in sorted((ROOT / "gage").rglob("*.py")):
        text = path.read_text("utf-8")
        if "._confirm(" in text or re.search(r"\b_confirm\s*\(", text.replace("def _confirm(", "")):
            callers.append(path.relative_to(ROOT).as_posix())
    assert callers == ["gage/trust/ceremony.py"]


def test_confirm_refuses_a_second_key_under_the_same_name(make_home) -> None:
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    pair(alice, "bob", bob)
    with pytest.raises(RefusedError):
        ceremony.confirm(alice, "bob", mallory.identity.key, " ".join(_words(mallory)))
    assert _confirmed(alice) == {"bob": key_text(bob.identity.key)}


# --- contacts ------------------------------------------------------------------------------


def test_contacts_json_shape(make_home, gage) -> None:
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    pair(alice, "bob", bob)
    ceremony.add_candidate(alice, carol.identity.key, "carol?", "key file carol.gagekey")
    import json

    r = gage(alice, "contacts", "--json")
    assert r.code == 0
    rows = json.loads(r.out)
    assert [(x["name"], x["key"], x["status"], x["method"]) for x in rows] == [
        ("bob", key_text(bob.identity.key), "confirmed", "word-pairs"),
        (None, key_text(carol.identity.key), "candidate", None),
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rows[0]["confirmed_at"])
    assert rows[1]["confirmed_at"] is None
    for row in rows:
        assert {"name", "key", "status", "confirmed_at", "method"} <= set(row)
    text = gage(alice, "contacts")
    assert "confirmed  bob" in text.out and "candidate" in text.out and "(unconfirmed)" in text.out


def test_contacts_remove_unpairs_and_journals(make_home, gage) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    r = gage(alice, "contacts", "remove", "bob")
    assert r.code == 0, r.err
    assert _confirmed(alice) == {}
    assert [(e["name"], e["key"]) for e in _events(alice, "unpaired")] == [("bob", key_text(bob.identity.key))]
    assert Contacts.load(alice.contacts_path).status_of(bob.identity.key) == "unknown"
    r = gage(alice, "contacts", "remove", "bob")
    assert r.code == Exit.UNKNOWN_KEY
    assert verify_journal(alice.journal).ok


def test_contacts_forget_drops_a_candidate_by_fingerprint_and_never_a_contact(make_home, gage, tmp_path) -> None:
    """A candidate is only a claim; forgetting it is allowed. A confirmed contact is unpaired, not forgotten."""
    from gage.format.keys import short_fingerprint
    from gage.home.contacts import Contacts

    me, stranger, friend = make_home("me"), make_home("stranger"), make_home("friend")
    ceremony.add_candidate(me, stranger.identity.key, "stranger", "key file")
    pair(me, "friend", friend)
    assert gage(me, "contacts", "forget", short_fingerprint(friend.identity.key)).code == int(Exit.REFUSED)
    assert gage(me, "contacts", "forget", "zz").code == int(Exit.USAGE)
    r = gage(me, "contacts", "forget", short_fingerprint(stranger.identity.key))
    assert r.code == 0, r.err
    c = Contacts.load(me.contacts_path)
    assert stranger.identity.key not in c.candidates
    assert c.by_name("friend") is not None
    assert gage(me, "contacts", "forget", stranger.identity.key_text).code == int(Exit.UNKNOWN_KEY)


def test_pairing_from_a_forged_bundle_is_refused(make_home, tmp_path: Path) -> None:
    """A manifest can name any key; `pair ID` takes a key only from a bundle whose signature verifies."""
    import shutil

    from gage.inbox import send

    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    src = tmp_path / "f.txt"
    src.write_text("x")
    _m, dest = send.create(mallory, [src], kind="share")
    forged = tmp_path / "forged" / dest.name
    shutil.copytree(dest, forged)
    raw = (forged / "manifest.json").read_bytes().replace(mallory.identity.key.hex().encode(), alice.identity.key.hex().encode())
    (forged / "manifest.json").write_bytes(raw)
    from gage.inbox import store as store_mod

    res = store_mod.import_bundle(bob, forged)
    r = run_gage_process("pair", res.id[:12], "--name", "alice", home=bob.root, input="")
    assert r.code == Exit.REFUSED and "signature does not verify" in r.err
    assert Contacts.load(bob.contacts_path).status_of(alice.identity.key) == "unknown"
