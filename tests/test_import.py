"""Importing bundles into inbox/pending: atomic, idempotent, never consent, and nothing half-done.

The interruption tests break a real import part-way (an exception in the copy, and a
real process killed with SIGKILL) and then look at the home: a half-copied bundle must
never be visible under its final name.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gage import bundle as bundle_mod
from gage.bundle import making as bundle_build
from gage.format.errors import GageIOError, MalformedError, RefusedError
from gage.format.manifest import FileEntry, Manifest, Party
from gage.home.layout import Home
from gage.inbox import send, store


def _bundle_from(home: Home, tmp_path: Path, files: dict[str, bytes], subject: str = "hi") -> Path:
    src = tmp_path / f"src-{len(list(tmp_path.iterdir()))}"
    src.mkdir()
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    manifest, dest = send.create(home, [src / rel.split("/")[0] for rel in sorted({f.split("/")[0] for f in files})], kind="share", subject=subject)
    assert dest.name == manifest.id
    return dest


def _pending(home: Home) -> list[str]:
    return sorted(os.listdir(home.state_dir("pending")))


def _staging_left(home: Home) -> list[str]:
    return sorted(os.listdir(home.staging)) if home.staging.exists() else []


def test_import_copies_into_pending(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"a.txt": b"alpha\n", "dir/b.txt": b"beta\n"})
    res = store.import_bundle(alice, src)
    assert res.new and res.state == "pending" and res.id == src.name
    dest = alice.state_dir("pending") / res.id
    assert dest.is_dir()
    assert (dest / "payload/a.txt").read_bytes() == b"alpha\n"
    assert (dest / "payload/dir/b.txt").read_bytes() == b"beta\n"
    assert (dest / "manifest.json").read_bytes() == (src / "manifest.json").read_bytes()
    assert bundle_mod.check(dest, expect_name=True).ok
    # Arrival is not consent.
    assert os.listdir(alice.state_dir("accepted")) == []
    assert os.listdir(alice.state_dir("rejected")) == []
    events = [e for e in alice.journal.entries() if e.get("bundle") == res.id]
    assert [e["event"] for e in events] == ["imported"]
    assert events[0]["ok"] is True
    assert _staging_left(alice) == []
    # The source is untouched.
    assert bundle_mod.check(src, expect_name=True).ok


def test_import_from_a_folder_not_named_by_id(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"a.txt": b"x"})
    renamed = tmp_path / "from-bob"
    send.copy_out(src, tmp_path / "t")
    (tmp_path / "t" / src.name).rename(renamed)
    res = store.import_bundle(alice, renamed)
    assert _pending(alice) == [src.name] == [res.id]


def test_same_bundle_twice_is_already_there(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"a.txt": b"x"})
    first = store.import_bundle(alice, src)
    second = store.import_bundle(alice, src)
    assert first.new and not second.new
    assert second.id == first.id and second.state == "pending"
    assert _pending(alice) == [first.id]
    again = [e for e in alice.journal.entries() if e.get("bundle") == first.id]
    assert [e.get("again", False) for e in again] == [False, True]
    assert _staging_left(alice) == []


def test_left_behind_files_are_reported_and_not_copied(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"a.txt": b"x"})
    (src / "payload/sneaky.sh").write_text("rm -rf ~")
    (src / "NOTES").write_text("n")
    res = store.import_bundle(alice, src)
    assert res.left_behind == ["NOTES", "payload/sneaky.sh"]
    dest = alice.state_dir("pending") / res.id
    assert not (dest / "payload/sneaky.sh").exists() and not (dest / "NOTES").exists()
    assert bundle_mod.check(dest, expect_name=True).ok


def test_tampered_bundle_arrives_but_is_flagged(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """A bundle that fails its checks still lands in pending, so its verdict can say invalid."""
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"a.txt": b"original"})
    (src / "payload/a.txt").write_bytes(b"tampered")
    res = store.import_bundle(alice, src)
    assert res.new and res.check is not None and not res.check.ok
    assert {p.stage for p in res.check.problems} == {"tampered"}
    assert os.listdir(alice.state_dir("accepted")) == []


def test_not_a_bundle_is_refused(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    alice = make_home("alice")
    folder = tmp_path / "holiday-photos"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(MalformedError, match="not a gage bundle"):
        store.import_bundle(alice, folder)
    assert _pending(alice) == [] and _staging_left(alice) == []


def test_symlink_to_a_bundle_is_refused(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"a.txt": b"x"})
    (tmp_path / "link").symlink_to(src, target_is_directory=True)
    with pytest.raises(RefusedError):
        store.import_bundle(alice, tmp_path / "link")
    assert _pending(alice) == []


def test_id_comes_from_the_copied_bytes(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the source changes between the first read and the copy, the id is that of what was copied."""
    alice, bob = make_home("alice"), make_home("bob")
    first = _bundle_from(bob, tmp_path, {"a.txt": b"one"}, subject="first")
    second = _bundle_from(bob, tmp_path, {"a.txt": b"two"}, subject="second")
    real_copy = bundle_mod.copy_bundle

    def swap_then_copy(src: Path, manifest: Manifest, dst: Path, **kw: bool) -> list[str]:
        for name in ("manifest.json", "manifest.sig"):
            (src / name).write_bytes((second / name).read_bytes())
        (src / "payload/a.txt").write_bytes(b"two")
        return real_copy(src, manifest, dst, **kw)

    monkeypatch.setattr(bundle_mod, "copy_bundle", swap_then_copy)
    res = store.import_bundle(alice, first)
    assert res.id == second.name != first.name
    assert _pending(alice) == [second.name]
    assert bundle_mod.check(alice.state_dir("pending") / res.id, expect_name=True).ok


