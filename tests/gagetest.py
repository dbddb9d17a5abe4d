"""Shared test helpers and fixtures (imported by name as `gagetest`: every conftest.py is module `conftest`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gage.cli.main import main as cli_main
from gage.format.manifest import Manifest
from gage.format.words import derive
from gage.home.layout import Home
from gage.inbox import send, store
from gage.trust import ceremony


@pytest.fixture
def make_home(tmp_path: Path) -> Callable[[str], Home]:
    """A fresh home under tmp_path/<name>, made by `gage init`'s own code."""

    def make(name: str) -> Home:
        return Home.init(tmp_path / name, name)

    return make


def pair(home: Home, name: str, other: Home) -> None:
    """Confirm `other`'s key in `home` as `name`, by typing the right words into the ceremony."""
    words = " ".join(" ".join(p) for p in derive(other.identity.key))
    outcome = ceremony.confirm(home, name, other.identity.key, words)
    assert outcome.confirmed, outcome.message


def arrive(home: Home, src: Path) -> store.ImportResult:
    """Import as every carrier does (`gage import`, the watcher, A2A): the store brings the
    bundle in, then the key layer remembers a good signer as a candidate."""
    res = store.import_bundle(home, src)
    ceremony.remember_signer(home, res)
    return res


def deliver_tampered(sender: Home, receiver: Home, tmp: Path, name: str, original: str, changed: str) -> Manifest:
    """`sender` bundles a file, someone changes it on the way, and `receiver` imports the changed copy."""
    src = tmp / name
    src.write_text(original)
    m, dest = send.create(sender, [src], kind="share")
    t = tmp / "tampered" / dest.name
    shutil.copytree(dest, t)
    (t / "payload" / name).write_text(changed)
    store.import_bundle(receiver, t)
    return m


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def gage(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run the CLI in-process: gage(home, "list", "--json")."""

    def run(home: Home | Path | None, *args: str) -> Run:
        argv = (["--home", str(home.root if isinstance(home, Home) else home)] if home is not None else []) + list(args)
        capsys.readouterr()
        code = cli_main(argv)
        captured = capsys.readouterr()
        return Run(code=code, out=captured.out, err=captured.err)

    return run


def run_gage_process(*args: str, home: Path | None = None, input: str | None = None, timeout: float = 60) -> Run:
    """Run the real `gage` command in a subprocess (for kills, terminals and exit codes)."""
    env = dict(os.environ)
    if home is not None:
        env["GAGE_HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-m", "gage.cli.main", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    return Run(code=proc.returncode, out=proc.stdout, err=proc.stderr)


def stop_process(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    """Stop a long-running `gage` process as a person would (SIGTERM), killing it only if it does
    not end within 30 s: a watcher left running would hold the home and the test's port."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def small_home_with_a_bundle(tmp_path: Path) -> tuple[Home, Home, Manifest]:
    """A home (`me`) holding one pending bundle from another (`them`, unpaired), both made as
    `gage init` makes them (hybrid keys), and listed once as if past the check cache's racy
    window (gage/home/cache/checks.py), so its check and row are kept as for any bundle not just
    landed: what the start-up tests run `id`, `list` and `verdict ID` on."""
    me = Home.init(tmp_path / "me", "me")
    them = Home.init(tmp_path / "them", "them")
    (tmp_path / "note.txt").write_text("hello\n")
    m, _ = send.create(them, [tmp_path / "note.txt"], kind="share", copy_to=tmp_path / "wire")
    store.import_bundle(me, tmp_path / "wire" / m.id)
    listed_later(me)
    return me, them, m


def later_clock() -> int:
    """The check cache's clock moved on past its racy window: a tree written before now is
    old enough to remember, as it would be after waiting RACY_NS (tests set it instead of sleeping)."""
    import time

    from gage.bundle.treestat import RACY_NS

    return time.time_ns() + RACY_NS + 1_000_000


def listed_later(home: Home) -> None:
    """List `home` in this process as a listing after the racy window would: its checks and rows kept."""
    from gage.home.cache import checks
    from gage.inbox.listed import listed_rows

    real = checks.now_ns
    checks.now_ns = later_clock
    try:
        listed_rows(home)
    finally:
        checks.now_ns = real


def change_a_byte_keeping_mtime(data: Path) -> None:
    """A payload byte changed in place, its size and mtime put back: only its ctime tells."""
    st = data.stat()
    raw = bytearray(data.read_bytes())
    raw[0] ^= 1
    data.chmod(0o644)
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
