"""Issue 19 item 14: landed payload files are read-only, the cache runs only where timestamps are
kept, and everything that later moves or removes a landed bundle still works."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from gagetest import arrive

from gage.bundle import fstrust, readonly
from gage.home import listing
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.inbox import gate, reconcile, send
from gage.inbox.extract import extract


def _landed(make_home: Callable[[str], Home], tmp_path: Path) -> tuple[Home, listing.Stored]:
    alice, bob = make_home("alice"), make_home("bob")
    src = tmp_path / "src"
    (src / "deep" / "er").mkdir(parents=True)
    (src / "deep" / "er" / "n.txt").write_text("nested\n")
    (src / "top.txt").write_text("top\n")
    _m, out = send.create(alice, [src], kind="share")
    res = arrive(bob, out)
    stored = listing.find(bob, res.id)
    assert stored is not None
    return bob, stored


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_a_landed_bundle_is_read_only(make_home, tmp_path: Path) -> None:
    bob, stored = _landed(make_home, tmp_path)
    payload = stored.path / "payload"
    files = [p for p in payload.rglob("*") if p.is_file()]
    folders = [payload, *(p for p in payload.rglob("*") if p.is_dir())]
    assert files and all(_mode(p) == 0o444 for p in files)
    assert all(_mode(p) == 0o555 for p in folders)
    assert _mode(stored.path / "manifest.json") == 0o444 and _mode(stored.path / "manifest.sig") == 0o444
    assert _mode(stored.path) & stat.S_IWUSR  # the bundle folder itself can still be moved
    assert listing.find(bob, stored.id) is not None


def test_accept_reject_and_reconcile_still_move_and_remove_it(make_home, tmp_path: Path) -> None:
    bob, stored = _landed(make_home, tmp_path)
    gate.reject(bob, stored.id, why="test")
    assert listing.find(bob, stored.id).state == "rejected"  # type: ignore[union-attr]
    # A redundant copy (as a crash between copy and rename leaves one) is removed, read-only or not.
    copy = bob.staging / "import-0000aaaa"
    copy.mkdir(parents=True)
    (copy / "b").mkdir()
    (copy / "b" / "f").write_text("x")
    os.chmod(copy / "b" / "f", 0o444)
    os.chmod(copy / "b", 0o555)
    old = 1_000_000_000
    os.utime(copy, (old, old))
    notes = reconcile.reconcile(bob)
    assert not copy.exists() and any("import-0000aaaa" in n for n in notes)


def test_remove_tree_empties_read_only_folders_and_follows_no_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    os.chmod(outside, 0o555)
    tree = tmp_path / "t"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f").write_text("x")
    os.symlink(outside, tree / "a" / "link")
    for p in (tree / "a" / "b", tree / "a"):
        os.chmod(p, 0o555)
    readonly.remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep").exists() and _mode(outside) == 0o555  # what the link pointed to is untouched
    os.chmod(outside, 0o755)


def test_extract_writes_files_that_can_be_edited(make_home, tmp_path: Path) -> None:
    bob, stored = _landed(make_home, tmp_path)
    gate.accept(bob, stored.id, unverified=True)
    dest = tmp_path / "out"
    written = extract(bob, listing.find(bob, stored.id), dest)  # type: ignore[arg-type]
    assert written and all(_mode(p) & stat.S_IWUSR for p in written)
    assert all(_mode(p) & stat.S_IWUSR for p in dest.rglob("*") if p.is_dir())


def test_fs_type_comes_from_the_longest_mount_point(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:40 / /mnt/nfs\\040share rw - nfs4 server:/x rw\n"
        "41 22 0:41 / /mnt/usb rw - vfat /dev/sdb1 rw\n"
    )
    assert fstrust.fs_type(Path("/mnt/nfs share/home"), mountinfo=str(info)) == "nfs4"
    assert fstrust.fs_type(Path("/mnt/usb"), mountinfo=str(info)) == "vfat"
    assert fstrust.fs_type(Path("/home/x"), mountinfo=str(info)) == "ext4"
    assert "nfs4" not in fstrust.TRUSTED and "vfat" not in fstrust.TRUSTED and "ext4" in fstrust.TRUSTED


def test_the_cache_is_not_used_where_timestamps_are_not_trusted(make_home, tmp_path: Path, monkeypatch) -> None:
    bob, stored = _landed(make_home, tmp_path)
    monkeypatch.setattr(fstrust, "timestamps_trusted", lambda path: False)
    cache = CheckCache.of(bob)
    cache.check(stored)
    cache.check(stored)
    cache.save()
    assert cache.hits == 0 and cache.misses == 2
    saved = bob.cache / "checks.json"
    assert not saved.exists() or str(stored.path).encode() not in saved.read_bytes()
