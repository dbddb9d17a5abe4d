"""`gage list` at scale (issue 13): one index query for the listing and its parents, each key's
trust computed once per listing and the same as computed alone, and a check cache hit found
from the bundle folder itself (never through a symlink put in its place)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import arrive, pair

from gage.home import listing
from gage.home.cache import checks
from gage.home.cache.checks import CheckCache
from gage.home.cache.journalindex import JournalIndex
from gage.home.contacts import Contacts
from gage.home.layout import ALL_STATES, Home
from gage.inbox import send
from gage.inbox.rows import inbox_rows
from gage.trust import verdict as verdict_mod


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "RACY_NS", 50_000_000)


def _files(tmp: Path, name: str) -> list[Path]:
    src = tmp / f"src-{name}"
    src.mkdir()
    (src / "a.txt").write_bytes(name.encode() * 8)
    return [src / "a.txt"]


def test_a_listing_asks_the_index_once_for_its_bundles_and_their_parents(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, me = make_home("alice"), make_home("me")
    pair(me, "alice", alice)
    asked, _ = send.create(me, _files(tmp_path, "q"), kind="question", subject="q")
    arrive(alice, me.state_dir("outbox") / asked.id)
    replies = []
    for i in range(3):
        m, dest = send.create(alice, _files(tmp_path, f"r{i}"), kind="answer", parent=asked.id, subject=f"r{i}")
        arrive(me, dest)
        replies.append(m.id)
    queries: list[list[str]] = []
    real = JournalIndex.bundles

    def counting(self: JournalIndex, ids: object, *, sync: bool = True) -> object:
        wanted = sorted(set(ids))  # type: ignore[call-overload]
        queries.append(wanted)
        return real(self, wanted, sync=sync)

    monkeypatch.setattr(JournalIndex, "bundles", counting)
    rows = inbox_rows(me, ("pending",))  # the parent is in the outbox: not one of the rows
    assert queries == [sorted({*replies, asked.id})]
    assert {r.id for r in rows} == set(replies)
    for bid in replies:
        v = verdict_mod.compute(me, listing.find(me, bid))  # type: ignore[arg-type]
        assert v.seen is not None and v.seen.parent_status == "sent-by-me"


def test_each_keys_trust_once_per_listing_is_the_verdict_computed_alone(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob, me = make_home("alice"), make_home("bob"), make_home("me")
    pair(me, "alice", alice)
    for who, n in ((alice, 3), (bob, 2)):
        for i in range(n):
            _, dest = send.create(who, _files(tmp_path, f"{who.identity.name}{i}"), kind="share", subject=str(i))
            arrive(me, dest)
    send.create(me, _files(tmp_path, "mine"), kind="share", subject="mine")
    _, dest = send.create(alice, _files(tmp_path, "q"), kind="question", subject="q")
    arrive(me, dest)
    me.authority_path.write_text('[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Read it."\n')
    alone = {
        s.id: verdict_mod.compute(me, s).to_json() for s in listing.list_bundles(me, ALL_STATES)
    }
    calls: list[bytes] = []
    real = verdict_mod.key_trust

    def counting(h: Home, c: Contacts, k: bytes) -> verdict_mod.KeyTrust:
        calls.append(k)
        return real(h, c, k)

    monkeypatch.setattr(verdict_mod, "key_trust", counting)
    contacts = Contacts.load(me.contacts_path)
    keys: dict[bytes, verdict_mod.KeyTrust] = {}
    authority = verdict_mod.load_authority(me, contacts)
    together = {
        s.id: verdict_mod.compute(me, s, contacts=contacts, authority=authority, keys=keys).to_json()
        for s in listing.list_bundles(me, ALL_STATES)
    }
    assert together == alone
    assert sorted(calls) == sorted({alice.identity.key, bob.identity.key, me.identity.key})
    assert sorted(len(j["authority"]) for j in together.values() if j["kind"] == "share" and j["verdict"] == "verified") == [1, 1, 1]
    assert [j["authority"] for j in together.values() if j["kind"] == "question"] == [[]]
    statuses = {j["sender"]["status"] for j in together.values()}
    assert {"confirmed", "candidate"} <= statuses


def test_a_bundle_folder_swapped_for_a_symlink_to_it_is_not_a_cache_hit(
    make_home: Callable[[str], Home], tmp_path: Path
) -> None:
    alice, me = make_home("alice"), make_home("me")
    pair(me, "alice", alice)
    m, dest = send.create(alice, _files(tmp_path, "x"), kind="share", subject="x")
    arrive(me, dest)
    time.sleep(0.12)
    stored = listing.find(me, m.id)
    assert stored is not None
    cache = CheckCache.of(me)
    assert cache.check(stored).ok and cache.misses == 1
    assert cache.check(stored).ok and cache.hits == 1
    moved = tmp_path / "elsewhere"
    os.rename(stored.path, moved)
    os.symlink(moved, stored.path)
    again = cache.check(stored)
    assert cache.hits == 1  # not served from the cache: the folder is now a link
    assert not again.ok
