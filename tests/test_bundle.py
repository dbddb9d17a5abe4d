"""Bundles on disk: made, then checked; every change to any byte is caught and named by stage.

These tests change real files in a real bundle directory and run the real check, so a
regression in any stage (parsing, signature, hashing, the directory walk) fails here.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import nacl.signing
import pytest

from gage import bundle as bundle_mod
from gage.format import strictjson
from gage.format.errors import (
    BadSignatureError,
    MalformedError,
    TamperedError,
    UsageError,
)
from gage.format.keys import Identity
from gage.format.manifest import FileEntry, Manifest, Party, bundle_id

FILES = {
    "hello.txt": b"hello, bob\n",
    "docs/notes.md": b"# Notes\n\nsecond line\n",
    "docs/data.bin": bytes(range(0, 256, 7)),
}


@pytest.fixture
def alice() -> Identity:
    return Identity(name="alice", signing_key=nacl.signing.SigningKey(b"\x11" * 32))


@pytest.fixture
def make_bundle(tmp_path: Path, alice: Identity) -> Callable[..., Path]:
    """Build a bundle with gage's own builder and place it under a folder named by its id."""
    counter = iter(range(1000))

    def make(files: dict[str, bytes] | None = None, *, kind: str = "share", name: str | None = None) -> Path:
        n = next(counter)
        src = tmp_path / f"src{n}"
        pairs = []
        for rel, data in (FILES if files is None else files).items():
            p = src / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            pairs.append((rel, p))
        work, manifest = bundle_mod.build(alice, pairs, staging=tmp_path / "staging", kind=kind)
        dest = tmp_path / f"bundles{n}" / (name or manifest.id)
        dest.parent.mkdir()
        work.rename(dest)
        return dest

    return make


def stages(result: bundle_mod.Check) -> set[str]:
    return {p.stage for p in result.problems}


def flips(path: Path, masks: tuple[int, ...]) -> Iterator[tuple[int, int]]:
    """Flip one bit at a time at every byte position of `path`, restoring the file after each."""
    original = path.read_bytes()
    try:
        for pos in range(len(original)):
            for mask in masks:
                changed = bytearray(original)
                changed[pos] ^= mask
                path.write_bytes(bytes(changed))
                yield pos, mask
    finally:
        path.write_bytes(original)


def test_create_then_verify(make_bundle: Callable[..., Path], alice: Identity) -> None:
    root = make_bundle()
    result = bundle_mod.verify(root, expect_name=True)
    assert result.ok and result.warnings == []
    m = result.manifest
    assert m is not None
    raw = (root / "manifest.json").read_bytes()
    assert m.raw == raw
    assert root.name == m.id == hashlib.sha256(b"gage/id/v1\x00" + raw).hexdigest()
    assert sorted(os.listdir(root)) == ["manifest.json", "manifest.sig", "payload"]
    sig = (root / "manifest.sig").read_bytes()
    assert len(sig) == 64
    nacl.signing.VerifyKey(alice.key).verify(b"gage/manifest/v1\x00" + raw, sig)
    assert m.sender.key == alice.key and m.sender.name == "alice"
    assert {f.path: (f.size, f.sha256) for f in m.files} == {
        rel: (len(data), hashlib.sha256(data).hexdigest()) for rel, data in FILES.items()
    }
    # The writer's form: sorted keys, no spaces, the same bytes if serialised again.
    assert strictjson.dumps(strictjson.loads(raw, limit=1 << 20)) == raw


@pytest.mark.slow  # exhaustive: CI runs it, the edit loop may skip it (-m "not slow")
def test_every_bit_of_the_manifest_is_covered(make_bundle: Callable[..., Path]) -> None:
    """Any change to the manifest is caught before the payload is trusted: malformed or signature."""
    root = make_bundle()
    path = root / "manifest.json"
    count = 0
    for pos, mask in flips(path, (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)):
        result = bundle_mod.check(root, expect_name=True)
        assert not result.ok, f"flip {mask:#x} at byte {pos} not caught"
        first = result.first_error()
        assert first is not None and first.stage in ("malformed", "signature"), (pos, mask, result.problems)
        if first.stage == "malformed":
            assert first.path == "manifest.json"
        else:
            assert first.path == "manifest.sig"
        count += 1
    assert count == 8 * len(path.read_bytes())
    assert bundle_mod.check(root, expect_name=True).ok


