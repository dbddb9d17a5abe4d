"""The check learns from each folder's listing which listed names are regular files, and opens
those without a stat each (issue 13): what was opened is judged by its fstat, so a file swapped
or grown between the listing and the open is still caught, and nothing is followed or waited on."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from test_attacks import ident, signed

from gage import bundle as bundle_mod
from gage.bundle import safeopen


def _swap_before_open(monkeypatch: pytest.MonkeyPatch, name: str, swap: object) -> None:
    real = safeopen.open_at

    def open_at(dir_fd: int, n: str) -> tuple[int, os.stat_result]:
        if n == name:
            swap()  # type: ignore[operator]
        return real(dir_fd, n)

    monkeypatch.setattr(safeopen, "open_at", open_at)


def test_listed_regular_files_take_no_stat_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {f"d{i % 3}/f{i}.txt": b"x" * i for i in range(60)}
    d = signed(tmp_path, ident(1), files)
    stats: list[object] = []
    real = os.stat

    def counting(*a: object, **kw: object) -> os.stat_result:
        stats.append(a[0])
        return real(*a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(bundle_mod.os, "stat", counting)
    r = bundle_mod.check(d)
    monkeypatch.undo()
    assert r.ok, r.problems
    assert not [s for s in stats if isinstance(s, str) and s.startswith("f")], stats  # the three folders only


def test_a_file_grown_after_the_listing_is_judged_as_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = signed(tmp_path, ident(1), {"a.txt": b"a" * 10})
    target = d / "payload" / "a.txt"

    def grow() -> None:
        with open(target, "ab") as f:
            f.write(b"more")

    _swap_before_open(monkeypatch, "a.txt", grow)
    r = bundle_mod.check(d)
    assert [str(p) for p in r.problems] == ["payload/a.txt: is 14 bytes; the manifest says 10"]


def test_a_file_swapped_for_a_symlink_after_the_listing_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = signed(tmp_path, ident(1), {"a.txt": b"same"})
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"same")  # following the link would "match"
    target = d / "payload" / "a.txt"

    def swap() -> None:
        target.unlink()
        target.symlink_to(outside)

    _swap_before_open(monkeypatch, "a.txt", swap)
    r = bundle_mod.check(d)
    assert [(p.stage, p.path) for p in r.problems] == [("tampered", "payload/a.txt")], r.problems
    assert "cannot be read safely" in r.problems[0].message


def test_a_file_swapped_for_a_fifo_after_the_listing_does_not_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = signed(tmp_path, ident(1), {"a.txt": b"a"})
    target = d / "payload" / "a.txt"

    def swap() -> None:
        target.unlink()
        os.mkfifo(target)

    _swap_before_open(monkeypatch, "a.txt", swap)
    done: list[bundle_mod.Check] = []
    worker = threading.Thread(target=lambda: done.append(bundle_mod.check(d)), daemon=True)
    worker.start()
    worker.join(timeout=120)  # a hang shows as a check still running after a generous cap
    assert done, "the check blocked on a FIFO"
    assert [str(p) for p in done[0].problems] == ["payload/a.txt: cannot be read safely (is not a regular file)"]
