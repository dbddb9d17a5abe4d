"""A batch of imports under a fault at each of its steps: every write, rename, fsync and journal write.

A batch lands many bundles with one lock, their copies synced together and one journal write.
A fault at any step (a full disk, an I/O error, Ctrl-C, kill -9) must leave each bundle either
landed and journaled, or not landed (and named by no arrival line); the outcomes must say
which; and the next import must finish the rest, each bundle journaled as arrived once.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gage.format.errors import GageError
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import landmany, send
from gage.inbox.opening import open_home

STEPS = ("write", "fsync", "rename", "replace")
ARRIVALS = ("imported", "received")


class Faults:
    """Counts the file system calls of the code under test; raises `exc` at call number `at`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.at: int | None = None
        self.exc: BaseException | None = None
        self.where: str | None = None
        self.lock = threading.Lock()
        for name in STEPS:
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._wrap(name, real))

    def _wrap(self, name: str, real: Callable[..., object]) -> Callable[..., object]:
        def call(*a: object, **kw: object) -> object:
            with self.lock:
                self.calls += 1
                hit = self.at is not None and self.calls == self.at
                if hit:
                    self.where = name
            if hit:
                assert self.exc is not None
                raise self.exc
            return real(*a, **kw)

        return call

    def arm(self, at: int | None, exc: BaseException | None) -> None:
        self.calls, self.at, self.exc, self.where = 0, at, exc, None


def _sources(make_home: Callable[[str], Home], tmp_path: Path, n: int) -> list[Path]:
    bob = make_home("bob")
    out = []
    for i in range(n):
        f = tmp_path / f"n{i}.txt"
        f.write_bytes(os.urandom(200 + 97 * i))
        out.append(send.create(bob, [f], kind="share")[1])
    return out


def _arrivals(home: Home) -> list[str]:
    return [e["bundle"] for e in home.journal.entries() if e.get("event") in ARRIVALS and not e.get("again")]


def _pending(home: Home) -> set[str]:
    return set(os.listdir(home.state_dir("pending")))


def _consistent(home: Home, srcs: list[Path], outcomes: list[landmany.Outcome] | None) -> None:
    """Landed means journaled and in pending; not landed means neither, and nothing left in staging."""
    arrived = _arrivals(home)
    assert len(arrived) == len(set(arrived)), "an arrival journaled twice"
    assert set(arrived) == _pending(home), "the journal and pending disagree"
    assert not [n for n in os.listdir(home.staging) if n.startswith("import-")], "a scratch copy was left"
    if outcomes is None:
        return
    for src, o in zip(srcs, outcomes, strict=True):
        if isinstance(o, GageError):
            assert src.name not in arrived, f"refused ({o}) but journaled"
        else:
            assert o.new and o.id in arrived, "reported landed but not journaled"


def _finish(home: Home, srcs: list[Path]) -> None:
    """The next import, with no fault, lands the rest; each bundle arrived once, the journal verifies."""
    again = landmany.import_many(home, [landmany.Incoming(s) for s in srcs])
    assert all(not isinstance(o, GageError) for o in again), again
    assert _pending(home) == {s.name for s in srcs}
    assert sorted(_arrivals(home)) == sorted(s.name for s in srcs)
    assert verify_journal(home.journal).ok


def _points(faults: Faults, make_home: Callable[[str], Home], srcs: list[Path]) -> int:
    home = make_home("count")
    faults.arm(None, None)
    landmany.import_many(home, [landmany.Incoming(s) for s in srcs])
    return faults.calls


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[Faults]:
    yield Faults(monkeypatch)


@pytest.mark.parametrize(
    "exc",
    [OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EIO, "Input/output error"), KeyboardInterrupt()],
    ids=["ENOSPC", "EIO", "SIGINT"],
)
def test_a_fault_at_each_step_of_a_batch_leaves_each_bundle_landed_and_journaled_or_neither(
    make_home: Callable[[str], Home], tmp_path: Path, faults: Faults, exc: BaseException
) -> None:
    srcs = _sources(make_home, tmp_path, 4)
    n = _points(faults, make_home, srcs)
    assert n > 20  # every copy's writes, the syncs, the renames, the journal's write, fsyncs and head
    seen: set[str] = set()
    for at in range(1, n + 1):
        home = make_home(f"h{at}")
        faults.arm(at, exc)
        outcomes: list[landmany.Outcome] | None = None
        try:
            outcomes = landmany.import_many(home, [landmany.Incoming(s) for s in srcs])
        except KeyboardInterrupt:
            assert isinstance(exc, KeyboardInterrupt)
        except GageError:
            pass  # a fault of the batch as a whole: nothing is reported landed
        where = faults.where
        faults.arm(None, None)
        assert where is not None, f"no call {at} of {n}"
        seen.add(where)
        _consistent(home, srcs, outcomes)
        _finish(home, srcs)
    assert seen >= set(STEPS), seen