@pytest.mark.slow  # exhaustive: CI runs it, the edit loop may skip it (-m "not slow")
def test_every_bit_of_the_signature_is_covered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    path = root / "manifest.sig"
    for pos, mask in flips(path, (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)):
        result = bundle_mod.check(root, expect_name=True)
        assert stages(result) == {"signature"}, (pos, mask, result.problems)
        assert [p.path for p in result.problems] == ["manifest.sig"]
        with pytest.raises(BadSignatureError):
            bundle_mod.verify(root, expect_name=True)
    assert bundle_mod.check(root, expect_name=True).ok


@pytest.mark.parametrize("rel", sorted(FILES))
def test_every_byte_of_each_payload_file_is_covered(make_bundle: Callable[..., Path], rel: str) -> None:
    root = make_bundle()
    path = root / "payload" / rel
    for pos, mask in flips(path, (0x01, 0x80)):
        result = bundle_mod.check(root, expect_name=True)
        assert stages(result) == {"tampered"}, (pos, mask, result.problems)
        assert [p.path for p in result.problems] == [f"payload/{rel}"]
        assert "SHA-256" in result.problems[0].message
        with pytest.raises(TamperedError):
            bundle_mod.verify(root, expect_name=True)
    assert bundle_mod.check(root, expect_name=True).ok


def test_payload_size_change_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    for data in (b"", FILES["hello.txt"][:-1], FILES["hello.txt"] + b"x"):
        (root / "payload/hello.txt").write_bytes(data)
        result = bundle_mod.check(root)
        assert stages(result) == {"tampered"}
        assert result.problems[0].path == "payload/hello.txt"


@pytest.mark.parametrize("length", [*range(0, 64), 65, 96, 128, 256, 257, 1024, 4096])
def test_wrong_length_signature_is_a_bad_signature_not_a_crash(make_bundle: Callable[..., Path], length: int) -> None:
    """PyNaCl raises ValueError for these lengths; gage must report a bad signature instead."""
    root = make_bundle()
    sig = (root / "manifest.sig").read_bytes()
    (root / "manifest.sig").write_bytes((sig * 100)[:length])
    result = bundle_mod.check(root, expect_name=True)
    assert stages(result) == {"signature"}, result.problems
    assert result.problems[0].path == "manifest.sig"
    with pytest.raises(BadSignatureError):
        bundle_mod.verify(root, expect_name=True)


def test_missing_signature(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "manifest.sig").unlink()
    result = bundle_mod.check(root, expect_name=True)
    assert stages(result) == {"signature"}
    assert result.problems[0].path == "manifest.sig" and "missing" in result.problems[0].message


def test_signature_by_another_key(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    raw = (root / "manifest.json").read_bytes()
    mallory = nacl.signing.SigningKey(b"\x22" * 32)
    (root / "manifest.sig").write_bytes(mallory.sign(b"gage/manifest/v1\x00" + raw).signature)
    assert stages(bundle_mod.check(root)) == {"signature"}


def test_signature_without_the_context_prefix(make_bundle: Callable[..., Path]) -> None:
    """Domain separation: a plain Ed25519 signature over the same bytes is not a gage signature."""
    root = make_bundle()
    raw = (root / "manifest.json").read_bytes()
    plain = nacl.signing.SigningKey(b"\x11" * 32).sign(raw).signature
    (root / "manifest.sig").write_bytes(plain)
    assert stages(bundle_mod.check(root)) == {"signature"}


# --- the payload folder: what is there that should not be, and what is missing ---------


def test_added_file_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "payload/extra.txt").write_bytes(b"not listed")
    result = bundle_mod.check(root)
    assert stages(result) == {"tampered"}
    assert [p.path for p in result.problems] == ["payload/extra.txt"]


def test_added_file_in_a_new_folder_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "payload/new/deeper").mkdir(parents=True)
    (root / "payload/new/deeper/x").write_bytes(b"")
    result = bundle_mod.check(root)
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "payload/new/deeper/x")]


def test_removed_file_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "payload/docs/notes.md").unlink()
    result = bundle_mod.check(root)
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "payload/docs/notes.md")]
    assert "missing" in result.problems[0].message


def test_renamed_file_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "payload/hello.txt").rename(root / "payload/hello2.txt")
    result = bundle_mod.check(root)
    assert stages(result) == {"tampered"}
    assert sorted(p.path or "" for p in result.problems) == ["payload/hello.txt", "payload/hello2.txt"]


def test_case_renamed_file_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "payload/hello.txt").rename(root / "payload/HELLO.txt")
    assert stages(bundle_mod.check(root)) == {"tampered"}


