"""The check cache proves a tree unchanged from the check's own walk (gage.home.cache.checks `_proved`):
each entry's stat as the check took it, before reading its bytes or listing its folder, against
one lstat each after the check. A change made while the check runs, or between the check and the
cache write, is never remembered as checked, even when the racy window would let it through."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import arrive, pair

from gage import bundle as bundle_mod
from gage.bundle import safeopen
from gage.home import listing
from gage.home.cache import checks as checkcache
from gage.home.cache import rowindex
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.home.listing import Stored
from gage.inbox import rows as rows_mod
from gage.inbox import send
from gage.inbox.listed import listed_rows


@pytest.fixture
def homes(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Home, str]:
    alice, me = make_home("alice"), make_home("me")
    pair(me, "alice", alice)
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "a.txt").write_bytes(b"A" * 64)
    (src / "b.txt").write_bytes(b"B" * 64)
    (src / "d" / "c.txt").write_bytes(b"C" * 64)
    m, dest = send.create(alice, [src / "a.txt", src / "b.txt", src / "d"], kind="share", subject="s")
    arrive(me, dest)
    # The racy window never refuses here (every timestamp is far in the past of this clock): what
    # refuses a changed tree below is the comparison of the check's look with the one after it.
    monkeypatch.setattr(checkcache, "now_ns", lambda: time.time_ns() + 3600 * 10**9)
    return me, m.id


def bundle_dir(home: Home, bid: str) -> Path:
    return home.state_dir("pending") / bid


def edit_in_place(path: Path) -> None:
    """One byte changed, size and mtime put back: only ctime says so."""
    st = path.stat()
    path.chmod(0o644)  # landed read-only
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    with open(path, "r+b") as f:
        f.write(bytes(data))
    path.chmod(st.st_mode & 0o7777)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def checked(home: Home, bid: str) -> tuple[CheckCache, bundle_mod.Check]:
    cache = CheckCache.of(home)
    return cache, cache.check(listing.find(home, bid))  # type: ignore[arg-type]


def test_an_unchanged_tree_is_remembered_and_used(homes: tuple[Home, str]) -> None:
    me, bid = homes
    cache, first = checked(me, bid)
    assert first.ok and len(cache) == 1
    assert cache.remembered_digest(bundle_dir(me, bid)) is not None
    second = cache.check(listing.find(me, bid))  # type: ignore[arg-type]
    assert second.ok and cache.hits == 1


def test_a_file_changed_while_it_is_being_checked_is_not_remembered(homes: tuple[Home, str], monkeypatch: pytest.MonkeyPatch) -> None:
    me, bid = homes
    a = bundle_dir(me, bid) / "payload" / "a.txt"
    real_open_at = safeopen.open_at
    edited: list[str] = []

    def open_at(dir_fd: int, name: str) -> tuple[int, os.stat_result]:
        out = real_open_at(dir_fd, name)
        if name == "b.txt" and not edited:  # a.txt was opened, stat'ed and hashed just before
            edit_in_place(a)
            edited.append(name)
        return out

    monkeypatch.setattr(safeopen, "open_at", open_at)
    cache, result = checked(me, bid)
    assert edited and result.ok  # the bytes hashed were the good ones
    assert len(cache) == 0 and cache.remembered_digest(bundle_dir(me, bid)) is None
    monkeypatch.setattr(safeopen, "open_at", real_open_at)
    again = cache.check(listing.find(me, bid))  # type: ignore[arg-type]
    assert not again.ok and cache.hits == 0


@pytest.mark.parametrize("change", ["byte edited in place", "file added", "manifest swapped", "folder added"])
def test_a_change_between_the_walk_and_the_cache_write_is_not_remembered(
    homes: tuple[Home, str], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    me, bid = homes
    root = bundle_dir(me, bid)
    real_check = bundle_mod.check

    def check_then_change(path: Path, **kw: object) -> bundle_mod.Check:
        result = real_check(path, **kw)  # type: ignore[arg-type]
        if change == "byte edited in place":
            edit_in_place(root / "payload" / "d" / "c.txt")
        elif change == "file added":
            (root / "payload" / "d" / "new.txt").write_bytes(b"x")
        elif change == "manifest swapped":
            raw = (root / "manifest.json").read_bytes()
            tmp = root / "manifest.tmp"
            tmp.write_bytes(raw)
            os.replace(tmp, root / "manifest.json")  # the same bytes under a new inode
        else:
            (root / "payload" / "d" / "e").mkdir()
        return result

    monkeypatch.setattr(bundle_mod, "check", check_then_change)
    cache, result = checked(me, bid)
    assert result.ok
    assert len(cache) == 0 and cache.remembered_digest(root) is None


def test_an_empty_folder_the_manifest_does_not_list_is_never_remembered(homes: tuple[Home, str]) -> None:
    """The check passes a folder off the manifest's plan that holds nothing; a file put in it
    later changes only that folder, which the listed entries do not include: so the tree is
    checked every time, and the file is seen."""
    me, bid = homes
    extra = bundle_dir(me, bid) / "payload" / "extra"
    extra.mkdir()
    os.utime(bundle_dir(me, bid) / "payload", ns=(0, 0))  # old, so the racy window is not what refuses
    cache, result = checked(me, bid)
    assert result.ok and len(cache) == 0
    (extra / "x.txt").write_bytes(b"x")
    again = cache.check(listing.find(me, bid))  # type: ignore[arg-type]
    assert not again.ok and cache.hits == 0


def test_a_row_stored_from_the_proof_still_sees_a_change_made_before_it_was_stored(
    homes: tuple[Home, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing stores each row it computed with the stat values the check cache's proof took
    (not looked at again): a byte edited after the proof, before the row is written, is seen by
    the next listing, which computes the row again and shows what a fresh check shows."""
    me, bid = homes
    real_save = rowindex.RowIndex.save
    c = bundle_dir(me, bid) / "payload" / "d" / "c.txt"

    def edit_then_save(self: rowindex.RowIndex, *a: object, **k: object) -> None:
        edit_in_place(c)
        real_save(self, *a, **k)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(rowindex.RowIndex, "save", edit_then_save)
        first = listed_rows(me)
    assert [r.level for r in first] == ["verified"]
    computed: list[str] = []
    real_rows = rows_mod.InboxReader.rows

    def spy(self: rows_mod.InboxReader, stored: list[Stored]) -> list[rows_mod.InboxRow]:
        stored = list(stored)
        computed.extend(s.id for s in stored)
        return real_rows(self, stored)

    monkeypatch.setattr(rows_mod.InboxReader, "rows", spy)
    second = listed_rows(me)
    assert computed == [bid] and [r.level for r in second] == ["invalid"]
