"""The home's cache key (gage.home.cache.sealkey): made when first needed, 0600, outside `cache/`;
one that is missing, of the wrong size or not a regular file is made anew, and then every cache
sealed under the old one is a miss (a recomputation, the same answers); two processes making one at
once end with one key."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gagetest import small_home_with_a_bundle

from gage.cli.main import main as cli_main
from gage.home.cache import checks, sealkey
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.home.listing import list_bundles


@pytest.fixture(autouse=True)
def fresh_key_memo() -> Iterator[None]:
    sealkey.forget()
    yield
    sealkey.forget()


def _list(home: Home) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(["--home", str(home.root), "list", "--json"]) == 0
    return out.getvalue()


def test_the_key_is_made_when_first_needed_beside_the_cache_and_kept(tmp_path: Path) -> None:
    root = tmp_path / "h"
    root.mkdir()
    path = root / sealkey.KEY_FILE
    assert not path.exists()
    key = sealkey.home_key(root)
    assert len(key) == sealkey.KEY_BYTES and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    sealkey.forget()
    assert sealkey.home_key(root) == key  # read back, not made again
    assert sorted(os.listdir(root)) == [sealkey.KEY_FILE]  # no temporary file left


@pytest.mark.parametrize("damage", ["missing", "short", "long", "a folder", "a link", "a fifo"])
def test_a_damaged_key_is_made_anew_and_every_cache_is_then_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    me, _them, _m = small_home_with_a_bundle(tmp_path)
    later = 10**20
    monkeypatch.setattr(checks, "now_ns", lambda: later)  # past the racy window, without waiting
    want = _list(me)
    _list(me)
    old = (me.root / sealkey.KEY_FILE).read_bytes()
    cache = CheckCache.of(me)
    assert all(cache.check(s).ok for s in list_bundles(me)) and cache.misses == 0  # the caches serve under the old key
    path = me.root / sealkey.KEY_FILE
    path.unlink()
    if damage == "short":
        path.write_bytes(old[:-1])
    elif damage == "long":
        path.write_bytes(old + b"x")
    elif damage == "a folder":
        path.mkdir()
    elif damage == "a link":
        (tmp_path / "elsewhere").write_bytes(old)
        path.symlink_to(tmp_path / "elsewhere")
    elif damage == "a fifo":
        os.mkfifo(path)
    sealkey.forget()
    cache = CheckCache.of(me)
    assert all(cache.check(s).ok for s in list_bundles(me)) and cache.hits == 0  # nothing sealed under the old key is believed
    assert _list(me) == want
    key = sealkey.home_key(me.root)
    assert key != old
    if damage == "a folder":
        assert path.is_dir()  # left; the process seals with a key of its own
        assert key == sealkey.process_key()
    else:
        assert path.is_file() and not path.is_symlink() and path.read_bytes() == key
    if damage == "a link":
        assert (tmp_path / "elsewhere").read_bytes() == old  # what the link pointed to is never touched


def test_two_processes_making_the_key_at_once_end_with_one(tmp_path: Path) -> None:
    root = tmp_path / "h"
    root.mkdir()
    probe = "import sys; from pathlib import Path; from gage.home.cache import sealkey; print(sealkey.home_key(Path(sys.argv[1])).hex())"
    procs = [subprocess.Popen([sys.executable, "-c", probe, str(root)], stdout=subprocess.PIPE, text=True) for _ in range(6)]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert keys == {(root / sealkey.KEY_FILE).read_bytes().hex()}


def test_a_home_whose_key_cannot_be_written_seals_with_a_key_of_the_process(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    os.chmod(root, 0o500)
    try:
        if os.access(root, os.W_OK):
            pytest.skip("this user writes a read-only folder (root)")
        assert sealkey.home_key(root) == sealkey.process_key()
        assert os.listdir(root) == []
    finally:
        os.chmod(root, 0o700)