def test_whole_payload_missing_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    for rel in FILES:
        (root / "payload" / rel).unlink()
    (root / "payload/docs").rmdir()
    (root / "payload").rmdir()
    result = bundle_mod.check(root)
    assert stages(result) == {"tampered"}
    assert sorted(p.path or "" for p in result.problems) == sorted(f"payload/{r}" for r in FILES)


def test_payload_as_a_file_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle({})
    (root / "payload").rmdir()
    (root / "payload").write_bytes(b"")
    assert {(p.stage, p.path) for p in bundle_mod.check(root).problems} == {("tampered", "payload")}


def test_symlink_replacing_a_listed_file_is_refused(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    """Even a symlink to a file with exactly the right bytes: a bundle holds regular files only."""
    root = make_bundle()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(FILES["hello.txt"])
    (root / "payload/hello.txt").unlink()
    (root / "payload/hello.txt").symlink_to(outside)
    result = bundle_mod.check(root)
    assert stages(result) == {"tampered"}
    assert [p.path for p in result.problems] == ["payload/hello.txt"]
    assert "symlink" in result.problems[0].message


def test_symlinked_folder_in_payload_is_refused(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    root = make_bundle()
    real = tmp_path / "realdocs"
    (root / "payload/docs").rename(real)
    (root / "payload/docs").symlink_to(real, target_is_directory=True)
    result = bundle_mod.check(root)
    assert stages(result) == {"tampered"}
    assert "payload/docs" in {p.path for p in result.problems}


def test_payload_folder_as_symlink_is_refused(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    root = make_bundle()
    (root / "payload").rename(tmp_path / "elsewhere")
    (root / "payload").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    result = bundle_mod.check(root)
    assert stages(result) == {"tampered"}
    assert "payload" in {p.path for p in result.problems}


def _no_hang(fn: Callable[[], bundle_mod.Check], unblock: list[Path]) -> bundle_mod.Check:
    """Run a check in a thread; if it blocks on a FIFO, unblock it by opening the FIFO for writing, then fail."""
    box: list[bundle_mod.Check | BaseException] = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5)
    if t.is_alive():
        for fifo in unblock:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        t.join(5)
        pytest.fail("checking blocked on a FIFO")
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result


def test_fifo_in_payload_is_refused(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    os.mkfifo(root / "payload/pipe")
    result = _no_hang(lambda: bundle_mod.check(root), [root / "payload/pipe"])
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "payload/pipe")]


def test_fifo_replacing_a_listed_file_is_refused(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "payload/hello.txt").unlink()
    os.mkfifo(root / "payload/hello.txt")
    result = _no_hang(lambda: bundle_mod.check(root), [root / "payload/hello.txt"])
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "payload/hello.txt")]


@pytest.mark.parametrize("name", ["manifest.json", "manifest.sig"])
def test_fifo_as_manifest_or_signature_does_not_hang(make_bundle: Callable[..., Path], name: str) -> None:
    """A FIFO would block a plain open() for ever: checking a hostile folder must still return."""
    root = make_bundle()
    (root / name).unlink()
    os.mkfifo(root / name)
    result = _no_hang(lambda: bundle_mod.check(root), [root / name])
    assert not result.ok
    assert result.problems[0].path == name


def test_socket_in_payload_is_refused(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    root = make_bundle()
    # AF_UNIX paths are short: bind from inside the folder with a relative name.
    cwd = os.getcwd()
    os.chdir(root / "payload")
    try:
        s = socket.socket(socket.AF_UNIX)
        s.bind("sock")
    finally:
        os.chdir(cwd)
    try:
        result = bundle_mod.check(root)
    finally:
        s.close()
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "payload/sock")]


def test_device_in_payload_is_refused(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    try:
        os.mknod(root / "payload/null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("cannot make a device node here")
    result = _no_hang(lambda: bundle_mod.check(root), [])
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "payload/null")]


@pytest.mark.parametrize("extra", ["README", "payload.txt", ".hidden", "manifest.json.orig"])
def test_extra_top_level_file_is_tampered(make_bundle: Callable[..., Path], extra: str) -> None:
    root = make_bundle()
    (root / extra).write_bytes(b"x")
    result = bundle_mod.check(root)
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", extra)]


def test_extra_top_level_folder_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    (root / "more").mkdir()
    assert [(p.stage, p.path) for p in bundle_mod.check(root).problems] == [("tampered", "more")]