@pytest.mark.parametrize("failure", ["io-error", "crash"])
def test_interrupted_import_leaves_nothing_under_the_final_name(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """The copy fails after the first payload file: no entry in pending, no journal line, staging cleaned."""
    alice, bob = make_home("alice"), make_home("bob")
    src = _bundle_from(bob, tmp_path, {"d/a.txt": b"a" * 1000, "d/b.txt": b"b" * 1000, "d/c.txt": b"c" * 1000})
    real = bundle_build._copy_hashing
    calls = []

    def failing(s: Path, d: Path, *, fd: int | None = None, limit: int | None = None, sync: bool = True) -> FileEntry:
        calls.append(s)
        if len(calls) == 2:
            if fd is not None:
                os.close(fd)
            if failure == "io-error":
                raise OSError(errno.EIO, "Input/output error")
            raise RuntimeError("power cut")
        return real(s, d, fd=fd, limit=limit, sync=sync)

    monkeypatch.setattr(bundle_build, "_copy_hashing", failing)
    expected = GageIOError if failure == "io-error" else RuntimeError
    with pytest.raises(expected):
        store.import_bundle(alice, src)
    assert len(calls) == 2
    assert _pending(alice) == []
    assert _staging_left(alice) == []
    assert not [e for e in alice.journal.entries() if e.get("bundle") == src.name]
    # And once the fault is gone, the same bundle imports whole.
    monkeypatch.setattr(bundle_build, "_copy_hashing", real)
    res = store.import_bundle(alice, src)
    assert res.new and bundle_mod.check(alice.state_dir("pending") / res.id, expect_name=True).ok


def test_killed_import_leaves_nothing_under_the_final_name(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """A real `gage import` process killed with SIGKILL while it copies a big file."""
    alice, bob = make_home("alice"), make_home("bob")
    size = 1 << 30
    src = tmp_path / "big-bundle"
    (src / "payload").mkdir(parents=True)
    with open(src / "payload/big.bin", "wb") as f:
        f.truncate(size)  # sparse: reading it is fast, but the copy writes real blocks
    # The digest is not the file's: import copies whatever a bundle holds (the verdict judges
    # it later), and this spares the test hashing a gigabyte. The kill comes long before.
    m = Manifest.build(
        kind="share",
        sender=Party(key=bob.identity.key, name="bob"),
        files=[FileEntry(path="big.bin", size=size, sha256="0" * 64)],
        nonce="1" * 32,
    )
    (src / "manifest.json").write_bytes(m.raw)
    (src / "manifest.sig").write_bytes(bob.identity.sign(m.raw))

    env = dict(os.environ, GAGE_HOME=str(alice.root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "import", str(src)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        copying = False
        while time.monotonic() < deadline and proc.poll() is None:
            partial = list(alice.staging.glob("import-*/*/payload/big.bin"))
            if partial and partial[0].stat().st_size > 0:
                copying = True
                break
            time.sleep(0.005)
        assert copying, "the import never started copying (or finished before it could be killed)"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (alice.state_dir("pending") / m.id).exists()
    assert _pending(alice) == []
    assert not [e for e in alice.journal.entries() if e.get("bundle") == m.id]
    # The leftover is in the home's own scratch space, not anywhere a reader looks.
    leftovers = _staging_left(alice)
    assert all(name.startswith("import-") for name in leftovers)
    for name in leftovers:
        import shutil

        shutil.rmtree(alice.staging / name)
    # The lock died with the process: the home still works.
    small = _bundle_from(bob, tmp_path, {"a.txt": b"x"})
    assert store.import_bundle(alice, small).new