def test_a_journal_write_that_fails_after_its_lines_are_in_keeps_them_landed(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines are written and synced, then the head's rewrite fails: the bundles stay landed
    and are reported so (the journal names them), never moved back out of pending."""
    srcs = _sources(make_home, tmp_path, 3)
    home = make_home("me")
    real = type(home.journal).append_many

    def late(self, items):  # type: ignore[no-untyped-def]
        real(self, items)
        raise GageError("cannot rewrite the journal's head: No space left on device")

    monkeypatch.setattr(type(home.journal), "append_many", late)
    outcomes = landmany.import_many(home, [landmany.Incoming(s) for s in srcs])
    assert all(not isinstance(o, GageError) and o.new for o in outcomes), outcomes
    _consistent(home, srcs, outcomes)


def test_one_bad_bundle_is_refused_alone(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    srcs = _sources(make_home, tmp_path, 3)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "manifest.json").write_text("{")
    home = make_home("me")
    outcomes = landmany.import_many(home, [landmany.Incoming(p) for p in (srcs[0], junk, srcs[1], srcs[0], srcs[2])])
    assert isinstance(outcomes[1], GageError) and outcomes[1].stage == "malformed"
    assert [o.new for o in outcomes if not isinstance(o, GageError)] == [True, True, False, True]
    assert sorted(_arrivals(home)) == sorted(s.name for s in srcs)


def test_a_batch_is_bounded_by_count_and_bytes(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srcs = _sources(make_home, tmp_path, 7)
    home, other = make_home("me"), make_home("other")
    batches: list[int] = []
    real = type(home.journal).append_many

    def counting(self, items):  # type: ignore[no-untyped-def]
        batches.append(len(items))
        return real(self, items)

    monkeypatch.setattr(type(home.journal), "append_many", counting)
    landmany.import_many(home, [landmany.Incoming(s) for s in srcs], batch_count=3)
    assert batches == [3, 3, 1]
    batches.clear()
    landmany.import_many(other, [landmany.Incoming(s) for s in srcs], batch_bytes=1)
    assert batches == [1] * 7


# --- kill -9 at each step, in a process of its own --------------------------------------------

_KILLER = """
import os, signal, sys
from gage.cli.main import main
at, steps = int(sys.argv[1]), ("write", "fsync", "rename", "replace")
count = [0]
def wrap(real):
    def call(*a, **kw):
        count[0] += 1
        if count[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **kw)
    return call
for name in steps:
    setattr(os, name, wrap(getattr(os, name)))
sys.exit(main(["import", *sys.argv[2:]]))
"""


def test_kill_9_at_each_step_of_a_batch_import_leaves_nothing_the_journal_misstates(
    make_home: Callable[[str], Home], tmp_path: Path
) -> None:
    srcs = _sources(make_home, tmp_path, 3)
    script = tmp_path / "killer.py"
    script.write_text(_KILLER)
    at, killed = 1, 0
    while at < 400:
        home = make_home(f"k{at}")
        env = dict(os.environ, GAGE_HOME=str(home.root))
        run = subprocess.run([sys.executable, str(script), str(at), *map(str, srcs)], env=env, capture_output=True, timeout=120)
        if run.returncode == 0:
            break  # past the last step: the import finished
        assert run.returncode == -9, run.stderr.decode()[-2000:]
        killed += 1
        # What a kill left: arrival lines only for bundles in pending. Opening the home
        # (reconcile) records any bundle in pending the journal does not name, as found.
        arrived = set(_arrivals(home))
        assert arrived <= _pending(home), "the journal says arrived for a bundle not in pending"
        opened = open_home(home.root)
        named = {e.get("bundle") for e in opened.journal.entries()}
        assert _pending(opened) <= named
        again = landmany.import_many(opened, [landmany.Incoming(s) for s in srcs])
        assert all(not isinstance(o, GageError) for o in again), again
        assert _pending(opened) == {s.name for s in srcs}
        assert verify_journal(opened.journal).ok
        at += 3 if at > 12 else 1  # every early step (the copies), then every third
    assert killed > 10


def test_the_watcher_lands_what_one_look_finds_in_one_batch(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from gage.carriers.watch import Watcher

    srcs = _sources(make_home, tmp_path, 3)
    drop = tmp_path / "drop"
    drop.mkdir()
    for s in srcs:
        shutil.copytree(s, drop / s.name)
    (drop / "not-a-bundle").mkdir()
    home = make_home("me")
    writes: list[list[str]] = []
    real = type(home.journal).append_many

    def counting(self, items):  # type: ignore[no-untyped-def]
        writes.append([str(event) for event, _fields in items])
        return real(self, items)

    monkeypatch.setattr(type(home.journal), "append_many", counting)
    events = Watcher(home, [drop], settle=0.0).scan()
    assert sorted(e.id for e in events if e.kind == "imported") == sorted(s.name for s in srcs)
    assert ["received"] * 3 in writes  # the three arrivals in one journal write
    assert any(e.kind == "skipped" and "not-a-bundle" in e.message for e in events)
