"""A first listing's checks spread over processes (gage.home.cache.checkpool) say and remember
exactly what checks made one at a time would: the same verdicts, the same problems, the same
check cache, bundle for bundle, whatever the bundle's fault."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gagetest import arrive, pair
from test_checkcache import bundle_from

from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.home import listing
from gage.home.cache import checkpool, checks
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.inbox.rows import inbox_rows


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "RACY_NS", 50_000_000)


def _faulty_inbox(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, list[str]]:
    """Pending holds good bundles and one of each fault a check finds."""
    alice, me = make_home("alice"), make_home("me")
    pair(me, "alice", alice)
    ids = [bundle_from(alice, me, tmp_path, f"b{i}") for i in range(8)]
    pending = me.state_dir("pending")
    (pending / ids[0] / PAYLOAD / "a.txt").write_bytes(b"X" * 64)  # a payload byte changed, size kept
    sig = pending / ids[1] / SIGNATURE
    sig.write_bytes(bytes([sig.read_bytes()[0] ^ 1]) + sig.read_bytes()[1:])  # a bad signature
    (pending / ids[2] / PAYLOAD / "extra.txt").write_bytes(b"not listed")  # a file the manifest does not list
    (pending / ids[3] / MANIFEST).write_bytes(b"{not json")  # a manifest that does not parse
    shutil.rmtree(pending / ids[4] / PAYLOAD)  # the payload gone
    os.chmod(pending / ids[5] / PAYLOAD / "b.txt", 0)  # a file that cannot be read (not as root)
    stranger = make_home("stranger")
    arrive(me, _made(stranger, tmp_path))  # from a key never confirmed
    time.sleep(0.12)  # past the (shortened) racy window: what checks out may be remembered
    return me, ids


def _made(sender: Home, tmp: Path) -> Path:
    from gage.inbox import send

    src = tmp / "src-stranger"
    src.mkdir()
    (src / "s.txt").write_bytes(b"S" * 10)
    _m, dest = send.create(sender, [src / "s.txt"], kind="share", subject="from a stranger")
    return dest


def _answers(home: Home) -> tuple[list[dict[str, object]], dict[str, list[object]]]:
    """The rows a listing gives and the check cache it leaves, keyed by bundle id."""
    for name in ("checks.json", "rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
        (home.cache / name).unlink(missing_ok=True)
    rows = [r.to_json() for r in inbox_rows(home)]
    kept = json.loads((home.cache / "checks.json").read_bytes())["entries"]
    return rows, {Path(k).name: v for k, v in kept.items()}


def _alone_then_pooled(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Home, Any]:
    """A faulty inbox's answers with no pool; then a pool of two is used for every listing."""
    home, _ids = _faulty_inbox(make_home, tmp_path)
    monkeypatch.setattr(checkpool, "MIN_MISSES", 10**9)
    alone = _answers(home)
    monkeypatch.setattr(checkpool, "MIN_MISSES", 1)
    monkeypatch.setattr(checkpool, "workers", lambda: 2)
    return home, alone


def test_a_pool_checks_as_one_process_does(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, ids = _faulty_inbox(make_home, tmp_path)
    used: list[int] = []
    real = checkpool.run

    def counted(fn: Any, jobs: list[Any]) -> list[Any] | None:
        got = real(fn, jobs)
        used.append(-1 if got is None else len(jobs))
        return got

    monkeypatch.setattr(checkpool, "run", counted)
    monkeypatch.setattr(checkpool, "MIN_MISSES", 10**9)  # one process
    alone = _answers(home)
    assert used == [-1]
    monkeypatch.setattr(checkpool, "MIN_MISSES", 1)
    monkeypatch.setattr(checkpool, "workers", lambda: 2)
    pooled = _answers(home)
    assert used[-1] == 9  # every bundle checked by the pool
    assert pooled == alone
    assert not set(ids[:5]) & set(pooled[1])  # a bundle with a fault is never remembered
    assert set(ids[6:]) <= set(pooled[1])


def test_a_bundle_a_worker_cannot_check_is_checked_here(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that fails on a bundle gives it back: the listing checks it itself, as before."""
    home, alone = _alone_then_pooled(make_home, tmp_path, monkeypatch)
    real = checks.fresh_check

    def flaky(root: Path, key: str, named: bool, started: checks.Started) -> object:
        if os.getpid() != parent and root.name < "8":
            raise OSError("a worker's fault")
        return real(root, key, named, started)

    parent = os.getpid()
    monkeypatch.setattr(checks, "fresh_check", flaky)
    assert _answers(home) == alone


def test_no_pool_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork copies every lock another thread holds, held for good in the copy."""
    monkeypatch.setattr(checkpool.sys, "platform", "linux")
    monkeypatch.setattr(checkpool.os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert checkpool.workers() == 2
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert checkpool.workers() == 0
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(checkpool.os, "sched_getaffinity", lambda _pid: {0})
    assert checkpool.workers() == 0
    monkeypatch.setattr(checkpool.sys, "platform", "darwin")
    assert checkpool.workers() == 0


def test_few_misses_take_no_pool(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpool, "workers", lambda: 2)
    assert checkpool.run(checks.pooled_check, [("/nonexistent", True, "/nonexistent", (0, -1, 0))] * (checkpool.MIN_MISSES - 1)) is None


def test_the_cache_a_pool_fills_is_used_by_the_next_listing(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, ids = _faulty_inbox(make_home, tmp_path)
    monkeypatch.setattr(checkpool, "MIN_MISSES", 1)
    monkeypatch.setattr(checkpool, "workers", lambda: 2)
    _rows, kept = _answers(home)
    cache = CheckCache.of(home)
    for st in listing.list_bundles(home, ("pending",)):
        cache.check(st)
    assert cache.hits == len(kept) >= 3 and cache.misses == 9 - len(kept)


def test_no_worker_outlives_a_listing_killed_outright(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """SIGKILL of a listing in the middle of its pool: its workers go with it (a pool's worker
    waits on a pipe it holds both ends of, and would otherwise wait for ever)."""
    import signal
    import subprocess
    import sys

    home, _ids = _faulty_inbox(make_home, tmp_path)
    script = (
        "import os, sys, time\n"
        "from gage.home.cache import checkpool, checks\n"
        "checkpool.MIN_MISSES = 1\n"
        "checkpool.workers = lambda: 2\n"
        "real = checks.fresh_check\n"
        "def slow(root, key, named, started):\n"
        "    print('worker', os.getpid(), flush=True)\n"
        "    time.sleep(60)\n"
        "    return real(root, key, named, started)\n"
        "checks.fresh_check = slow\n"
        "from gage.cli.main import main\n"
        "main(['--home', sys.argv[1], 'list', '--json'])\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(home.root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("worker "), line
    worker = int(line.split()[1])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return  # dead, waiting only for its reaper
        time.sleep(0.05)
    os.kill(worker, signal.SIGKILL)
    raise AssertionError("a pool worker outlived the listing killed outright")


def test_a_worker_that_dies_costs_only_the_checks_made_here(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed in the middle (the OOM killer, a signal): the listing neither waits for
    ever on the checks it held nor loses them; it makes them itself."""
    import signal

    home, alone = _alone_then_pooled(make_home, tmp_path, monkeypatch)
    real = checks.fresh_check
    parent = os.getpid()

    def dying(root: Path, key: str, named: bool, started: checks.Started) -> object:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(root, key, named, started)

    monkeypatch.setattr(checks, "fresh_check", dying)
    assert _answers(home) == alone
