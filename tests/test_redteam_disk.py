"""Red team, issue 9 class 6: filling the disk through a copy.

No copy ever reads or writes more than the manifest declares. The attack that opened the
class: a payload file declared as 1 byte that is a sparse 128 MiB file on disk (costing the
sender nothing) was copied whole into the home by `import` (and by the watcher), as 128 MiB
of real blocks. The siblings: a file that grows while it is copied or hashed, an oversized
signature file, a file that grows between the check and the copy of a forward, and the copy
of a bundle out to a transport folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)
from test_watch import Clock

from gage import bundle as bundle_mod
from gage.bundle import PAYLOAD, SIGNATURE, safeopen
from gage.carriers.watch import Watcher
from gage.format.errors import GageError
from gage.home import listing
from gage.inbox import gate, send, store

BIG = 128 << 20


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every byte gage reads through os.read (each copy and hash streams through it), counted."""
    counted: list[int] = []
    real = os.read

    def read(fd: int, n: int) -> bytes:
        data = real(fd, n)
        counted.append(len(data))
        return data

    monkeypatch.setattr(os, "read", read)
    yield counted


def sparse(path: Path, size: int = BIG, head: bytes = b"x") -> None:
    """`head`, then a hole: `size` bytes as far as stat and read can tell, almost no disk."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_sparse_file_far_past_its_declared_size_is_never_copied(world: World, tmp_path: Path, reads: list[int]) -> None:
    """Attacker replaces a 1-byte payload file by a sparse 128 MiB one, hoping `import` writes
    128 MiB of real blocks into the receiver's home. (was fooled: fixed, a file longer than
    declared is never read, and no copy reads past the declared size)"""
    bid = world.make(world.bob, "x")  # note.txt: 1 byte
    src = tmp_path / "t" / bid
    shutil.copytree(world.wire / bid, src)
    sparse(src / PAYLOAD / "note.txt")
    res = store.import_bundle(world.me, src)
    assert sum(reads) < 1 << 20, sum(reads)
    held = listing.find(world.me, bid)
    assert held is not None and tree_bytes(held.path) < 16384  # a hybrid bundle: a 3984-character key in the manifest and a 3373-byte signature
    assert not (held.path / PAYLOAD / "note.txt").exists()
    assert res.check is not None and [str(p) for p in res.check.problems] == ["payload/note.txt: is listed in the manifest but missing"]


def test_the_watcher_does_not_fill_the_disk_either(world: World, tmp_path: Path, reads: list[int]) -> None:
    """The same file dropped into a watched folder: it waits, settles, and arrives invalid,
    without a byte past the declared size read or written."""
    drop = tmp_path / "drop"
    drop.mkdir()
    bid = world.make(world.bob, "x")
    shutil.copytree(world.wire / bid, drop / bid)
    sparse(drop / bid / PAYLOAD / "note.txt")
    clock = Clock()
    w = Watcher(world.me, [drop], settle=1.0, clock=clock)
    assert [e.kind for e in w.scan()] == ["waiting"]
    clock.t += 2
    assert [e.kind for e in w.scan()] == ["imported"]
    assert sum(reads) < 1 << 20, sum(reads)
    assert tree_bytes(listing.find(world.me, bid).path) < 16384  # a hybrid bundle: a 3984-character key in the manifest and a 3373-byte signature


def test_a_file_that_grows_while_it_is_copied_is_cut_off(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attacker appends to a payload file while the import copies it (it had the declared size
    when opened), hoping the copy follows it. The copy reads at most one byte past the
    declared size, writes none of it, and leaves the file out."""
    bid = world.make(world.bob, "y" * 3000)
    src = tmp_path / "t" / bid
    shutil.copytree(world.wire / bid, src)
    target = src / PAYLOAD / "note.txt"
    real = os.read
    total = {"n": 0}

    def read(fd: int, n: int) -> bytes:
        st = os.fstat(fd)
        if st.st_ino == target.stat().st_ino and st.st_size == 3000:
            with open(target, "ab") as f:  # grows by 64 MiB (a hole) the moment gage reads it
                f.truncate(3000 + (64 << 20))
        data = real(fd, n)
        if st.st_ino == target.stat().st_ino:
            total["n"] += len(data)
        return data

    monkeypatch.setattr(os, "read", read)
    store.import_bundle(world.me, src)
    monkeypatch.undo()
    assert total["n"] <= 3001, total
    held = listing.find(world.me, bid)
    assert held is not None and not (held.path / PAYLOAD / "note.txt").exists()
    assert not list(world.me.staging.glob("import-*"))


