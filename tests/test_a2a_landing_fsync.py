"""A bundle landed from A2A is fsynced once per file and once per folder (issue 11).

Landing lays the carried bytes out as a scratch folder and imports it; the import's copy
is what lands, and it fsyncs each file and folder once (as a new bundle's build does,
tests/test_bundle_limits.py). The scratch folder is removed either way, so syncing it as
well would sync every byte twice for nothing. Counted at os.fsync, by inode.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from gage.carriers.a2a import artifact, landing
from gage.carriers.a2a.reader import Carried
from gage.home.layout import Home
from gage.inbox import send

FILES = {"a.txt": b"a", "d/b.txt": b"b", "d/e/c.txt": b"c", "d/e/f.txt": b"f"}


def _inode(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_dev, st.st_ino


def test_a_landed_bundle_is_fsynced_once_per_file_and_folder_and_its_scratch_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = Home.init(tmp_path / "alice", "alice")
    bob = Home.init(tmp_path / "bob", "bob")
    src = tmp_path / "share"
    for rel, data in FILES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    m, out = send.create(alice, [src], kind="share")
    obj = artifact.export_artifact(out)

    synced: Counter[tuple[int, int]] = Counter()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced[(st.st_dev, st.st_ino)] += 1
        real_fsync(fd)

    scratch: set[tuple[int, int]] = set()
    real_write = landing._write

    def write(root: Path, c: Carried) -> None:
        real_write(root, c)
        # Every file and folder of the scratch copy, while it exists (it is removed after the import).
        for dirpath, dirnames, filenames in os.walk(root):
            scratch.update(_inode(Path(dirpath) / n) for n in [*dirnames, *filenames])
        scratch.add(_inode(root))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(landing, "_write", write)
    [landed] = artifact.receive(bob, obj)

    assert landed.new and landed.ok and landed.id == m.id
    dest = bob.state_dir("pending") / m.id
    every = [dest, dest / "manifest.json", dest / "manifest.sig", dest / "payload"]
    every += [dest / "payload/share", dest / "payload/share/d", dest / "payload/share/d/e"]
    every += [dest / "payload/share" / rel for rel in FILES]
    assert {p: synced[_inode(p)] for p in every} == {p: 1 for p in every}  # each once: none missed, none twice
    assert len(scratch) == len(every)  # the scratch copy was seen whole
    assert not {k: n for k, n in synced.items() if k in scratch}, "the scratch copy, removed after the import, was fsynced"
