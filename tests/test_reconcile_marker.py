"""The reconcile marker (gage/home/cache/reconcilemark.py): opening a home skips reconcile's scan only when
nothing the scan reads has changed since a scan found the home consistent, and every change that
scan cares about makes the next open scan again, with the same result as without the marker."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)

from gage.home.cache import reconcilemark
from gage.home.layout import Home
from gage.inbox import gate, reconcile
from gage.inbox.opening import open_home

LATER = 10 * 10**9  # ns: far enough past every timestamp that nothing is within the racy window


@pytest.fixture(name="scans")
def scans_fixture(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Count the full scans (reconcile._scan calls), and run the racy rule's clock LATER ahead."""
    calls: list[Path] = []
    real = reconcile._scan

    def counting(home: Home) -> list[str]:
        calls.append(home.root)
        return real(home)

    monkeypatch.setattr(reconcile, "_scan", counting)
    monkeypatch.setattr(reconcilemark, "now_ns", lambda: time.time_ns() + LATER)
    return calls


def _marker(home: Home) -> Path:
    return home.cache / reconcilemark.FILE_NAME


def _settled(world: World, scans: list[Path]) -> str:
    """A home with one pending and one accepted bundle, reconciled, with a marker written."""
    gate.accept(world.me, world.pending_from(world.bob, "kept"))
    bid = world.pending_from(world.bob, "waiting")
    assert gate.reconcile(world.me) == []
    assert _marker(world.me).is_file()
    scans.clear()
    return bid


def _accepted(world: World) -> str:
    [bid] = os.listdir(world.me.state_dir("accepted"))
    return bid


def test_second_open_with_nothing_changed_does_not_scan(world: World, scans: list[Path]) -> None:
    _settled(world, scans)
    home = open_home(world.me.root)
    assert scans == [] and home.reconciled == []
    assert gate.reconcile(home) == [] and scans == []


def test_a_home_that_never_accepted_anything_is_vouched_for_too(make_home: Callable[[str], Home], scans: list[Path]) -> None:
    home = make_home("me")
    assert not gate.staging_dir(home).exists()
    gate.reconcile(home)
    assert _marker(home).is_file()
    open_home(home.root)
    assert scans == [home.root]


def test_deleting_the_marker_changes_nothing_but_a_scan(world: World, scans: list[Path]) -> None:
    _settled(world, scans)
    before = gate.journal_states(world.me)
    _marker(world.me).unlink()
    assert open_home(world.me.root).reconciled == []
    assert len(scans) == 1 and gate.journal_states(world.me) == before
    assert _marker(world.me).is_file()


@pytest.mark.parametrize("damage", [b"", b"{not json", b"[]", b'{"format": "gage-reconciled-1"}', b"x" * 70_000])
def test_a_damaged_marker_is_ignored(world: World, scans: list[Path], damage: bytes) -> None:
    _settled(world, scans)
    _marker(world.me).write_bytes(damage)
    assert open_home(world.me.root).reconciled == []
    assert len(scans) == 1


def _stage_pending(world: World, bid: str) -> None:
    """A kill after staging an accept: the bundle is under the staging name."""
    os.rename(world.me.state_dir("pending") / bid, gate.staging_dir(world.me) / bid)


def _pending_to_accepted(world: World, bid: str) -> None:
    """A kill before the accept's journal line (or a move around the gate)."""
    os.rename(world.me.state_dir("pending") / bid, world.me.state_dir("accepted") / bid)


def _pending_to_rejected(world: World, bid: str) -> None:
    os.rename(world.me.state_dir("pending") / bid, world.me.state_dir("rejected") / bid)


def _accepted_removed(world: World, bid: str) -> None:
    shutil.rmtree(world.me.state_dir("accepted") / _accepted(world))


def _journal_appended(world: World, bid: str) -> None:
    """A decision journaled for a bundle still in pending (only the journal changed)."""
    world.me.journal.append("rejected", bundle=bid)


