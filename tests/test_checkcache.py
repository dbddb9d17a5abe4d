"""The check cache (gage.home.cache.checks): a changed byte is never served a stale good check, and
the cache is only ever an optimisation (issue 13)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gagetest import Run, arrive, pair

from gage import bundle as bundle_mod
from gage.bundle.treestat import tree_entries
from gage.format.manifest import Manifest
from gage.home import authority as authority_mod
from gage.home import listing
from gage.home.cache import checks
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.inbox import send


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks of trees older than 50 ms are remembered (the tests sleep past it), so no test
    waits two seconds; a write after the check still lands in a later clock tick."""
    monkeypatch.setattr(checks, "RACY_NS", 50_000_000)


def settle() -> None:
    time.sleep(0.12)


def bundle_from(sender: Home, receiver: Home, tmp: Path, name: str = "b") -> str:
    """`sender` bundles two files of the same size; `receiver` imports it. Returns the id."""
    src = tmp / f"src-{name}"
    src.mkdir()
    (src / "a.txt").write_bytes(b"A" * 64)
    (src / "b.txt").write_bytes(b"B" * 64)
    m, dest = send.create(sender, [src / "a.txt", src / "b.txt"], kind="share", subject=name)
    arrive(receiver, dest)
    return m.id


@pytest.fixture
def homes(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, Home, str]:
    alice, me = make_home("alice"), make_home("me")
    pair(me, "alice", alice)
    bid = bundle_from(alice, me, tmp_path)
    settle()
    return alice, me, bid


