"""The interface's file watcher runs in a child process (gage.tui.watcher): setting up a watch
of 10,000 bundles holds the interpreter's lock for most of a second, in which the interface
would draw nothing. These show the child's protocol, that it never outlives the interface,
and that the interface itself never sets up a watch in its own process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import watchfiles.main
from test_live import SIZE, wait_for
from tuikit import TestApp, World, drop_in, later_bundle

from gage.tui import watcher


def _children_watching(root: Path) -> list[int]:
    """Processes whose command line is a gage.tui.watcher child watching under `root`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"gage.tui.watcher" in cmd and any(a.startswith(os.fsencode(root)) for a in cmd):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z":
                found.append(int(pid))
    return found


async def test_the_first_report_is_ready_then_each_change_names_its_path(tmp_path: Path) -> None:
    seen: list[frozenset[str]] = []
    gen = watcher.changes([tmp_path])
    try:
        seen.append(await asyncio.wait_for(anext(gen), 60))
        assert seen == [frozenset()]  # ready: the watch is set, nothing has changed
        made = tmp_path / "new-file"
        made.write_text("x")
        got = await asyncio.wait_for(anext(gen), 60)
        while str(made) not in got:
            got = await asyncio.wait_for(anext(gen), 60)
        assert str(made) in got
    finally:
        await gen.aclose()
    deadline = time.monotonic() + 10
    while _children_watching(tmp_path) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _children_watching(tmp_path) == []  # closing the watch ends the child


def test_the_child_ends_when_its_parent_goes(tmp_path: Path) -> None:
    """Its stdin closing (the interface done, or killed) ends the child; nothing outlives it."""
    proc = subprocess.Popen([sys.executable, "-m", "gage.tui.watcher", str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == b'"ready"\n'
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()


def test_a_name_that_is_not_utf8_ends_the_child_cleanly(tmp_path: Path) -> None:
    """watchfiles cannot report a name that is not UTF-8 and gives up: the child says nothing
    false and exits 1 (no abort, no traceback), so the interface starts another."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.tui.watcher", str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
    try:
        assert proc.stdout.readline() == b'"ready"\n'
        (tmp_path / os.fsdecode(b"bad-\xff-name")).write_text("x")
        assert proc.wait(timeout=30) == 1
        assert proc.stderr.read() == b""
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


async def test_a_bundle_that_lands_beside_a_name_that_is_not_utf8_still_appears(world: World) -> None:
    """The watch dies on the hostile name, which came with the bundle's own changes. Before the
    watcher looked again when it came back, the bundle was missed until something else changed."""
    src = later_bundle(world)
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        assert await wait_for(lambda: app.changes_seen >= 1) is not None  # the watch is set
        junk = world.home.state_dir("pending") / os.fsdecode(b"junk-\xff")
        junk.write_text("x")
        drop_in(src, world.home)
        assert await wait_for(lambda: src.name in app.inbox.rows) is not None
        await pilot.pause()


async def test_the_interface_never_sets_up_a_watch_in_its_own_process(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch set up here would hold the interface still while it is made: the interface's own
    process must never make one, and bundles still appear live (through the child)."""

    def refused(*_a: object, **_k: object) -> None:
        raise AssertionError("a watch was set up in the interface's own process")

    monkeypatch.setattr(watchfiles.main, "RustNotify", refused)
    src = later_bundle(world)
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        # The first report is the child's "ready", which makes the inbox look again.
        assert await wait_for(lambda: app.changes_seen >= 1) is not None
        drop_in(src, world.home)
        assert await wait_for(lambda: src.name in app.inbox.rows) is not None
        await pilot.pause()
    deadline = time.monotonic() + 10
    while _children_watching(world.home.root) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _children_watching(world.home.root) == []  # the interface gone, its watcher too
