"""The racy rule read from the file system's own clock (gage.bundle.fsclock): a tree written a
moment ago is remembered once that clock has moved past its newest timestamp, never in the same
tick, never from another device's clock; and a write right after a remembered check is still seen."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_checkcache import bundle_from, payload

from gage.bundle import fsclock
from gage.home import listing
from gage.home.cache import checks
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home


@pytest.fixture(autouse=True)
def two_second_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's clock rule as shipped, so only the file system's clock can remember a young tree."""
    monkeypatch.setattr(checks, "RACY_NS", 2_000_000_000)
    monkeypatch.setattr(checks, "now_ns", time.time_ns)


def newest_stamp(root: Path) -> tuple[int, int]:
    """(device, the newest mtime or ctime) of the tree at `root`."""
    dev, newest = 0, 0
    for folder, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            st = os.lstat(os.path.join(folder, name))
            dev, newest = st.st_dev, max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return dev, newest


def wait_for_tick(home: Home, root: Path) -> None:
    """Until the file system's clock reads past every timestamp under `root` (one tick, at most a second)."""
    _dev, newest = newest_stamp(root)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        got = fsclock.reading(home.cache)
        assert got is not None
        if got[1] > newest:
            return
        time.sleep(0.001)
    raise AssertionError("the file system's clock did not move on")


@pytest.fixture
def landed(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, str]:
    alice, me = make_home("alice"), make_home("me")
    return me, bundle_from(alice, me, tmp_path)


def remembered(home: Home, bid: str) -> bool:
    cache = CheckCache.of(home)
    result = cache.check(listing.find(home, bid))  # type: ignore[arg-type]
    assert result.ok
    return len(cache) == 1


def test_a_tree_written_a_moment_ago_is_remembered_once_the_file_systems_clock_moved_on(landed: tuple[Home, str]) -> None:
    me, bid = landed
    wait_for_tick(me, me.state_dir("pending") / bid)
    assert remembered(me, bid)


def test_not_in_the_same_tick_as_the_reading_nor_from_another_devices_clock(landed: tuple[Home, str], monkeypatch: pytest.MonkeyPatch) -> None:
    me, bid = landed
    dev, newest = newest_stamp(me.state_dir("pending") / bid)
    monkeypatch.setattr(fsclock, "reading", lambda _folder: (dev, newest))
    assert not remembered(me, bid)  # a write in this tick would keep the ctime the check saw
    monkeypatch.setattr(fsclock, "reading", lambda _folder: (dev + 1, newest + 10**12))
    assert not remembered(me, bid)  # another file system's clock says nothing of this one's
    monkeypatch.setattr(fsclock, "reading", lambda _folder: None)
    assert not remembered(me, bid)  # no reading: the two-second rule alone
    monkeypatch.setattr(fsclock, "reading", lambda _folder: (dev, newest + 1))
    assert remembered(me, bid)


def test_the_reading_is_taken_before_the_check_starts(landed: tuple[Home, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A reading taken after the check's look would vouch for writes made during it."""
    me, bid = landed
    wait_for_tick(me, me.state_dir("pending") / bid)
    order: list[str] = []
    real_reading, real_check = fsclock.reading, checks.bundle_mod.check
    monkeypatch.setattr(fsclock, "reading", lambda folder: (order.append("reading"), real_reading(folder))[1])
    monkeypatch.setattr(checks.bundle_mod, "check", lambda *a, **k: (order.append("check"), real_check(*a, **k))[1])
    assert remembered(me, bid)
    assert order == ["reading", "check"]


def test_a_write_right_after_a_remembered_check_is_seen(landed: tuple[Home, str]) -> None:
    """On the real file system and its real clock, many times over: whatever tick the check and
    the write share, a changed byte (size and mtime kept) is never served a good check."""
    me, bid = landed
    f = payload(me, bid)
    good = f.read_bytes()
    os.chmod(f, 0o600)
    for i in range(60):
        f.write_bytes(good)
        if i % 2:
            wait_for_tick(me, me.state_dir("pending") / bid)
        cache = CheckCache.of(me)
        stored = listing.find(me, bid)
        assert stored is not None and cache.check(stored).ok
        cache.save()
        before = os.stat(f)
        f.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
        os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert not CheckCache.of(me).check(stored).ok, f"round {i}: a stale good check was served"


def test_a_planted_probe_is_never_followed_nor_waited_on(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    home = make_home("me")
    home.cache.mkdir(exist_ok=True)
    probe = home.cache / fsclock.PROBE
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    before = os.stat(outside)
    probe.symlink_to(outside)
    assert fsclock.reading(home.cache) is None
    assert outside.read_bytes() == b"keep" and os.stat(outside).st_ctime_ns == before.st_ctime_ns
    probe.unlink()
    os.mkfifo(probe)
    assert fsclock.reading(home.cache) is None  # no reader: refused at once, never waited on
    probe.unlink()
    probe.mkdir()
    assert fsclock.reading(home.cache) is None
    probe.rmdir()
    got = fsclock.reading(home.cache)
    assert got is not None and got[0] == os.stat(home.cache).st_dev and probe.stat().st_size == 0
