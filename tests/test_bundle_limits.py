"""Bundling at scale (issue 13): the manifest limit and the file-count limit agree, a bundle too
big for its manifest is refused before anything is copied, each file is fsynced once, and a
check that hashes on several threads reports exactly what a one-thread check reports."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import unicodedata
from pathlib import Path

import nacl.signing
import pytest
from gagetest import Run

from gage import bundle as bundle_mod
from gage.bundle import hash as bundle_hash
from gage.bundle import making as bundle_build
from gage.bundle import progress
from gage.format import manifest, manifest_files, strictjson
from gage.format.errors import Exit, MalformedError
from gage.format.keys import Identity
from gage.format.manifest import (
    MANIFEST_LIMIT,
    MAX_FILES,
    FileEntry,
    Manifest,
    ManifestTooLargeError,
    Party,
    check_fits,
)
from gage.home.layout import Home

ALICE = Identity(name="alice", signing_key=nacl.signing.SigningKey(hashlib.sha256(b"limits alice").digest()))


def realistic_path(i: int) -> str:
    """A path like those in a real source tree: about 60 bytes."""
    return f"project-name/src/package_{i // 1000:02d}/module_{i // 50 % 20:02d}/source_file_{i:05d}.py"


def test_ten_thousand_files_with_realistic_paths_fit_the_manifest_limit() -> None:
    files = [(realistic_path(i), 123_456_789) for i in range(MAX_FILES)]
    size = check_fits(files, kind="share", sender=Party(key=ALICE.key, name=ALICE.name), subject="x" * 1000)
    assert size <= MANIFEST_LIMIT
    # And the real thing parses: 10,000 entries with paths of 300 bytes (the limit says these fit).
    long = [FileEntry(path=f"{'d' * 200}/{i:05d}-{'f' * 93}", size=10**9, sha256="ab" * 32) for i in range(MAX_FILES)]
    assert {len(e.path) for e in long} == {300}
    m = Manifest.build(kind="share", sender=Party(key=ALICE.key, name="alice"), files=long, nonce="00" * 16)
    assert len(m.files) == MAX_FILES and len(m.raw) <= MANIFEST_LIMIT


def test_more_files_than_the_limit_is_refused_by_name() -> None:
    with pytest.raises(ManifestTooLargeError) as info:
        check_fits([(f"f{i}", 1) for i in range(MAX_FILES + 1)], kind="share", sender=Party(key=ALICE.key, name="a"))
    assert f"at most {MAX_FILES}" in info.value.message and info.value.exit_code == Exit.USAGE


def _tree(root: Path, n: int) -> Path:
    src = root / "many"
    for i in range(n):
        p = src / realistic_path(i)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    return src


def test_gage_bundle_refuses_a_manifest_over_the_limit_before_copying_anything(
    gage: object, make_home: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home: Home = make_home("alice")  # type: ignore[operator]
    src = _tree(tmp_path, 120)  # about 15 KiB of manifest
    monkeypatch.setattr(manifest, "MANIFEST_LIMIT", 8192)
    copied: list[Path] = []
    real = bundle_build._copy_hashing
    monkeypatch.setattr(bundle_build, "_copy_hashing", lambda s, d, **kw: copied.append(s) or real(s, d, **kw))
    r: Run = gage(home, "bundle", "--kind", "share", str(src))  # type: ignore[operator]
    assert r.code == Exit.USAGE == 2
    assert "over the limit of 8192 bytes" in r.err and "120 files" in r.err and "nothing was copied" in r.err
    assert copied == []
    assert os.listdir(home.state_dir("outbox")) == [] and os.listdir(home.staging) == []


def test_gage_bundle_refuses_too_many_files_before_copying(gage: object, make_home: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home: Home = make_home("alice")  # type: ignore[operator]
    src = _tree(tmp_path, 6)
    monkeypatch.setattr(manifest, "MAX_FILES", 5)
    r: Run = gage(home, "bundle", "--kind", "share", str(src))  # type: ignore[operator]
    assert r.code == Exit.USAGE and "at most 5" in r.err
    assert os.listdir(home.state_dir("outbox")) == [] and os.listdir(home.staging) == []


def test_each_file_and_folder_of_a_new_bundle_is_fsynced_exactly_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    files = {"a.txt": b"a", "d/b.txt": b"b", "d/e/c.txt": b"c", "d/e/f.txt": b"f"}
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    synced: list[tuple[int, int]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced.append((st.st_dev, st.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    work, _m = bundle_mod.build(ALICE, [(rel, src / rel) for rel in files], staging=tmp_path / "staging", kind="share")
    every = [work, work / "manifest.json", work / "manifest.sig", work / "payload", work / "payload/d", work / "payload/d/e"]
    every += [work / "payload" / rel for rel in files]
    want = sorted((p.stat().st_dev, p.stat().st_ino) for p in every)
    assert sorted(synced) == want  # each once: none missed, none twice


def _bundle_with_big_files(tmp_path: Path, n: int, size: int) -> Path:
    src = tmp_path / "src"
    pairs = []
    for i in range(n):
        p = src / f"dir{i % 3}" / f"f{i}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(bytes([i]) * size)
        pairs.append((f"dir{i % 3}/f{i}.bin", p))
    work, m = bundle_mod.build(ALICE, pairs, staging=tmp_path / "staging", kind="share")
    root = tmp_path / m.id
    work.rename(root)
    return root


def test_a_check_on_several_threads_reports_what_a_one_thread_check_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _bundle_with_big_files(tmp_path, 9, 3000)
    pay = root / "payload"
    (pay / "dir0/f0.bin").write_bytes(b"\x00" * 2999 + b"\x01")  # same size, other content
    (pay / "dir1/f4.bin").write_bytes(b"short")
    (pay / "dir2/f8.bin").unlink()
    (pay / "dir2/f8.bin").mkdir()
    (pay / "dir1/f7.bin").write_bytes(b"\x07" * 2999 + b"\x00")
    (pay / "dir2/extra").write_bytes(b"x")
    monkeypatch.setattr(bundle_hash, "PARALLEL_MIN", 1 << 40)
    one = [str(p) for p in bundle_mod.check(root).problems]
    monkeypatch.setattr(bundle_hash, "PARALLEL_MIN", 1)
    seen: list[int] = []
    with progress.reporting(lambda phase, done, total: seen.append(done)):
        many = bundle_mod.check(root)
    assert [str(p) for p in many.problems] == one
    assert one == [
        "payload/dir0/f0.bin: content does not match its SHA-256 in the manifest",
        "payload/dir1/f4.bin: is 5 bytes; the manifest says 3000",
        "payload/dir1/f7.bin: content does not match its SHA-256 in the manifest",
        "payload/dir2/f8.bin: is a folder; the manifest lists a file here",  # listed names first in each folder
        "payload/dir2/extra: is not in the manifest",
    ]
    assert seen and max(seen) == 7 * 3000  # the pool's bytes reach the listener too


def test_a_pool_check_of_a_good_bundle_is_ok_and_closes_every_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _bundle_with_big_files(tmp_path, 12, 5000)
    monkeypatch.setattr(bundle_hash, "PARALLEL_MIN", 1)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    assert bundle_mod.check(root, expect_name=True).ok
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
    shutil.rmtree(root)


def test_the_fast_path_for_plain_ascii_paths_accepts_only_what_the_rules_accept(monkeypatch: pytest.MonkeyPatch) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rnd = random.Random(seed)
    alphabet = "aZ09./\\: -_~[]\x00\x1f\x7f"
    never = re.compile(r"(?!)")
    for _ in range(20_000):
        p = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 10)))
        fast = bool(manifest_files._plain_ascii_path().fullmatch(p))
        with monkeypatch.context() as m:
            m.setattr(manifest_files, "_plain_ascii_path", lambda: never)
            try:
                manifest_files.check_path(p, "x")
                slow = True
            except MalformedError:
                slow = False
        assert fast <= slow, repr(p)  # never accepts what a rule refuses
        assert manifest_files.fold_path(p) == unicodedata.normalize("NFD", unicodedata.normalize("NFD", p).casefold())


@pytest.mark.parametrize(
    "text",
    ['{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', "[" * 32 + "]" * 32, "[" * 33 + "]" * 33, '[{"k":"]]]\\"[["}]', '["\\\\ud800"]'],
)
def test_the_depth_rule_without_a_walk_gives_the_walks_verdict(text: str) -> None:
    value = strictjson.json.loads(text)
    try:
        strictjson._check_strings(value)
        walk = None
    except MalformedError as exc:
        walk = exc.message
    try:
        strictjson._check_depth(text)
        fast = None
    except MalformedError as exc:
        fast = exc.message
    assert fast == walk