def test_a_check_never_hashes_past_the_declared_size(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[int]) -> None:
    """Attacker grows a file between the check's look at it (right size: the fstat of the open
    file) and its hash, hoping the hash streams all of it. It reads one byte past the declared
    size and calls it changed."""
    bid = world.make(world.bob, "z" * 100)
    src = tmp_path / "t" / bid
    shutil.copytree(world.wire / bid, src)
    target = src / PAYLOAD / "note.txt"
    real_open = safeopen.open_at

    def grow_then_open(dir_fd: int, name: str):  # type: ignore[no-untyped-def]
        opened = real_open(dir_fd, name)
        if name == target.name:  # after the open and its fstat, before the read
            with open(target, "ab") as f:
                f.truncate(BIG)
        return opened

    monkeypatch.setattr(safeopen, "open_at", grow_then_open)
    c = bundle_mod.check(src)
    assert sum(reads) < 1 << 20, sum(reads)
    assert [str(p) for p in c.problems] == ["payload/note.txt: content does not match its SHA-256 in the manifest"]


def test_an_oversized_signature_file_is_not_copied(world: World, tmp_path: Path, reads: list[int]) -> None:
    """Attacker makes manifest.sig a 1 MiB file (the copy read up to the manifest's cap for it).
    A signature is 64 bytes: the copy reads no more than its cap (256), and leaves it out."""
    bid = world.make(world.bob, "s")
    src = tmp_path / "t" / bid
    shutil.copytree(world.wire / bid, src)
    (src / SIGNATURE).write_bytes(b"\x00" * (1 << 20))
    res = store.import_bundle(world.me, src)
    assert sum(reads) < 64 << 10, sum(reads)
    held = listing.find(world.me, bid)
    assert held is not None and not (held.path / SIGNATURE).exists()
    assert res.check is not None and {p.stage for p in res.check.problems} == {"signature"}


def test_forward_never_copies_past_the_size_it_checked(world: World, monkeypatch: pytest.MonkeyPatch, reads: list[int]) -> None:
    """Attacker (a racing writer in the home) grows an accepted bundle's file just after
    `forward` checked it, hoping the new bundle copies 128 MiB. The copy stops one byte past
    the checked size and the forward is refused; nothing is written to the outbox."""
    bid = world.pending_from(world.bob, "forward me")
    gate.accept(world.me, bid)
    target = world.me.state_dir("accepted") / bid / PAYLOAD / "note.txt"
    real_check = send.bundle_mod.check

    def check_then_grow(path: Path, **kw: bool):  # type: ignore[no-untyped-def]
        out = real_check(path, **kw)
        if path == target.parent.parent:
            with open(target, "ab") as f:
                f.truncate(BIG)
        return out

    monkeypatch.setattr(send.bundle_mod, "check", check_then_grow)
    before = set(os.listdir(world.me.state_dir("outbox")))
    with pytest.raises(GageError):
        send.forward(world.me, bid, to=["bob"])
    assert sum(reads) < 1 << 20, sum(reads)
    assert set(os.listdir(world.me.state_dir("outbox"))) == before
    assert not list(world.me.staging.glob("build-*"))


def test_copy_to_a_transport_folder_copies_only_the_bundle(world: World, tmp_path: Path, reads: list[int]) -> None:
    """`bundle -o` / `forward --copy-to` copied the outbox folder as a tree: anything else in it,
    and a sparse file in full. It copies the listed files only, each no longer than declared."""
    m, dest = send.create(world.me, [world._file("out")], kind="share")
    (dest / PAYLOAD / "stray").write_bytes(b"not part of it")
    sparse(dest / PAYLOAD / "note.txt", head=b"out")  # the file "grew" in the outbox
    out = send.copy_out(dest, tmp_path / "transport")
    assert sum(reads) < 1 << 20, sum(reads)
    assert sorted(os.listdir(out / PAYLOAD)) == []  # the stray file left behind, the sparse one not copied
    assert tree_bytes(out) < 16384  # a hybrid bundle: a 3984-character key in the manifest and a 3373-byte signature
