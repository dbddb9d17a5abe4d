"""A key statement is read from its bundle beneath the bundle folder, never through a link.

The check of a statement bundle refuses a symlinked payload folder or file; these tests swap
one in after the check (a sender racing the reader, or a sync tool) and show the statement
file is then refused, not followed out of the bundle and not waited on (a FIFO).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from gage import bundle as bundle_mod
from gage.format.keys import statement as ks
from gage.home.layout import Home
from gage.inbox import ownkey
from gage.trust import retirement

REL = f"payload/{ks.FILE_NAME}"


def _statement_bundle(make_home: Callable[[str], Home], tmp_path: Path) -> Path:
    alice = make_home("alice")
    done = ownkey.retire(alice, reason="compromised", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    return tmp_path / "shared" / done.bundle.id


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, swap: Callable[[Path], None]) -> None:
    real = bundle_mod.check

    def check(root: Path, *, expect_name: bool = False) -> bundle_mod.Check:
        result = real(root, expect_name=expect_name)
        swap(root)  # after the check passed, before the statement is read
        return result

    monkeypatch.setattr(bundle_mod, "check", check)


def _outside_copy(root: Path) -> Path:
    """The same payload, byte for byte, outside the bundle: following a link would 'work'."""
    elsewhere = root.parent.parent / "elsewhere"
    shutil.copytree(root / "payload", elsewhere)
    return elsewhere


def test_a_statement_bundle_reads_its_statement(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    root = _statement_bundle(make_home, tmp_path)
    check, data = retirement.statement_in(root, in_home=False)
    assert check.ok and data == (root / REL).read_bytes()


def test_a_payload_folder_swapped_for_a_symlink_is_refused(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _statement_bundle(make_home, tmp_path)

    def swap(r: Path) -> None:
        elsewhere = _outside_copy(r)
        shutil.rmtree(r / "payload")
        (r / "payload").symlink_to(elsewhere, target_is_directory=True)

    _swap_after_check(monkeypatch, swap)
    check, data = retirement.statement_in(root, in_home=False)
    assert data is None
    assert [(p.stage, p.path) for p in check.problems] == [("tampered", REL)], check.problems
    assert "changed while being read" in check.problems[0].message


def test_a_statement_file_swapped_for_a_symlink_is_refused(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _statement_bundle(make_home, tmp_path)

    def swap(r: Path) -> None:
        elsewhere = _outside_copy(r)
        (r / REL).unlink()
        (r / REL).symlink_to(elsewhere / ks.FILE_NAME)

    _swap_after_check(monkeypatch, swap)
    check, data = retirement.statement_in(root, in_home=False)
    assert data is None
    assert [(p.stage, p.path) for p in check.problems] == [("tampered", REL)], check.problems


def test_a_statement_file_swapped_for_a_fifo_does_not_hang(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _statement_bundle(make_home, tmp_path)

    def swap(r: Path) -> None:
        (r / REL).unlink()
        os.mkfifo(r / REL)

    _swap_after_check(monkeypatch, swap)
    done: list[tuple[bundle_mod.Check, bytes | None]] = []
    worker = threading.Thread(target=lambda: done.append(retirement.statement_in(root, in_home=False)), daemon=True)
    worker.start()
    worker.join(timeout=120)  # a hang shows as a read still blocked after a generous cap
    assert done, "reading the statement blocked on a FIFO"
    check, data = done[0]
    assert data is None
    assert [(p.stage, p.path) for p in check.problems] == [("tampered", REL)], check.problems
    assert "not a regular file" in check.problems[0].message