def test_manifest_as_symlink_is_refused(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    root = make_bundle()
    (root / "manifest.json").rename(tmp_path / "m.json")
    (root / "manifest.json").symlink_to(tmp_path / "m.json")
    result = bundle_mod.check(root)
    assert not result.ok and result.manifest is None
    assert result.problems[0].path == "manifest.json"


# --- not a bundle, and the schema's closed doors --------------------------------------


def test_empty_folder_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    result = bundle_mod.check(tmp_path / "x")
    assert [p.stage for p in result.problems] == ["malformed"]
    assert "not a gage bundle" in result.problems[0].message and "manifest.json" in result.problems[0].message
    with pytest.raises(MalformedError):
        bundle_mod.verify(tmp_path / "x")


def test_folder_of_ordinary_files_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x/notes.txt").write_text("hi")
    result = bundle_mod.check(tmp_path / "x")
    assert [p.stage for p in result.problems] == ["malformed"]
    assert "no manifest.json" in result.problems[0].message


def test_a_file_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("hi")
    result = bundle_mod.check(tmp_path / "f")
    assert [p.stage for p in result.problems] == ["malformed"]
    assert "not a directory" in result.problems[0].message


def _resign(root: Path, alice: Identity, change: Callable[[dict], None]) -> None:
    """Edit the manifest and sign it properly, so only the schema can be what is wrong."""
    obj = strictjson.loads((root / "manifest.json").read_bytes(), limit=1 << 20)
    change(obj)
    raw = strictjson.dumps(obj)
    (root / "manifest.json").write_bytes(raw)
    (root / "manifest.sig").write_bytes(alice.sign(raw))


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda o: o.update(gage=2), "gage", "unknown manifest version 2"),
        (lambda o: o.update(kind="note"), "kind", "unknown kind 'note'"),
        (lambda o: o.update(trust="verified"), "(top)", "unknown field"),
    ],
    ids=["version", "kind", "field"],
)
def test_unknown_version_kind_field_are_malformed(
    make_bundle: Callable[..., Path], alice: Identity, change: Callable[[dict], None], field: str, words: str
) -> None:
    root = make_bundle()
    _resign(root, alice, change)
    result = bundle_mod.check(root)
    assert [(p.stage, p.path, p.field) for p in result.problems] == [("malformed", "manifest.json", field)]
    assert words in result.problems[0].message


