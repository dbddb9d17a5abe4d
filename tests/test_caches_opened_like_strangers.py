"""Issue 19 items 13 and 15: every cache in the home is a derived file, opened like a stranger's.

A FIFO, a link (to /dev/zero, out of the home, to another program's SQLite file) or a folder
left where a cache goes is said once, ignored and rebuilt in place; nothing waits on it,
nothing reads it unbounded, nothing is written where a link points. And a reconcile marker
never hides staging work that can be seen with a listing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import run_gage_process
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)
from test_reconcile_marker import LATER, _marker, _settled, scans_fixture  # noqa: F401

from gage.carriers.a2a import card as card_mod
from gage.home import homefile, listing
from gage.home.cache import reconcilemark
from gage.home.cache.checks import CheckCache
from gage.home.journal.log import Journal
from gage.home.layout import Home
from gage.inbox import reconcile, send
from gage.inbox.opening import open_home

# Each case runs the real command in a subprocess with a deadline: a hang is a failure.
DEADLINE = 60


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)


def _home_with_a_bundle(make_home: Callable[[str], Home], tmp_path: Path) -> Home:
    home = make_home("alice")
    src = tmp_path / "note.txt"
    src.write_text("hello\n")
    send.create(home, [src], kind="share")
    return home


@pytest.mark.parametrize(
    ("cache", "command"),
    [
        ("reconciled.json", ("list",)),  # opening a home reads it
        ("checks.json", ("list",)),
        ("words.json", ("id",)),
    ],
)
def test_a_fifo_in_place_of_a_cache_hangs_nothing(make_home, tmp_path: Path, cache: str, command: tuple[str, ...]) -> None:
    home = _home_with_a_bundle(make_home, tmp_path)
    run_gage_process(*command, home=home.root, timeout=DEADLINE)  # the caches exist now
    _fifo(home.cache / cache)
    if cache == "checks.json":  # a listing whose rows are all kept never asks the check cache
        for name in ("rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
            (home.cache / name).unlink(missing_ok=True)
    r = run_gage_process(*command, home=home.root, timeout=DEADLINE)
    assert r.code == 0, r.err
    assert r.err.count("ignoring") == 1 and cache in r.err and "not a regular file" in r.err
    again = run_gage_process(*command, home=home.root, timeout=DEADLINE)
    assert again.code == 0 and "ignoring" not in again.err  # rebuilt in place: a regular file now
    assert (home.cache / cache).is_file() or not (home.cache / cache).exists()


def test_checks_json_linked_to_dev_zero_is_not_read(make_home, tmp_path: Path) -> None:
    home = _home_with_a_bundle(make_home, tmp_path)
    target = home.cache / "checks.json"
    if target.exists():
        target.unlink()
    os.symlink("/dev/zero", target)
    r = run_gage_process("list", home=home.root, timeout=DEADLINE)
    assert r.code == 0 and "MemoryError" not in r.err and "symbolic link" in r.err
    assert target.is_file() and not target.is_symlink()  # the name replaced, /dev/zero untouched


def test_a_huge_checks_json_is_ignored(make_home, tmp_path: Path, caplog) -> None:
    home = _home_with_a_bundle(make_home, tmp_path)
    with open(home.cache / "checks.json", "wb") as f:
        f.truncate(300 << 20)  # sparse: over the cap, costs no disk
    cache = CheckCache.of(home)
    assert len(cache) == 0 and "over the" in caplog.text


def test_a_cached_card_that_is_a_fifo_hangs_nothing(make_home, monkeypatch) -> None:
    bob = make_home("bob")
    alice = make_home("alice")
    url = "http://127.0.0.1:9/.well-known/agent-card.json"
    cached = bob.root / (card_mod._cache_rel(url) + ".json")
    _fifo(cached)
    body = json.dumps(card_mod.agent_card(alice, "http://127.0.0.1:9/")).encode()
    monkeypatch.setattr(card_mod, "fetch", lambda u, etag=None, timeout=None: (body, None))
    started = time.monotonic()
    claim = card_mod.load(bob, url)
    assert claim.key == alice.identity.key and time.monotonic() - started < 10
    assert cached.is_file()  # rebuilt in place


def test_the_card_cache_is_never_written_through_a_linked_folder(make_home, tmp_path: Path, monkeypatch) -> None:
    bob, alice = make_home("bob"), make_home("alice")
    away = tmp_path / "elsewhere"
    away.mkdir()
    (bob.cache / "cards").mkdir(parents=True, exist_ok=True)
    os.rmdir(bob.cache / "cards")
    os.symlink(away, bob.cache / "cards")
    body = json.dumps(card_mod.agent_card(alice, "http://127.0.0.1:9/")).encode()
    monkeypatch.setattr(card_mod, "fetch", lambda u, etag=None, timeout=None: (body, None))
    card_mod.load(bob, "http://127.0.0.1:9/")
    assert list(away.iterdir()) == []


def _index_path(home: Home) -> Path:
    return home.cache / "journal-index.sqlite"


def _fresh_index(home: Home) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{_index_path(home)}{suffix}")
        if p.exists() or p.is_symlink():
            p.unlink()


def test_a_linked_journal_index_makes_no_database_outside_the_home(make_home, tmp_path: Path) -> None:
    home = _home_with_a_bundle(make_home, tmp_path)
    _fresh_index(home)
    outside = tmp_path / "outside.sqlite"
    os.symlink(outside, _index_path(home))
    r = run_gage_process("list", home=home.root, timeout=DEADLINE)
    assert r.code == 0, r.err
    assert not outside.exists() and not Path(f"{outside}-wal").exists()
    assert _index_path(home).is_file() and not _index_path(home).is_symlink()


def test_a_journal_index_linked_to_another_programs_database_leaves_it_alone(make_home, tmp_path: Path) -> None:
    home = _home_with_a_bundle(make_home, tmp_path)
    _fresh_index(home)
    theirs = tmp_path / "theirs.sqlite"
    with sqlite3.connect(theirs) as db:
        db.execute("CREATE TABLE bundle (x)")  # a name gage's index uses too
        db.execute("CREATE TABLE state (y)")
        db.execute("INSERT INTO bundle VALUES (42)")
    before = theirs.read_bytes()
    os.symlink(theirs, _index_path(home))
    j = Journal(home.root / "journal.jsonl", home.lock, index_path=_index_path(home))
    j.index.sync()
    assert theirs.read_bytes() == before
    with sqlite3.connect(theirs) as db:
        assert db.execute("SELECT x FROM bundle").fetchall() == [(42,)]


def test_a_folder_in_place_of_the_index_falls_back_to_memory(make_home, tmp_path: Path) -> None:
    home = _home_with_a_bundle(make_home, tmp_path)
    _fresh_index(home)
    _index_path(home).mkdir()
    r = run_gage_process("list", home=home.root, timeout=DEADLINE)
    assert r.code == 0 and "is a folder" in r.err


def test_read_derived_refuses_a_link_among_the_folders(tmp_path: Path) -> None:
    root = tmp_path / "home"
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.json").write_text("{}")
    root.mkdir()
    os.symlink(tmp_path / "real", root / "cache")
    assert homefile.read_derived(root, "cache/x.json", 100) is None
    assert not homefile.write_derived(root, "cache/y.json", b"{}")
    assert not (tmp_path / "real" / "y.json").exists()


# --- 15. a marker never hides staging work --------------------------------------------------


def test_a_crafted_marker_cannot_hide_a_half_finished_accept(world: World, scans: list[Path]) -> None:
    bid = _settled(world, scans)
    me = world.me
    staged = me.staging / reconcile.STAGING_DIR / bid
    staged.parent.mkdir(parents=True, exist_ok=True)
    os.rename(me.state_dir("pending") / bid, staged)  # an accept killed mid-way
    # A marker for exactly this state, as a crafted (or buggy) write would leave it.
    (me.cache / reconcilemark.FILE_NAME).write_text(json.dumps(reconcilemark.snapshot(me), sort_keys=True))
    scans.clear()
    opened = open_home(me.root)
    assert scans == [opened.root]  # reconcile scanned anyway
    assert listing.find(opened, bid) is not None and not staged.exists()
    assert any("interrupted" in note for note in opened.reconciled)
