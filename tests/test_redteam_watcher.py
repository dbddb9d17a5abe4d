"""Red team, issue 9 class 3: nothing in a drop folder may stop the watcher (or make `import` die).

Each test says what the attacker wants. The attack that opened the class: a bundle whose
payload holds a deep tree of empty, unlisted folders. `verify` passed it, `import` died
with a RecursionError (a recursive walk of the source), and `gage watch` exited on it at
every restart. The siblings: many entries, names that are not UTF-8 (in a bundle, a
candidate's name, the drop folder's own name), entries that vanish or cannot be read
mid-walk, and any other failure on one candidate. The rule: a candidate that cannot be
imported is reported once and skipped; the watcher carries on.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)
from test_watch import Clock, big_bundle, until

from gage import bundle as bundle_mod
from gage.bundle import PAYLOAD, safeopen
from gage.bundle import checking as bundle_check
from gage.carriers import watch
from gage.carriers.watch import Watcher
from gage.cli.output import show
from gage.format.errors import GageError
from gage.home import listing
from gage.home.journal.verify import verify as verify_journal
from gage.inbox import store

_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def make_deep(root: Path, depth: int, name: str = "d") -> None:
    """`root/d/d/d/...` `depth` folders deep, made through directory descriptors, so it can go
    past PATH_MAX (no path to the bottom is ever spelled out)."""
    fd = os.open(root, _O_DIR)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, _O_DIR, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)


def remove_deep(root: Path) -> None:
    """Remove a tree of any depth without recursion (shutil.rmtree recurses on Python 3.11).

    Walks down and back up by relative `chdir` (no path to the bottom is ever spelled out, so
    depth past PATH_MAX is fine), removing each folder once it is empty; the working directory
    is restored afterwards. Only used in teardown, when no other thread runs."""
    if not os.path.lexists(root):
        return
    if not root.is_dir() or root.is_symlink():
        root.unlink()
        return
    home = os.open(".", os.O_RDONLY)
    try:
        os.chdir(root)
        names: list[str] = []
        while True:
            sub = None
            with os.scandir(".") as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        sub = e.name
                        break
                    os.unlink(e.name)
            if sub is not None:
                os.chdir(sub)
                names.append(sub)
                continue
            if not names:
                break
            os.chdir("..")
            os.rmdir(names.pop())
    finally:
        os.fchdir(home)
        os.close(home)
    os.rmdir(root)


@pytest.fixture
def deep_cleanup() -> Iterator[list[Path]]:
    """Trees listed here are removed without recursion after the test (pytest's own clean-up recurses)."""
    trees: list[Path] = []
    yield trees
    for t in trees:
        remove_deep(t)


@pytest.fixture
def drop(tmp_path: Path) -> Path:
    d = tmp_path / "drop"
    d.mkdir()
    return d


def no_traceback(text: str) -> None:
    assert "Traceback" not in text and "RecursionError" not in text, text


# --- the attack that opened the class ----------------------------------------------------------


@pytest.mark.parametrize("depth", [1500, 2600])
def test_deep_tree_of_empty_folders_does_not_kill_import(world: World, tmp_path: Path, gage, deep_cleanup, depth: int) -> None:
    """Attacker puts a bundle in a transport folder whose payload also holds a tree of empty,
    unlisted folders `depth` deep (2600 is past PATH_MAX), hoping `gage import` dies with a
    traceback. (was fooled: fixed, every walk is iterative, enters only folders on the way to a
    listed file for copying, and looks at no more than EXTRAS_LOOKED_AT entries outside them.)
    Empty folders are not part of the bundle and are no problem in themselves, so `verify`
    accepts the shallower tree, as before; the deeper one has a path the OS cannot name."""
    bid = world.make(world.bob, "a fine bundle")
    src = tmp_path / "deep" / bid
    shutil.copytree(world.wire / bid, src)
    deep_cleanup.append(tmp_path / "deep")
    make_deep(src / PAYLOAD, depth)

    r = gage(None, "verify", str(src))
    no_traceback(r.err)
    deepest = len(os.fsencode(src / PAYLOAD)) + 2 * depth  # the path of the bottom folder, in bytes
    if deepest < os.pathconf("/", "PC_PATH_MAX"):
        assert r.code == 0, r.err
    else:
        assert r.code == 4 and "payload/d/d/d" in r.err and "cannot be looked at" in r.err, r.err

    r = gage(world.me, "import", str(src))
    no_traceback(r.err)
    assert r.code == 0, r.err
    assert r.out.strip() == bid
    held = listing.find(world.me, bid)
    assert held is not None and held.state == "pending"
    assert bundle_mod.check(held.path, expect_name=True).ok  # the home's copy is exactly the bundle
    assert os.listdir(held.path / PAYLOAD) == ["note.txt"]
    assert not list(world.me.staging.glob("import-*"))


def test_a_tree_too_big_to_look_at_is_tampered_and_bounded(tmp_path: Path, deep_cleanup, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attacker makes the unlisted tree bigger than a check will walk (folders nested past the
    budget), hoping for a walk that never ends. A check looks at EXTRAS_LOOKED_AT entries that
    are not part of the bundle, then says there are more and stops looking."""
    from test_attacks import ident, signed

    d = signed(tmp_path, ident(1), {"a.txt": b"a"})
    deep_cleanup.append(d)
    for i in range(3):
        (d / PAYLOAD / f"w{i}").mkdir()
        make_deep(d / PAYLOAD / f"w{i}", 40)
    for i in range(60):
        (d / PAYLOAD / f"f{i:02d}").write_bytes(b"")
    with monkeypatch.context() as m:
        m.setattr(bundle_check, "EXTRAS_LOOKED_AT", 100)
        c = bundle_mod.check(d)
    assert not c.ok and {p.stage for p in c.problems} == {"tampered"}
    assert any("the rest were not looked at" in p.message for p in c.problems), [str(p) for p in c.problems]
    assert not any(p.path == "payload/a.txt" for p in c.problems)  # the listed file is still checked, and fine
    c = bundle_mod.check(d)  # with the real budget everything is looked at: only the 60 files are named
    assert sorted(p.path for p in c.problems) == [f"payload/f{i:02d}" for i in range(60)]


def test_deep_tree_in_a_drop_folder_does_not_stop_the_watcher(world: World, drop: Path, deep_cleanup) -> None:
    """Attacker drops the deep-tree bundle, hoping the watcher exits (and exits again at every
    restart, since the bundle is still there). (was fooled: fixed)"""
    deep = world.make(world.bob, "deep")
    good = world.make(world.bob, "good")
    shutil.copytree(world.wire / deep, drop / "aaa-deep")
    deep_cleanup.append(drop / "aaa-deep")
    make_deep(drop / "aaa-deep" / PAYLOAD, 1500)
    shutil.copytree(world.wire / good, drop / "zzz-good")
    clock = Clock()
    for _restart in range(2):  # a restart is a new watcher on the same folder
        w = Watcher(world.me, [drop], settle=1.0, clock=clock)
        w.scan()
        clock.t += 2
        w.scan()
        assert w.scan() == []
    assert listing.find(world.me, good) is not None
    held = listing.find(world.me, deep)
    assert held is not None and bundle_mod.check(held.path, expect_name=True).ok


def test_gage_watch_survives_the_deep_tree_and_a_restart(world: World, drop: Path, deep_cleanup) -> None:
    """The same attack against the real `gage watch` process: it must keep running, import what
    it can, and stop cleanly on SIGTERM, at the first start and after a restart. (was fooled: fixed)"""
    deep = world.make(world.bob, "deep")
    shutil.copytree(world.wire / deep, drop / "deep")
    deep_cleanup.append(drop / "deep")
    make_deep(drop / "deep" / PAYLOAD, 1500)
    env = {**os.environ, "GAGE_HOME": str(world.me.root)}
    for n in range(2):
        good = world.make(world.bob, f"good {n}")
        proc = subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", "watch", "--drop", str(drop), "--settle", "0.2"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            shutil.copytree(world.wire / good, drop / f".{good}.partial")
            os.rename(drop / f".{good}.partial", drop / good)
            assert until(lambda good=good: listing.find(world.me, good) is not None, timeout=60), "the watcher did not import"
            assert until(lambda: listing.find(world.me, deep) is not None, timeout=60), "the deep bundle was not imported"
            assert proc.poll() is None, "the watcher exited"
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        no_traceback(err)
        assert proc.returncode == 0, err
    assert listing.find(world.me, deep) is not None


# --- any failure on one candidate ----------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        RecursionError("maximum recursion depth exceeded"),
        MemoryError(),
        UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed"),
        ValueError("embedded null byte"),
        KeyError("x"),
    ],
    ids=lambda e: type(e).__name__,
)
@pytest.mark.parametrize("where", ["import", "verdict", "unattended", "check"])
def test_any_failure_on_one_candidate_is_reported_once_and_skipped(
    world: World, drop: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException, where: str
) -> None:
    """Attacker finds some other way to make one step raise something gage did not plan for
    (whatever it is), hoping it takes the whole watcher down. The class, not the example: one
    bad candidate is reported once, with no traceback, and every other candidate still comes in.
    (was fooled: fixed, the watcher only caught GageError and OSError)"""
    q = world.make(world.me, "q", kind="question")
    bad = world.make(world.bob, "bad", kind="answer", parent=q)
    good = world.make(world.bob, "good", kind="answer", parent=q)
    shutil.copytree(world.wire / bad, drop / "a-bad")
    shutil.copytree(world.wire / good, drop / "b-good")

    def boom_for_bad(real):  # type: ignore[no-untyped-def]
        def f(*a, **kw):  # type: ignore[no-untyped-def]
            if any(bad in str(x) or "a-bad" in str(x) for x in a):
                raise exc
            return real(*a, **kw)

        return f

    targets = {
        "import": (watch.landmany, "_stage"),
        "verdict": (watch.verdict_mod, "compute"),
        "unattended": (watch.gate, "accept_unattended"),
        "check": (watch.bundle_mod, "check"),
    }
    mod, name = targets[where]
    monkeypatch.setattr(mod, name, boom_for_bad(getattr(mod, name)))
    w = Watcher(world.me, [drop], settle=0.0, budget=5, clock=Clock())
    events = w.scan() + w.scan() + w.scan()
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1, [(e.kind, e.message) for e in events]
    assert "a-bad" in errors[0].message and type(exc).__name__ in errors[0].message
    assert world.where(good) == ["accepted"]
    assert any(e.kind == "accepted" and e.id == good for e in events)


# --- many entries ----------------------------------------------------------------------------------


def test_many_unlisted_entries_cost_bounded_output(world: World, drop: Path, tmp_path: Path, gage) -> None:
    """Attacker fills a bundle's payload with thousands of unlisted files and folders, hoping a
    check, an import or the watcher prints (and holds in memory) one line per entry, or walks
    every folder. Named entries are capped; the rest are counted in one line."""
    bid = world.make(world.bob, "many")
    src = tmp_path / "many" / bid
    shutil.copytree(world.wire / bid, src)
    n = 3000
    for i in range(n):
        (src / PAYLOAD / f"extra-{i:05d}").write_bytes(b"")
        os.mkdir(src / PAYLOAD / f"dir-{i:05d}")
    (src / "top-extra").write_bytes(b"")
    c = bundle_mod.check(src)
    assert not c.ok and {p.stage for p in c.problems} == {"tampered"}
    assert len(c.problems) <= bundle_mod.NAMED_EXTRAS_LIMIT + 2, len(c.problems)
    assert any("more entries not part of the bundle" in p.message for p in c.problems)
    r = gage(world.me, "import", str(src))
    assert r.code == 0, r.err
    assert len(r.err.splitlines()) <= bundle_mod.NAMED_EXTRAS_LIMIT + 3, len(r.err.splitlines())
    assert "more" in r.err
    held = listing.find(world.me, bid)
    assert held is not None and bundle_mod.check(held.path, expect_name=True).ok

    shutil.copytree(src, drop / "many")
    w = Watcher(world.me, [drop], settle=0.0, clock=Clock())
    assert [e.kind for e in w.scan()] == []  # held already: nothing to do, and no crash


# --- names that are not UTF-8 ------------------------------------------------------------------


def test_names_that_are_not_utf8(world: World, tmp_path: Path, gage) -> None:
    """Attacker uses file and folder names that are not UTF-8: a payload entry, the candidate's
    own name, and (a sync tool's doing) the drop folder's name, hoping a message or the journal
    line cannot be encoded and the watcher dies. (was fooled: fixed, the drop folder's name went
    into the journal's `via` as a lone surrogate, which strict JSON refuses)"""
    drop = Path(os.fsdecode(os.fsencode(tmp_path / "drop") + b"-\xff"))
    drop.mkdir()
    bid = world.make(world.bob, "hello")
    cand = Path(os.fsdecode(os.fsencode(drop) + b"/bundle-\xfe"))
    shutil.copytree(world.wire / bid, cand)
    (cand / PAYLOAD / os.fsdecode(b"extra-\xfd.txt")).write_bytes(b"unlisted")
    w = Watcher(world.me, [drop], settle=0.0, clock=Clock())
    events = w.scan()
    assert [e.kind for e in events] == ["imported"], [(e.kind, e.message) for e in events]
    for e in events:
        show(e.message).encode("utf-8")  # printable as the CLI prints it
    [arrival] = [e for e in world.me.journal.entries() if e.get("event") == "received" and e.get("bundle") == bid]
    assert arrival["via"].startswith("drop folder ") and "\\xff" in arrival["via"]
    assert verify_journal(world.me.journal).ok

    other = world.make(world.bob, "again")
    src = Path(os.fsdecode(os.fsencode(tmp_path) + b"/src-\xfc")) / other
    shutil.copytree(world.wire / other, src)
    (src / PAYLOAD / os.fsdecode(b"\xfb")).write_bytes(b"")
    r = gage(world.me, "import", str(src))
    assert r.code == 0 and "\\udcfb" in r.err, r.err
    r = gage(None, "verify", str(src))
    assert r.code == 4 and "\\udcfb" in r.err, r.err


# --- entries that vanish or cannot be read mid-walk ------------------------------------------------


@pytest.mark.parametrize("error", [PermissionError, FileNotFoundError, NotADirectoryError])
def test_entries_that_vanish_or_cannot_be_read_during_the_import(
    world: World, drop: Path, monkeypatch: pytest.MonkeyPatch, error: type[OSError]
) -> None:
    """Attacker (or a sync tool) makes folders and files of a candidate vanish or become unreadable
    while the import walks it, hoping for an unhandled error. (Root ignores permissions, so the
    failures are injected where the walk lists a folder or opens a file.) The folder is named
    by the check and skipped by the copy, the file is left out of the copy (and shown as missing
    when the copy is checked); the watcher goes on."""
    bid = world.make(world.bob, "x")
    cand = drop / "c"
    shutil.copytree(world.wire / bid, cand)
    (cand / PAYLOAD / "junk").mkdir()
    (cand / PAYLOAD / "junk" / "f").write_bytes(b"f")
    real_scandir, real_open_beneath = os.scandir, bundle_mod.open_beneath

    def scandir(p=".", *a, **kw):  # type: ignore[no-untyped-def]
        if isinstance(p, (str, os.PathLike)) and str(p).endswith("junk"):
            raise error(13, "injected", str(p))
        return real_scandir(p, *a, **kw)

    def open_beneath(root, rel):  # type: ignore[no-untyped-def]
        if rel.endswith("note.txt"):
            raise error(13, "injected", rel)
        return real_open_beneath(root, rel)

    monkeypatch.setattr(bundle_mod.os, "scandir", scandir)
    monkeypatch.setattr(safeopen, "open_beneath", open_beneath)
    w = Watcher(world.me, [drop], settle=0.0, clock=Clock())
    events = w.scan() + w.scan()
    assert [e.kind for e in events] == ["imported"], [(e.kind, e.message) for e in events]
    held = listing.find(world.me, bid)
    assert held is not None
    c = bundle_mod.check(held.path, expect_name=True)
    assert [str(p) for p in c.problems] == ["payload/note.txt: is listed in the manifest but missing"]


def test_a_read_that_fails_part_way_is_an_io_error_not_a_crash(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attacker's medium fails part-way through a file (EIO), hoping for a traceback or a partial
    copy under the bundle's id. It is a GageIOError; nothing lands."""
    bid = world.make(world.bob, "y" * 5000)
    real_read = os.read

    def read(fd: int, n: int) -> bytes:
        if os.fstat(fd).st_size == 5000:  # the payload file, and only it
            raise OSError(5, "Input/output error")
        return real_read(fd, n)

    monkeypatch.setattr(bundle_mod.os, "read", read)
    with pytest.raises(GageError) as info:
        store.import_bundle(world.me, world.wire / bid)
    assert info.value.stage == "io"
    assert listing.find(world.me, bid) is None and not list(world.me.staging.glob("import-*"))


# --- the OS watch itself ----------------------------------------------------------------------


def test_a_failing_os_watch_does_not_stop_the_watcher(world: World, drop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attacker makes the OS watch fail: a folder the watcher may not read (watchfiles raises
    PermissionError unless told to ignore it), more folders than the user's inotify watches, or
    an IO error inside watchfiles, all raised out of `watchfiles.watch` and out of the watcher.
    (was fooled: fixed, the failure is reported once and the watcher goes on by looking at the
    folders on a timer; and the watch is no longer recursive, and ignores permission errors.)"""
    seen: dict[str, object] = {}

    def failing_watch(*paths, **kw):  # type: ignore[no-untyped-def]
        seen.update(kw)
        yield set()
        raise OSError(28, "OS file watch limit reached")

    monkeypatch.setattr(watch.watchfiles, "watch", failing_watch)
    events: list[watch.WatchEvent] = []
    w = Watcher(world.me, [drop], on_event=events.append, settle=0.2)
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        assert until(lambda: any(e.kind == "error" for e in events))
        bid = big_bundle(world)
        shutil.copytree(world.wire / bid, drop / f".{bid}.partial")
        os.rename(drop / f".{bid}.partial", drop / bid)
        assert until(lambda: listing.find(world.me, bid) is not None, timeout=20)
        assert t.is_alive()
    finally:
        w.stop()
        t.join(timeout=10)
    assert not t.is_alive() and events[-1].kind == "stopped"
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1 and "watch limit" in errors[0].message
    assert seen.get("recursive") is False and seen.get("ignore_permission_denied") is True


def test_a_name_the_terminal_cannot_encode_is_printed_escaped(world: World, drop: Path) -> None:
    """Attacker names a candidate with a printable non-ASCII character ("bündel"), hoping the
    watcher's output cannot be encoded (a terminal in ASCII or Latin-1): the print raised
    UnicodeEncodeError inside the watcher, which died (or, caught, called a good import a
    failure). (was fooled: fixed, each line is escaped to what the output can encode)"""
    bid = world.make(world.bob, "hello")
    shutil.copytree(world.wire / bid, drop / "bündel-\u202e")
    env = {**os.environ, "GAGE_HOME": str(world.me.root), "PYTHONIOENCODING": "ascii"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "watch", "--drop", str(drop), "--settle", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="ascii",
    )
    # Wait for the line after the import itself (a condition; a sleep is outlasted on a busy machine).
    said: list[str] = []
    arrived = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            said.append(line)
            if f"received {bid[:12]}" in line:
                arrived.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert until(lambda: listing.find(world.me, bid) is not None, timeout=120)
        arrived.wait(timeout=120)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        reader.join(timeout=120)
        assert proc.stderr is not None
        out, err = "".join(said), proc.stderr.read()
    no_traceback(err)
    assert proc.returncode == 0, err
    assert "could not import" not in err, err
    assert f"received {bid[:12]}" in out and "b\\xfcndel-\\u202e" in out, out