def test_oversize_manifest_is_malformed_without_reading_it_all(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    with open(root / "manifest.json", "ab") as f:
        f.truncate(bundle_mod.MANIFEST_LIMIT + 1)
    result = bundle_mod.check(root)
    assert [(p.stage, p.path) for p in result.problems] == [("malformed", "manifest.json")]
    assert "limit" in result.problems[0].message


# --- the directory name ---------------------------------------------------------------


def test_name_equal_to_id_is_clean(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle()
    result = bundle_mod.check(root, expect_name=True)
    assert result.ok and result.warnings == []


def test_other_name_outside_a_home_is_a_warning_only(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle(name="my-bundle")
    result = bundle_mod.check(root)
    assert result.ok
    assert [(w.stage, w.path) for w in result.warnings] == [("name", "my-bundle")]


def test_other_name_inside_a_home_is_tampered(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle(name="my-bundle")
    result = bundle_mod.check(root, expect_name=True)
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "my-bundle")]


def test_a_different_id_as_name_is_tampered_anywhere(make_bundle: Callable[..., Path]) -> None:
    """A 64-hex name claims to be an id: if it is not this bundle's, that claim is false."""
    other = "ab" * 32
    root = make_bundle(name=other)
    for expect in (False, True):
        result = bundle_mod.check(root, expect_name=expect)
        assert [(p.stage, p.path) for p in result.problems] == [("tampered", other)]
        assert result.id is not None and result.id in result.problems[0].message


# --- streaming --------------------------------------------------------------------------


def test_verification_streams_a_large_file(tmp_path: Path, alice: Identity) -> None:
    """Memory does not grow with file size: a 200 MiB file is checked with a peak of a few MiB."""
    size = 200 * (1 << 20)
    root = tmp_path / "big"
    (root / "payload").mkdir(parents=True)
    big = root / "payload" / "big.bin"
    with open(big, "wb") as f:
        f.truncate(size)  # sparse: no disk used, reads return zeros
    h = hashlib.sha256()
    zeros = bytes(1 << 20)
    for _ in range(size >> 20):
        h.update(zeros)
    m = Manifest.build(
        kind="share",
        sender=Party(key=alice.key, name="alice"),
        files=[FileEntry(path="big.bin", size=size, sha256=h.hexdigest())],
        nonce="0" * 32,
    )
    (root / "manifest.json").write_bytes(m.raw)
    (root / "manifest.sig").write_bytes(alice.sign(m.raw))
    final = tmp_path / m.id
    root.rename(final)

    tracemalloc.start()
    try:
        result = bundle_mod.check(final, expect_name=True)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok, result.problems
    assert peak < 8 * (1 << 20), f"peak {peak} bytes while checking a {size}-byte file"
    # Its speed is bench/bench_verify.py's to measure, not a clock's here (a busy machine).

    # And the check really read it: one changed byte far into the file is caught.
    with open(final / "payload/big.bin", "r+b") as f:
        f.seek(size - 1)
        f.write(b"\x01")
    assert stages(bundle_mod.check(final)) == {"tampered"}


# --- making bundles ---------------------------------------------------------------------


def test_collect_sources_keeps_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "proj/src/pkg").mkdir(parents=True)
    (tmp_path / "proj/src/pkg/a.py").write_text("a")
    (tmp_path / "proj/README").write_text("r")
    (tmp_path / "single.txt").write_text("s")
    got = bundle_mod.collect_sources([tmp_path / "proj", tmp_path / "single.txt"])
    assert sorted(rel for rel, _ in got) == ["proj/README", "proj/src/pkg/a.py", "single.txt"]
    assert dict(got)["proj/src/pkg/a.py"] == tmp_path / "proj/src/pkg/a.py"


def test_collect_sources_refuses_symlinks_and_fifos(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "target").write_text("t")
    (tmp_path / "d/link").symlink_to(tmp_path / "target")
    with pytest.raises(UsageError, match="symlink"):
        bundle_mod.collect_sources([tmp_path / "d"])
    with pytest.raises(UsageError, match="symlink"):
        bundle_mod.collect_sources([tmp_path / "d/link"])
    (tmp_path / "d/link").unlink()
    (tmp_path / "d/sub").mkdir()
    (tmp_path / "d/dirlink").symlink_to(tmp_path / "d/sub", target_is_directory=True)
    with pytest.raises(UsageError, match="symlink"):
        bundle_mod.collect_sources([tmp_path / "d"])
    (tmp_path / "d/dirlink").unlink()
    os.mkfifo(tmp_path / "d/pipe")
    with pytest.raises(UsageError, match="not a regular file"):
        bundle_mod.collect_sources([tmp_path / "d"])


def test_collect_sources_refuses_paths_that_collide_by_case(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a/X.txt").write_text("1")
    (tmp_path / "b/X.txt").write_text("2")
    with pytest.raises(UsageError, match="would both be"):
        bundle_mod.collect_sources([tmp_path / "a/X.txt", tmp_path / "b/X.txt"])


def test_build_leaves_nothing_behind_when_a_source_vanishes(tmp_path: Path, alice: Identity) -> None:
    (tmp_path / "a.txt").write_text("a")
    staging = tmp_path / "staging"
    with pytest.raises(OSError):
        bundle_mod.build(alice, [("a.txt", tmp_path / "a.txt"), ("b.txt", tmp_path / "gone.txt")], staging=staging, kind="share")
    assert list(staging.iterdir()) == []


def test_empty_bundle_verifies(make_bundle: Callable[..., Path]) -> None:
    root = make_bundle({}, kind="question")
    assert bundle_mod.check(root, expect_name=True).ok
    assert bundle_id((root / "manifest.json").read_bytes()) == root.name


def test_copy_bundle_copies_only_what_the_manifest_names(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    root = make_bundle()
    (root / "payload/extra.txt").write_text("x")
    (root / "stray").write_text("y")
    manifest = bundle_mod.read_manifest(root)[1]
    dst = tmp_path / "copy" / root.name
    left = bundle_mod.copy_bundle(root, manifest, dst)
    assert left == ["payload/extra.txt", "stray"]
    assert bundle_mod.check(dst, expect_name=True).ok


@pytest.mark.parametrize("name", ["manifest.json", "manifest.sig"])
def test_manifest_or_signature_as_a_directory_is_tampered(make_bundle: Callable[..., Path], name: str) -> None:
    root = make_bundle()
    (root / name).unlink()
    (root / name).mkdir()
    result = bundle_mod.check(root)
    assert result.problems and result.problems[0].stage == "tampered"
    assert result.problems[0].path == name


def test_dangling_manifest_symlink_is_tampered_not_missing(make_bundle: Callable[..., Path], tmp_path: Path) -> None:
    root = make_bundle()
    (root / "manifest.json").unlink()
    (root / "manifest.json").symlink_to(tmp_path / "nowhere")
    result = bundle_mod.check(root)
    assert [(p.stage, p.path) for p in result.problems] == [("tampered", "manifest.json")]