def no_row_index(home: Home) -> None:
    """`gage list` takes unchanged rows from the row index (gage/home/cache/rowindex.py) without asking
    the check cache: these tests are about the check cache, so each listing starts without it."""
    for name in ("rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
        (home.cache / name).unlink(missing_ok=True)


def verdicts(gage: Callable[..., Run], home: Home) -> dict[str, str]:
    no_row_index(home)
    res = gage(home, "list", "--json")
    assert res.code == 0, res.err
    return {r["id"]: r["verdict"] for r in json.loads(res.out)}


def payload(home: Home, bid: str, name: str = "a.txt") -> Path:
    return home.state_dir("pending") / bid / "payload" / name


def one_check(home: Home, bid: str) -> tuple[CheckCache, bundle_mod.Check]:
    cache = CheckCache.of(home)
    return cache, cache.check(listing.find(home, bid))  # type: ignore[arg-type]


def test_a_second_list_takes_checks_from_the_cache_and_hashes_nothing(
    homes: tuple[Home, Home, str], gage: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, me, bid = homes
    assert verdicts(gage, me) == {bid: "verified"}
    assert (me.cache / checks.FILE_NAME).is_file()

    def no_check(*a: object, **k: object) -> bundle_mod.Check:
        raise AssertionError("checked again although nothing changed")

    monkeypatch.setattr(bundle_mod, "check", no_check)
    monkeypatch.setattr(bundle_mod, "hash_file", no_check)
    assert verdicts(gage, me) == {bid: "verified"}


def test_a_tree_written_within_the_racy_window_is_not_remembered(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the file system's clock cannot be read (tests/test_fsclock.py covers where it can)."""
    monkeypatch.setattr(checks, "RACY_NS", 2_000_000_000)
    monkeypatch.setattr(checks.fsclock, "reading", lambda _folder: None)
    alice, me = make_home("alice"), make_home("me")
    bid = bundle_from(alice, me, tmp_path)
    cache, result = one_check(me, bid)
    assert result.ok and len(cache) == 0


def test_one_byte_changed_with_size_and_mtime_restored_is_seen(homes: tuple[Home, Home, str], gage: Callable[..., Run]) -> None:
    _, me, bid = homes
    assert verdicts(gage, me) == {bid: "verified"}
    f = payload(me, bid)
    before = os.stat(f)
    f.write_bytes(b"A" * 63 + b"Z")
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(f)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert verdicts(gage, me) == {bid: "invalid"}


def test_a_file_renamed_over_a_listed_one_is_seen(homes: tuple[Home, Home, str], gage: Callable[..., Run], tmp_path: Path) -> None:
    _, me, bid = homes
    assert verdicts(gage, me) == {bid: "verified"}
    f = payload(me, bid)
    before = os.stat(f)
    other = f.parent.parent / "swap.tmp"  # same filesystem, outside the payload folder
    other.write_bytes(b"C" * 64)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.rename(other, f)
    os.utime(f.parent, ns=(os.stat(f.parent).st_atime_ns, os.stat(f.parent).st_mtime_ns))
    assert os.stat(f).st_size == before.st_size and os.stat(f).st_mtime_ns == before.st_mtime_ns
    assert verdicts(gage, me) == {bid: "invalid"}


def test_a_file_touched_then_restored_is_checked_again(homes: tuple[Home, Home, str]) -> None:
    _, me, bid = homes
    cache, first = one_check(me, bid)
    assert first.ok and len(cache) == 1
    cache.save()
    f = payload(me, bid)
    before = os.stat(f)
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = CheckCache.of(me)
    assert again.check(listing.find(me, bid)).ok  # type: ignore[arg-type]
    assert (again.hits, again.misses) == (0, 1)  # the ctime moved: not served from the cache


def test_bytes_changed_then_restored_are_checked_again_and_still_good(homes: tuple[Home, Home, str]) -> None:
    _, me, bid = homes
    cache, _ = one_check(me, bid)
    cache.save()
    f = payload(me, bid)
    before = os.stat(f)
    f.write_bytes(b"X" * 64)
    f.write_bytes(b"A" * 64)
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = CheckCache.of(me)
    assert again.check(listing.find(me, bid)).ok  # type: ignore[arg-type]
    assert again.misses == 1


def test_an_added_file_is_seen(homes: tuple[Home, Home, str], gage: Callable[..., Run]) -> None:
    _, me, bid = homes
    assert verdicts(gage, me) == {bid: "verified"}
    (me.state_dir("pending") / bid / "payload" / "extra.txt").write_bytes(b"x")
    assert verdicts(gage, me) == {bid: "invalid"}


def test_deleting_the_cache_changes_nothing_but_speed(homes: tuple[Home, Home, str], gage: Callable[..., Run], tmp_path: Path) -> None:
    alice, me, bid = homes
    bundle_from(alice, me, tmp_path, "second")
    stranger = Home.init(tmp_path / "stranger", "stranger")
    bundle_from(stranger, me, tmp_path, "third")
    tampered = bundle_from(alice, me, tmp_path, "fourth")
    payload(me, tampered).write_bytes(b"A" * 63 + b"!")
    settle()
    first = gage(me, "list", "--json").out
    assert gage(me, "list", "--json").out == first
    (me.cache / checks.FILE_NAME).unlink()
    assert gage(me, "list", "--json").out == first
    assert gage(me, "list").out == gage(me, "list").out
    assert sorted(verdicts(gage, me).values()) == ["invalid", "unverified", "verified", "verified"]


@pytest.mark.parametrize("junk", [b"", b"{not json", b"[]", b'{"format": 1}', b"\xff\xfe", b"[" * 100_000])
def test_a_damaged_cache_file_is_ignored_and_rebuilt(homes: tuple[Home, Home, str], gage: Callable[..., Run], junk: bytes) -> None:
    _, me, bid = homes
    expected = gage(me, "list", "--json").out
    (me.cache / checks.FILE_NAME).write_bytes(junk)
    no_row_index(me)
    assert gage(me, "list", "--json").out == expected
    doc = json.loads((me.cache / checks.FILE_NAME).read_bytes())
    assert doc["format"] == checks.FORMAT and len(doc["entries"]) == 1


def test_entries_of_the_wrong_shape_are_misses(homes: tuple[Home, Home, str], gage: Callable[..., Run]) -> None:
    _, me, bid = homes
    verdicts(gage, me)
    path = me.cache / checks.FILE_NAME
    doc = json.loads(path.read_bytes())
    for bad in (None, 3, [], ["x"], [1, 2, 3, 4, 5], [*next(iter(doc["entries"].values()))[:4], [["s"]]]):
        doc["entries"] = {k: bad for k in doc["entries"]}
        path.write_text(json.dumps(doc))
        assert verdicts(gage, me) == {bid: "verified"}


def test_a_cache_that_cannot_be_written_costs_only_time(homes: tuple[Home, Home, str], gage: Callable[..., Run]) -> None:
    _, me, bid = homes
    (me.cache / checks.FILE_NAME).mkdir()  # neither readable nor replaceable as a file
    res = gage(me, "list", "--json")
    assert res.code == 0, res.err
    assert {r["id"]: r["verdict"] for r in json.loads(res.out)} == {bid: "verified"}


def _tamper_keeping_stat(home: Home, bid: str) -> None:
    f = payload(home, bid)
    before = os.stat(f)
    f.write_bytes(b"A" * 63 + b"?")
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_cache_from_another_home_is_not_used(
    homes: tuple[Home, Home, str], make_home: Callable[[str], Home], gage: Callable[..., Run], tmp_path: Path
) -> None:
    """Home B holds a tampered copy of a bundle home A checked; A's cache, copied into B and
    even rewritten to B's paths, does not make B's copy good."""
    alice, a, bid = homes
    b = make_home("b")
    pair(b, "alice", alice)
    import shutil

    shutil.copytree(a.state_dir("pending") / bid, b.state_dir("pending") / bid)
    _tamper_keeping_stat(b, bid)
    settle()
    assert verdicts(gage, a) == {bid: "verified"}
    a_file = (a.cache / checks.FILE_NAME).read_bytes()
    (b.cache / checks.FILE_NAME).write_bytes(a_file)
    assert verdicts(gage, b) == {bid: "invalid"}
    doc = json.loads(a_file)
    doc["home"] = os.path.abspath(b.root)
    doc["entries"] = {k.replace(os.path.abspath(a.root), os.path.abspath(b.root)): v for k, v in doc["entries"].items()}
    (b.cache / checks.FILE_NAME).write_text(json.dumps(doc))
    assert verdicts(gage, b) == {bid: "invalid"}


def test_an_entry_of_another_bundle_is_not_used(homes: tuple[Home, Home, str], gage: Callable[..., Run], tmp_path: Path) -> None:
    alice, me, good = homes
    bad = bundle_from(alice, me, tmp_path, "other")
    settle()
    assert verdicts(gage, me) == {good: "verified", bad: "verified"}
    _tamper_keeping_stat(me, bad)
    path = me.cache / checks.FILE_NAME
    doc = json.loads(path.read_bytes())
    entries = doc["entries"]
    good_key = next(k for k in entries if k.endswith(good))
    bad_key = next(k for k in entries if k.endswith(bad))
    entries[bad_key] = entries[good_key]
    path.write_text(json.dumps(doc))
    assert verdicts(gage, me)[bad] == "invalid"


def test_the_trust_half_is_computed_fresh_over_a_cached_check(
    homes: tuple[Home, Home, str], make_home: Callable[[str], Home], gage: Callable[..., Run], tmp_path: Path
) -> None:
    _, me, bid = homes
    bob = make_home("bob")
    from_bob = bundle_from(bob, me, tmp_path, "bob")
    settle()
    assert verdicts(gage, me) == {bid: "verified", from_bob: "unverified"}
    pair(me, "bob", bob)  # the bundle did not change; the contacts did
    assert verdicts(gage, me) == {bid: "verified", from_bob: "verified"}


def test_list_parses_each_manifest_once_and_reads_authority_once(
    homes: tuple[Home, Home, str], gage: Callable[..., Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, me, _ = homes
    for i in range(3):
        bundle_from(alice, me, tmp_path, f"more{i}")
    settle()
    parses: list[int] = []
    loads: list[int] = []
    real_parse, real_load = Manifest.parse.__func__, authority_mod.load  # type: ignore[attr-defined]
    monkeypatch.setattr(Manifest, "parse", classmethod(lambda cls, raw: (parses.append(1), real_parse(cls, raw))[1]))
    monkeypatch.setattr(authority_mod, "load", lambda *a, **k: (loads.append(1), real_load(*a, **k))[1])
    for _ in range(2):  # a cold cache, then a warm one
        parses.clear()
        loads.clear()
        assert set(verdicts(gage, me).values()) == {"verified"}
        assert (len(parses), len(loads)) == (4, 1)


def test_resolve_builds_no_object_for_bundles_it_does_not_match(homes: tuple[Home, Home, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, me, bid = homes
    made: list[str] = []
    real = listing.Stored

    def counting(**k: object) -> listing.Stored:
        made.append(str(k["id"]))
        return real(**k)  # type: ignore[arg-type]

    for i in range(20):
        other = f"{i:02x}{bid[2:]}"
        if other != bid:
            (me.state_dir("pending") / other).mkdir()
    monkeypatch.setattr(listing, "Stored", counting)
    assert listing.resolve(me, bid[:10]).id == bid
    assert listing.resolve(me, bid).id == bid
    assert made == [bid, bid]


def test_tree_entries_stops_at_its_limit_without_listing_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(200):
        (tmp_path / f"f{i}").write_bytes(b"")
    seen = [0]
    real = os.scandir

    class Counting:
        def __init__(self, path: object) -> None:
            self.it = real(path)  # type: ignore[call-overload]

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def __iter__(self) -> Iterator[os.DirEntry[str]]:
            for e in self.it:
                seen[0] += 1
                yield e

    monkeypatch.setattr(os, "scandir", Counting)
    entries, complete = tree_entries(tmp_path, limit=10)
    assert len(entries) == 10 and not complete
    assert seen[0] <= 11
    assert tree_entries(tmp_path, limit=1000)[1]