def _journal_edited_in_place(world: World, bid: str) -> None:
    """The accept line rewritten to a rejection, same size: only the journal's bytes and ctime change."""
    path = world.me.journal.path
    data = path.read_bytes()
    lines = data.split(b"\n")
    target = _accepted(world).encode()
    i = next(i for i, line in enumerate(lines) if target in line and b'"accepted"' in line)
    lines[i] = lines[i].replace(b'"accepted"', b'"rejected"')
    edited = b"\n".join(lines)
    assert len(edited) == len(data)
    with open(path, "r+b") as f:
        f.write(edited)


CHANGES: dict[str, Callable[[World, str], None]] = {
    "staged leftover": _stage_pending,
    "moved to accepted, no journal line": _pending_to_accepted,
    "moved to rejected, no journal line": _pending_to_rejected,
    "accepted bundle removed": _accepted_removed,
    "journal appended": _journal_appended,
    "journal edited in place": _journal_edited_in_place,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_makes_the_next_open_reconcile_as_without_the_marker(
    world: World, scans: list[Path], tmp_path: Path, change: str
) -> None:
    bid = _settled(world, scans)
    CHANGES[change](world, bid)
    # The same home without a marker: what reconcile finds there is the result to match.
    twin_root = tmp_path / "twin"
    shutil.copytree(world.me.root, twin_root, symlinks=True)
    (twin_root / "cache" / reconcilemark.FILE_NAME).unlink()
    twin = open_home(twin_root)
    assert twin.reconciled, "the change must be one reconcile repairs or records"
    home = open_home(world.me.root)
    assert len(scans) == 2  # the twin's and this one
    assert home.reconciled == twin.reconciled
    assert gate.journal_states(home) == gate.journal_states(twin)
    for state in ("pending", "accepted", "rejected"):
        assert sorted(os.listdir(home.state_dir(state))) == sorted(os.listdir(twin.state_dir(state)))


def test_a_change_within_the_racy_window_is_not_trusted(world: World, scans: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _settled(world, scans)
    _marker(world.me).unlink()
    # The clock as it really is: the folders and the journal were all written just now.
    monkeypatch.setattr(reconcilemark, "now_ns", time.time_ns)
    assert gate.reconcile(world.me) == []
    assert not _marker(world.me).exists()
    assert gate.reconcile(world.me) == [] and len(scans) == 2
    # One folder stamped less than RACY_NS before the scan started is enough to write nothing.
    stamp = os.stat(world.me.state_dir("rejected")).st_ctime_ns
    monkeypatch.setattr(reconcilemark, "now_ns", lambda: stamp + reconcilemark.RACY_NS - 1)
    gate.reconcile(world.me)
    assert not _marker(world.me).exists()
    monkeypatch.setattr(reconcilemark, "now_ns", lambda: time.time_ns() + LATER)
    gate.reconcile(world.me)
    assert _marker(world.me).exists()


def test_a_symlinked_bundle_or_a_scratch_copy_is_never_vouched_for(world: World, scans: list[Path], tmp_path: Path) -> None:
    bid = _settled(world, scans)
    # A bundle name that is a link: whether it leads to a folder can change with no folder here changing.
    away = tmp_path / "away"
    os.rename(world.me.state_dir("pending") / bid, away)
    os.symlink(away, world.me.state_dir("pending") / bid)
    gate.reconcile(world.me)
    assert not _marker(world.me).exists()
    os.unlink(world.me.state_dir("pending") / bid)
    os.rename(away, world.me.state_dir("pending") / bid)
    gate.reconcile(world.me)
    assert _marker(world.me).exists()
    # A fresh scratch copy: reconcile removes it once it is old, which the clock alone decides.
    (world.me.staging / "import-0000aaaa").mkdir()
    gate.reconcile(world.me)
    assert not _marker(world.me).exists()
    assert gate.reconcile(world.me) == [] and len(scans) == 4


def test_a_marker_from_another_home_is_not_trusted(world: World, scans: list[Path], tmp_path: Path) -> None:
    _settled(world, scans)
    marker = json.loads(_marker(world.me).read_bytes())
    assert marker["format"] == reconcilemark.FORMAT and marker["home"] == str(world.me.root)
    copy = tmp_path / "copy"
    shutil.copytree(world.me.root, copy, symlinks=True)
    open_home(copy)
    assert scans == [copy]
