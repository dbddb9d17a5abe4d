"""`gage extract ID DIR` and gage.inbox.extract.extract: every byte checked, no link followed, nothing overwritten
without --force, nothing left half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gagetest import pair

from gage.bundle import PAYLOAD
from gage.format.errors import Exit, RefusedError, TamperedError
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import extract as extract_mod
from gage.inbox import gate, send, store


@pytest.fixture
def held(make_home, tmp_path: Path) -> tuple[Home, str]:
    """alice holds, pending, a bundle bob made of a file and a folder."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    src = tmp_path / "src"
    (src / "docs" / "deep").mkdir(parents=True)
    (src / "docs" / "a.txt").write_text("alpha\n")
    (src / "docs" / "deep" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (tmp_path / "top.txt").write_text("top\n")
    m, dest = send.create(bob, [src / "docs", tmp_path / "top.txt"], kind="share", subject="files")
    store.import_bundle(alice, dest)
    return alice, m.id


def _accepted(held: tuple[Home, str]) -> tuple[Home, str]:
    home, bid = held
    gate.accept(home, bid)
    return home, bid


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_extract_copies_an_accepted_payload(held, gage, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    out = tmp_path / "out"
    r = gage(home, "extract", bid[:10], str(out))
    assert r.code == 0, r.err
    got = _tree(out)
    stored = listing.resolve(home, bid)
    assert got == _tree(stored.path / PAYLOAD)
    assert set(got) == {"docs/a.txt", "docs/deep/b.bin", "top.txt"}
    assert r.out.splitlines() == [str(out / p) for p in ("docs/a.txt", "docs/deep/b.bin", "top.txt")]
    assert "extracted 3 files" in r.err


def test_extract_json(held, gage, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    r = gage(home, "extract", bid, str(tmp_path / "o"), "--json")
    doc = json.loads(r.out)
    assert doc["id"] == bid and doc["state"] == "accepted" and len(doc["files"]) == 3


def test_pending_is_refused_unless_asked(held, gage, tmp_path: Path) -> None:
    home, bid = held
    r = gage(home, "extract", bid, str(tmp_path / "o"))
    assert r.code == Exit.REFUSED and "pending" in r.err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    r = gage(home, "extract", bid, str(tmp_path / "o"), "--pending")
    assert r.code == 0 and "stays pending" in r.err
    assert listing.resolve(home, bid).state == "pending"


def test_rejected_is_refused(held, gage, tmp_path: Path) -> None:
    home, bid = held
    gate.reject(home, bid)
    r = gage(home, "extract", bid, str(tmp_path / "o"), "--pending")
    assert r.code == Exit.REFUSED


def test_never_overwrites_without_force(held, gage, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    out = tmp_path / "o"
    (out / "docs").mkdir(parents=True)
    (out / "docs" / "a.txt").write_text("mine\n")
    r = gage(home, "extract", bid, str(out))
    assert r.code == Exit.REFUSED and "--force" in r.err
    assert (out / "docs" / "a.txt").read_text() == "mine\n"
    assert _tree(out) == {"docs/a.txt": b"mine\n"}, "nothing else was written"
    r = gage(home, "extract", bid, str(out), "--force")
    assert r.code == 0
    assert (out / "docs" / "a.txt").read_text() == "alpha\n"


def test_a_dangling_link_counts_as_existing(held, gage, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    out = tmp_path / "o"
    out.mkdir()
    os.symlink(tmp_path / "nowhere", out / "top.txt")
    assert gage(home, "extract", bid, str(out)).code == Exit.REFUSED
    assert not (tmp_path / "nowhere").exists()


def test_a_link_in_the_destination_is_never_followed(held, gage, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    out = tmp_path / "o"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "docs")
    for extra in ((), ("--force",)):
        r = gage(home, "extract", bid, str(out), *extra)
        assert r.code == Exit.REFUSED, r.err
        assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["docs"], "nothing left behind"


def test_a_link_in_the_bundle_is_never_followed(held, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    stored = listing.resolve(home, bid)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "b.bin").write_bytes(bytes(range(256)) * 40)  # even the same bytes: a link is refused
    deep = stored.path / PAYLOAD / "docs" / "deep"
    for p in deep.iterdir():
        p.unlink()
    deep.rmdir()
    os.symlink(secret, deep)
    out = tmp_path / "o"
    with pytest.raises(TamperedError):
        extract_mod.extract(home, stored, out, force=False, allow_pending=False)
    assert _tree(out) == {} and not list(out.rglob("*")), "nothing placed, no temporary file, no folder made"


@pytest.mark.parametrize("change", ["content", "longer", "shorter"])
def test_every_byte_is_checked(held, tmp_path: Path, change: str) -> None:
    home, bid = _accepted(held)
    stored = listing.resolve(home, bid)
    target = stored.path / PAYLOAD / "top.txt"  # the last file: the others are already copied
    os.chmod(target, 0o644)
    data = target.read_bytes()
    target.write_bytes({"content": b"TOP\n", "longer": data + b"x" * 10_000_000, "shorter": data[:-1]}[change])
    out = tmp_path / "o"
    with pytest.raises(TamperedError) as exc:
        extract_mod.extract(home, stored, out, force=False, allow_pending=False)
    assert "top.txt" in str(exc.value)
    assert not list(out.rglob("*")), "nothing is left half-written, nor the files checked before"


def test_a_bad_signature_extracts_nothing(held, gage, tmp_path: Path) -> None:
    home, bid = _accepted(held)
    stored = listing.resolve(home, bid)
    sig = stored.path / "manifest.sig"
    os.chmod(sig, 0o644)
    raw = bytearray(sig.read_bytes())
    raw[0] ^= 1
    sig.write_bytes(bytes(raw))
    r = gage(home, "extract", bid, str(tmp_path / "o"))
    assert r.code == Exit.BAD_SIGNATURE
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_the_core_function_returns_the_paths(held, tmp_path: Path) -> None:
    home, bid = held
    stored = listing.resolve(home, bid)
    with pytest.raises(RefusedError):
        extract_mod.extract(home, stored, tmp_path / "o", force=False, allow_pending=False)
    paths = extract_mod.extract(home, stored, tmp_path / "o", force=False, allow_pending=True)
    assert [p.relative_to(tmp_path / "o").as_posix() for p in paths] == ["docs/a.txt", "docs/deep/b.bin", "top.txt"]
    assert all(p.is_file() for p in paths)


def test_never_into_the_home(held, gage) -> None:
    home, bid = _accepted(held)
    stored = listing.resolve(home, bid)
    for inside in (stored.path / PAYLOAD, home.root / "elsewhere"):
        r = gage(home, "extract", bid, str(inside), "--force")
        assert r.code == Exit.REFUSED and "inside the gage home" in r.err
    assert not (home.root / "elsewhere").exists()
