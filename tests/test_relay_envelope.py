"""The envelope plaintext (spec/relay.md section 3): what the reader refuses, before writing."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from gage import bundle as bundle_mod
from gage.carriers.relay import envelope
from gage.carriers.relay.envelope import END, FILE, MAGIC, EnvelopeError
from gage.format.errors import GageError
from gage.home import settings
from gage.home.layout import Home
from gage.inbox import send
from gage.trust.limits import check_limits


def _bundle(home: Home, tmp: Path, files: dict[str, bytes]) -> Path:
    src = tmp / "src"
    for name, data in files.items():
        p = src / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    _m, dest = send.create(home, [src / n.split("/")[0] for n in sorted({f.split("/")[0] for f in files})], kind="share")
    return dest


def _parts(root: Path) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    raw, m = bundle_mod.read_manifest(root)
    sig = (root / "manifest.sig").read_bytes()
    return raw, sig, [(f.path, (root / "payload" / f.path).read_bytes()) for f in m.files]


def _make(raw: bytes, sig: bytes, entries: list[bytes], end: bytes = END) -> bytes:
    return MAGIC + struct.pack(">I", len(raw)) + raw + struct.pack(">I", len(sig)) + sig + b"".join(entries) + end


def _entry(path: str, data: bytes, size: int | None = None, tag: bytes = FILE) -> bytes:
    p = path.encode()
    return tag + struct.pack(">I", len(p)) + p + struct.pack(">Q", len(data) if size is None else size) + data


@pytest.fixture
def alice(make_home) -> Home:
    return make_home("alice")


def test_round_trip_fed_one_byte_at_a_time_is_the_same_bundle(alice: Home, tmp_path: Path) -> None:
    root = _bundle(alice, tmp_path, {"a.txt": b"alpha", "d/b.bin": bytes(range(256)) * 300})
    data = envelope.to_bytes(root)
    dest = tmp_path / "out"
    r = envelope.Reader(dest)
    for i in range(len(data)):
        r.write(data[i : i + 1])
    m = r.finish()
    assert m.id == root.name
    assert (dest / "manifest.json").read_bytes() == (root / "manifest.json").read_bytes()  # never re-serialised
    assert bundle_mod.check(dest).ok
    assert (dest / "payload" / "d" / "b.bin").read_bytes() == bytes(range(256)) * 300


def test_the_writer_streams_in_bounded_chunks(alice: Home, tmp_path: Path) -> None:
    root = _bundle(alice, tmp_path, {"big.bin": os.urandom(1 << 20)})
    sizes = [len(c) for c in envelope.stream(root)]
    assert max(sizes[1:]) <= envelope.CHUNK  # after the header, no piece is bigger than a chunk


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        ([_entry("a.txt", b"alpha", tag=b"L")], "a link"),
        ([_entry("/etc/passwd", b"alpha")], "absolute path"),
        ([_entry("../a.txt", b"alpha")], "'..'"),
        ([_entry("a.txt", b"alpha"), _entry("a.txt", b"alpha")], "duplicate"),
        ([_entry("b.txt", b"alpha")], "where the manifest lists"),
        ([_entry("a.txt", b"alphabet")], "the manifest says 5"),
        ([], "ends before"),
        ([_entry("a.txt", b"alpha"), _entry("x.txt", b"")], "does not list"),
    ],
)
def test_the_reader_refuses(alice: Home, tmp_path: Path, entries: list[bytes], why: str) -> None:
    root = _bundle(alice, tmp_path, {"a.txt": b"alpha"})
    raw, sig, _ = _parts(root)
    dest = tmp_path / "out"
    with pytest.raises(EnvelopeError, match=why.replace("(", r"\(").replace(".", r"\.")):
        envelope.read_bytes(_make(raw, sig, entries), dest)


def test_nothing_is_written_outside_the_scratch_folder(alice: Home, tmp_path: Path) -> None:
    root = _bundle(alice, tmp_path, {"a.txt": b"alpha"})
    raw, sig, _ = _parts(root)
    for path in ("../escape.txt", "/tmp/escape.txt", "payload/../../escape.txt"):
        with pytest.raises(EnvelopeError):
            envelope.read_bytes(_make(raw, sig, [_entry(path, b"alpha")]), tmp_path / "out" / path.replace("/", "_"))
    assert not (tmp_path / "escape.txt").exists() and not Path("/tmp/escape.txt").exists()


def test_trailing_bytes_truncation_and_bad_magic_are_refused(alice: Home, tmp_path: Path) -> None:
    root = _bundle(alice, tmp_path, {"a.txt": b"alpha"})
    data = envelope.to_bytes(root)
    with pytest.raises(EnvelopeError, match="after the end"):
        envelope.read_bytes(data + b"x", tmp_path / "o1")
    with pytest.raises(EnvelopeError, match="ends early"):
        envelope.read_bytes(data[:-3], tmp_path / "o2")
    with pytest.raises(EnvelopeError, match="not a gage envelope"):
        envelope.read_bytes(b"gage-envelope/v9\n" + data[len(MAGIC) :], tmp_path / "o3")
    with pytest.raises(EnvelopeError, match="malformed"):
        envelope.read_bytes(MAGIC + struct.pack(">I", 5) + b"{bad}", tmp_path / "o4")


def test_limits_are_checked_from_the_manifest_before_any_payload_byte(alice: Home, make_home, tmp_path: Path) -> None:
    bob = make_home("bob")
    settings.path_of(bob).write_text("[limits]\nmax_bundle_bytes = 2048\n")
    root = _bundle(alice, tmp_path, {"big.bin": b"x" * 5000})
    data = envelope.to_bytes(root)
    dest = tmp_path / "out"
    receiver = settings.load(bob).limits

    def check(m, sig):  # what gage.carriers.relay.landing gives the reader
        check_limits(bob, m, receiver)

    r = envelope.Reader(dest, check)
    with pytest.raises(GageError, match="max_bundle_bytes"):
        r.write(data)
    assert not dest.exists()  # refused before the scratch folder was even made


def test_sealing_follows_no_link_in_the_bundle_it_reads(alice: Home, tmp_path: Path) -> None:
    """A held bundle whose payload folder was swapped for a link elsewhere: nothing is sealed from outside it."""
    root = _bundle(alice, tmp_path, {"d/secret.txt": b"alpha"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"OTHER")
    import shutil

    shutil.rmtree(root / "payload" / "d")
    (root / "payload" / "d").symlink_to(outside)
    with pytest.raises(GageError, match="cannot read payload/d/secret.txt"):
        envelope.to_bytes(root)
