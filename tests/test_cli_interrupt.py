"""Long work on the command line (issue 18): progress moves with the bytes, an interrupt stops
every copy at its next chunk, and an interrupted extract leaves nothing, not even its folder."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from gagetest import pair

from gage.bundle import making as bundle_build
from gage.bundle import progress
from gage.format.errors import TamperedError
from gage.home import listing
from gage.inbox import extract, gate, send, store


def test_bundling_progress_moves_with_the_bytes_not_file_by_file(make_home, tmp_path: Path, monkeypatch) -> None:
    me = make_home("me")
    monkeypatch.setattr(bundle_build, "CHUNK", 64 << 10)
    for name in ("a.bin", "b.bin"):
        (tmp_path / name).write_bytes(os.urandom(1 << 20))
    seen: list[int] = []
    with progress.reporting(lambda phase, done, total: seen.append(done)):
        send.create(me, [tmp_path / "a.bin", tmp_path / "b.bin"], kind="share")
    moving = [d for d in seen if 0 < d < 2 << 20]
    assert len(moving) > 4, seen  # many reports inside each file, not one per file
    assert seen == sorted(seen)


def test_a_failure_stops_the_other_copies_at_their_next_chunk(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(bundle_build, "CHUNK", 64 << 10)
    (tmp_path / "small").write_bytes(b"x" * (200 << 10))
    (tmp_path / "big").write_bytes(b"y" * (32 << 20))
    real_read = os.read

    def slow_read(fd: int, n: int) -> bytes:
        time.sleep(0.01)  # 512 chunks of the big file: about 5 s if it ran to the end
        return real_read(fd, n)

    monkeypatch.setattr(bundle_build.os, "read", slow_read)
    payload = tmp_path / "payload"
    payload.mkdir()
    start = time.monotonic()
    with pytest.raises(TamperedError):
        # "small" claims fewer bytes than it has: its copy fails after its first chunk.
        bundle_build._copy_all([("small", tmp_path / "small"), ("big", tmp_path / "big")], payload, {"small": 10, "big": 32 << 20})
    assert time.monotonic() - start < 2.5
    assert not (payload / "big").exists()


def test_an_interrupted_extract_leaves_no_folder_behind(make_home, tmp_path: Path, monkeypatch) -> None:
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    for n in range(3):
        (tmp_path / f"f{n}.txt").write_text(f"file {n}")
    m, dest = send.create(bob, [tmp_path / f"f{n}.txt" for n in range(3)], kind="share")
    store.import_bundle(me, dest)
    gate.accept(me, m.id)
    real = extract._copy_checked
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(extract, "_copy_checked", interrupted)
    out = tmp_path / "new" / "deeper"
    with pytest.raises(KeyboardInterrupt):
        extract.extract(me, listing.resolve(me, m.id), out)
    assert not (tmp_path / "new").exists()


def test_an_interrupt_while_hashing_stops_the_pool_at_its_next_chunk(tmp_path: Path, monkeypatch) -> None:
    """verify and import hash on a pool (gage/bundle/hash.py): Ctrl-C must not wait for whole files."""
    import hashlib
    from types import SimpleNamespace

    from gage.bundle import hash as bundle_hash
    from gage.bundle import safeopen

    monkeypatch.setattr(safeopen, "CHUNK", 64 << 10)
    size = 16 << 20
    paths = []
    for name in ("a", "b"):
        p = tmp_path / name
        p.write_bytes(b"q" * size)
        paths.append(p)
    real_read = os.read

    def slow_read(fd: int, n: int) -> bytes:
        time.sleep(0.01)  # 256 chunks a file: seconds if a file ran to its end
        return real_read(fd, n)

    monkeypatch.setattr(safeopen.os, "read", slow_read)
    digest = hashlib.sha256(b"q" * size).hexdigest()
    manifest = SimpleNamespace(files=[SimpleNamespace(size=size) for _ in paths])
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with bundle_hash.Hasher(manifest) as hasher:  # type: ignore[arg-type]
            for p in paths:
                hasher.submit(os.open(p, os.O_RDONLY), size, digest)
            time.sleep(0.2)
            raise KeyboardInterrupt
    assert time.monotonic() - start < 2.0
