"""Progress: the core reports bytes through an optional listener; the CLI draws a line on a
terminal's standard error and nothing when it is piped."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from gagetest import pair

from gage import bundle as bundle_mod
from gage.bundle import progress
from gage.cli.progress import ProgressLine, progress_line
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import extract, gate, send, store

BIG = 12 << 20  # over the CLI's threshold (8 MiB)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _record() -> tuple[list[tuple[str, int, int]], progress.Listener]:
    seen: list[tuple[str, int, int]] = []
    return seen, lambda phase, done, total: seen.append((phase, done, total))


def test_without_a_listener_nothing_is_reported(make_home, tmp_path: Path) -> None:
    home = make_home("alice")
    (tmp_path / "f").write_bytes(b"x" * 1000)
    _m, dest = send.create(home, [tmp_path / "f"], kind="share")
    assert not progress.listening()
    assert bundle_mod.check(dest).ok  # and no error from a phase with nobody listening


def test_the_core_reports_each_phase_in_bytes(make_home, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    (tmp_path / "f").write_bytes(b"x" * (3 << 20))
    seen, listener = _record()
    with progress.reporting(listener):
        m, dest = send.create(bob, [tmp_path / "f"], kind="share", copy_to=tmp_path / "wire")
        bundle_mod.check(dest)
        store.import_bundle(alice, tmp_path / "wire" / m.id)
        gate.accept(alice, m.id)
        extract.extract(alice, listing.resolve(alice, m.id), tmp_path / "out")
    phases = {p for p, _d, _t in seen}
    assert {"bundling", "copying", "checking", "extracting"} <= phases
    for phase in phases:
        finals = [(d, t) for p, d, t in seen if p == phase]
        assert all(t == 3 << 20 for _d, t in finals)
        assert (3 << 20, 3 << 20) in finals, phase
    assert not progress.listening(), "the listener is gone after the block"


def test_the_line_draws_throttled_and_clears() -> None:
    clock = iter([0.0, 0.01, 0.5, 0.6])
    stream = Tty()
    line = ProgressLine("verify", stream, clock=lambda: next(clock), min_bytes=0)
    line("checking", 0, 100 << 20)
    line("checking", 1 << 20, 100 << 20)  # 10 ms later: not drawn
    line("checking", 50 << 20, 100 << 20)
    text = stream.getvalue()
    assert "gage verify: checking 0 B of 100.0 MiB (0%)" in text
    assert "1.0 MiB" not in text
    assert "50.0 MiB of 100.0 MiB (50%)" in text
    line("checking", 100 << 20, 100 << 20)
    assert stream.getvalue().endswith("\r\x1b[2K"), "a finished phase leaves a clean line"


def test_small_work_draws_nothing() -> None:
    stream = Tty()
    line = ProgressLine("verify", stream)
    line("checking", 0, 1000)
    line("checking", 500, 1000)
    assert stream.getvalue() == ""


def test_nothing_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with progress_line("verify", stream):
        assert not progress.listening()
    with progress_line("verify", Tty()):
        assert progress.listening()


def _big_bundle(home: Home, tmp_path: Path) -> Path:
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(BIG))
    _m, dest = send.create(home, [src], kind="share")
    return dest


def test_verify_draws_progress_on_a_terminal_and_nothing_when_piped(make_home, tmp_path: Path) -> None:
    dest = _big_bundle(make_home("alice"), tmp_path)
    cmd = [sys.executable, "-m", "gage", "verify", str(dest)]
    piped = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stderr + piped.stdout and "checking" not in piped.stderr
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=slave, timeout=120)
        os.close(slave)
        slave = -1
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    tty_text = b"".join(chunks).decode()
    assert "gage verify: checking" in tty_text and "of 12.0 MiB" in tty_text
    assert b"\x1b" not in proc.stdout, "standard output is never touched"
