"""The drop-folder watcher: slow copies, temporary names, vanishing paths, settling, unattended, stopping."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)

from gage import bundle as bundle_mod
from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.carriers import watch
from gage.carriers.events import WatchEvent
from gage.carriers.watch import Watcher
from gage.home import listing
from gage.trust import verdict as verdict_mod


def until(pred: Callable[[], bool], timeout: float = 60.0) -> bool:  # a cap for a busy machine, not a wait
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def received(world: World, bid: str) -> list[dict]:
    return [e for e in world.me.journal.entries() if e.get("event") == "received" and e.get("bundle") == bid]


@pytest.fixture
def drop(tmp_path: Path) -> Path:
    d = tmp_path / "drop"
    d.mkdir()
    return d


@pytest.fixture
def running(world: World, drop: Path) -> Iterator[Callable[..., tuple[Watcher, list[WatchEvent]]]]:
    """Start a real watcher (watchfiles) in a thread; it is stopped and joined after the test."""
    started: list[tuple[Watcher, threading.Thread]] = []

    def start(**kw: object) -> tuple[Watcher, list[WatchEvent]]:
        events: list[WatchEvent] = []
        w = Watcher(world.me, [drop], on_event=events.append, debounce_ms=100, **kw)  # type: ignore[arg-type]
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        assert until(lambda: any(e.kind == "started" for e in events))
        started.append((w, t))
        return w, events

    yield start
    for w, t in started:
        w.stop()
        t.join(timeout=5)
        assert not t.is_alive(), "the watcher did not stop"


def big_bundle(world: World, sender=None, **kw: object) -> str:
    """A bundle with a 12 KiB payload, so a slow copy takes a while."""
    return world.make(sender or world.bob, "x" * 12 * 1024, **kw)  # type: ignore[arg-type]


# --- live watcher -------------------------------------------------------------------------


def test_slow_copy_is_imported_once_complete_and_not_before(world: World, drop: Path, running) -> None:
    bid = big_bundle(world)
    src = world.wire / bid
    w, events = running(settle=1.5)
    done = threading.Event()
    last_chunk = threading.Event()  # set just before the final chunk: until then the copy is incomplete

    def slow_copy() -> None:
        dst = drop / bid
        dst.mkdir()
        shutil.copyfile(src / MANIFEST, dst / MANIFEST)
        shutil.copyfile(src / SIGNATURE, dst / SIGNATURE)
        (dst / PAYLOAD).mkdir()
        data = (src / PAYLOAD / "note.txt").read_bytes()
        with open(dst / PAYLOAD / "note.txt", "wb") as f:
            for i in range(0, len(data), 1024):
                if i + 1024 >= len(data):
                    last_chunk.set()
                f.write(data[i : i + 1024])
                f.flush()
                time.sleep(0.1)
        done.set()

    t = threading.Thread(target=slow_copy)
    t.start()
    while not done.is_set():
        if not last_chunk.is_set():
            assert listing.find(world.me, bid) is None, "imported before the copy was complete"
        time.sleep(0.02)
    t.join()
    assert until(lambda: listing.find(world.me, bid) is not None)
    stored = listing.find(world.me, bid)
    assert stored is not None and stored.state == "pending"
    assert bundle_mod.check(stored.path, expect_name=True).ok
    # The rename into pending comes a moment before its journal line: wait for the line.
    assert until(lambda: len(received(world, bid)) == 1)
    [e] = received(world, bid)
    assert e["via"] == f"drop folder {drop}"
    assert any(e.kind == "waiting" for e in events)
    # The watcher reports the import after computing its verdict, just after the journal line.
    assert until(lambda: any(e.kind == "imported" and e.id == bid and "VERIFIED" in e.message for e in events))
    assert (drop / bid).is_dir(), "the watcher must not delete from the drop folder"


@pytest.mark.parametrize("temp_name", [".{id}.partial", "{id}.tmp"])
def test_temporary_name_then_rename(world: World, drop: Path, running, temp_name: str) -> None:
    bid = big_bundle(world)
    w, events = running(settle=0.3)
    tmp = drop / temp_name.format(id=bid)
    shutil.copytree(world.wire / bid, tmp)
    (tmp / PAYLOAD / "junk-while-copying").write_bytes(b"half")  # even invalid, it is never taken under a temp name
    time.sleep(1.0)  # well past the debounce and the settle time
    assert listing.list_bundles(world.me, ("pending",)) == []
    (tmp / PAYLOAD / "junk-while-copying").unlink()
    os.rename(tmp, drop / bid)
    assert until(lambda: listing.find(world.me, bid) is not None)
    assert bundle_mod.check(listing.find(world.me, bid).path, expect_name=True).ok
    assert until(lambda: len(received(world, bid)) == 1)  # its journal line follows the rename


def test_churn_of_vanishing_paths_does_not_stop_the_watcher(world: World, drop: Path, running) -> None:
    bid = big_bundle(world)
    w, events = running(settle=0.2)
    src = world.wire / bid
    end = time.monotonic() + 1.0
    n = 0
    while time.monotonic() < end:
        d = drop / f"flicker{n % 3}"
        shutil.copytree(src, d, dirs_exist_ok=True)
        (d / PAYLOAD / "note.txt").write_bytes(b"short")
        time.sleep(0.01)
        shutil.rmtree(d, ignore_errors=True)
        n += 1
    shutil.copytree(src, drop / bid)
    assert until(lambda: listing.find(world.me, bid) is not None)
    assert not any(e.kind == "error" for e in events), [e.message for e in events if e.kind == "error"]
    assert all(s.id == bid for s in listing.list_bundles(world.me, ("pending",)))


def test_unattended_watcher_accepts_within_budget_and_says_when_spent(world: World, drop: Path, running) -> None:
    q = world.make(world.me, "my question", kind="question")
    a1 = world.make(world.bob, "answer one", kind="answer", parent=q)
    a2 = world.make(world.bob, "answer two", kind="answer", parent=q)
    other = world.make(world.bob, "unrelated")
    w, events = running(settle=0.3, budget=1)
    for bid in (a1, a2, other):
        shutil.copytree(world.wire / bid, drop / f".{bid}.partial")
        os.rename(drop / f".{bid}.partial", drop / bid)
        assert until(lambda bid=bid: any(e.id == bid and e.kind in ("accepted", "pending", "budget-spent") for e in events))
    kinds = {e.id: e.kind for e in events if e.kind in ("accepted", "pending", "budget-spent")}
    assert kinds == {a1: "accepted", a2: "budget-spent", other: "pending"}
    assert next(e for e in events if e.id == a1 and e.kind == "accepted").message.startswith("accepted UNATTENDED")
    assert world.where(a1) == ["accepted"] and world.where(a2) == ["pending"] and world.where(other) == ["pending"]


def test_watcher_stops_promptly(world: World, drop: Path) -> None:
    events: list[WatchEvent] = []
    # Promptly: well before the settle time, which a watcher that waited for it would take.
    w = Watcher(world.me, [drop], on_event=events.append, settle=600.0)
    t = threading.Thread(target=w.run)
    t.start()
    assert until(lambda: any(e.kind == "started" for e in events))
    t0 = time.monotonic()
    w.stop()
    t.join(timeout=120)
    assert not t.is_alive() and time.monotonic() - t0 < 120
    assert events[-1].kind == "stopped"


# --- one pass at a time, with a clock the test controls ---------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_settle_rule_imports_a_stalled_partial_bundle_as_invalid_only_after_settling(world: World, drop: Path) -> None:
    bid = big_bundle(world)
    dst = drop / bid
    shutil.copytree(world.wire / bid, dst)
    (dst / PAYLOAD / "note.txt").write_bytes(b"x" * 5000)  # stalled halfway
    clock = Clock()
    w = Watcher(world.me, [drop], settle=2.0, clock=clock)
    assert [e.kind for e in w.scan()] == ["waiting"]
    clock.t += 1.5
    assert w.scan() == [] and listing.find(world.me, bid) is None
    with open(dst / PAYLOAD / "note.txt", "ab") as f:  # it moved: the settle time starts again
        f.write(b"x")
    clock.t += 1.0
    assert w.scan() == [] and listing.find(world.me, bid) is None
    clock.t += 1.5
    assert w.scan() == [] and listing.find(world.me, bid) is None
    clock.t += 0.6
    [ev] = w.scan()
    assert ev.kind == "imported" and "INVALID" in ev.message
    v = verdict_mod.compute(world.me, listing.find(world.me, bid))
    assert v.verdict == "invalid"
    assert w.scan() == []  # imported once

    # The copy finally completes: the watcher brings in the good copy in place of the invalid one.
    shutil.copyfile(world.wire / bid / PAYLOAD / "note.txt", dst / PAYLOAD / "note.txt")
    [ev] = w.scan()
    assert ev.kind == "imported" and "VERIFIED" in ev.message
    assert verdict_mod.compute(world.me, listing.find(world.me, bid)).verdict != "invalid"
    arrivals = [e for e in received(world, bid) if not e.get("again")]
    assert len(arrivals) == 2 and arrivals[-1].get("replaced_invalid") is True
    assert w.scan() == []  # and only once


def test_complete_bundle_needs_no_settling_and_held_bundles_are_not_reimported(world: World, drop: Path) -> None:
    bid = big_bundle(world)
    held = big_bundle(world)
    world.deliver(held)
    shutil.copytree(world.wire / bid, drop / bid)
    shutil.copytree(world.wire / held, drop / "renamed-copy")
    w = Watcher(world.me, [drop], settle=60.0, clock=Clock())
    [ev] = w.scan()
    assert ev.kind == "imported" and ev.id == bid
    assert len(received(world, bid)) == 1
    assert [e for e in world.me.journal.entries() if e.get("bundle") == held and e.get("again")] == []


def test_symlinks_loose_files_and_non_bundles(world: World, drop: Path, tmp_path: Path) -> None:
    bid = big_bundle(world)
    os.symlink(world.wire / bid, drop / "link-to-bundle")
    (drop / "loose.txt").write_text("not a bundle")
    (drop / "plain-folder").mkdir()
    clock = Clock()
    w = Watcher(world.me, [drop], settle=1.0, clock=clock)
    first = w.scan()
    assert [(e.kind, e.path.name) for e in first] == [("skipped", "link-to-bundle"), ("waiting", "plain-folder")]
    clock.t += 2
    assert [(e.kind, e.path.name) for e in w.scan()] == [("skipped", "plain-folder")]
    assert w.scan() == []
    assert listing.list_bundles(world.me, ("pending",)) == []


def test_paths_vanishing_mid_scan_are_tolerated(world: World, drop: Path, monkeypatch) -> None:
    bid = big_bundle(world)
    shutil.copytree(world.wire / bid, drop / "a")
    shutil.copytree(world.wire / bid, drop / "b")
    real_fp, real_read = watch.fingerprint, watch.bundle_mod.read_manifest

    def fp_then_vanish(path: Path):
        out = real_fp(path)
        shutil.rmtree(path)  # gone between looking and reading
        return out

    monkeypatch.setattr(watch, "fingerprint", fp_then_vanish)
    w = Watcher(world.me, [drop], settle=0.0, clock=Clock())
    events = w.scan()
    assert not any(e.kind in ("error", "imported") for e in events)
    assert not (drop / "a").exists() and not (drop / "b").exists()
    monkeypatch.setattr(watch, "fingerprint", real_fp)

    shutil.copytree(world.wire / bid, drop / "c")

    def read_then_vanish(path: Path):
        out = real_read(path)
        shutil.rmtree(path)  # gone before the copy into the home
        return out

    monkeypatch.setattr(watch.bundle_mod, "read_manifest", read_then_vanish)
    events = w.scan()
    assert not any(e.kind == "error" for e in events)
    assert listing.list_bundles(world.me, ("pending",)) == []
    assert not list(world.me.staging.glob("import-*"))


def test_drop_folder_inside_the_home_is_refused(world: World) -> None:
    from gage.format.errors import UsageError

    with pytest.raises(UsageError):
        Watcher(world.me, [world.me.state_dir("pending")])


# --- the command --------------------------------------------------------------------------


def test_watch_usage_errors(world: World, drop: Path, gage) -> None:
    r = gage(world.me, "watch", "--drop", str(drop), "--unattended")
    assert r.code == 2 and "--budget" in r.err
    assert gage(world.me, "watch").code == 2
    assert gage(world.me, "watch", "--drop", str(drop / "missing")).code == 7


def test_gage_watch_process_imports_and_stops_on_sigterm(world: World, drop: Path) -> None:
    bid = big_bundle(world)
    env = {**os.environ, "GAGE_HOME": str(world.me.root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "watch", "--drop", str(drop), "--settle", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()  # type: ignore[union-attr]

    def wait_for(word: str) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                ln = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if word in ln:
                return ln
        raise AssertionError(f"no line with {word!r}")

    try:
        wait_for("watching")
        shutil.copytree(world.wire / bid, drop / f".{bid}.tmp")
        os.rename(drop / f".{bid}.tmp", drop / bid)
        assert bid[:12] in wait_for("received")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
        wait_for("stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert listing.find(world.me, bid).state == "pending"
