"""The inbox is live: bundles that land while the interface is open appear by themselves,
and half-written or vanishing directories never crash it."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable

from tuikit import TestApp, World, drop_in, later_bundle

from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE

SIZE = (80, 24)


async def wait_for(check: Callable[[], bool], limit: float) -> float | None:
    """Seconds until `check()` held, or None if it never did within `limit`. No key is pressed."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if check():
            return time.monotonic() - start
        await asyncio.sleep(0.02)
    return None


async def watcher_ready(app: TestApp, world: World) -> None:
    """Touch the inbox until the watcher reports a change, so timings start from a live watcher."""
    probe = world.home.state_dir("pending") / "probe"
    for _ in range(50):
        seen = app.changes_seen
        probe.mkdir()
        probe.rmdir()
        if await wait_for(lambda seen=seen: app.changes_seen > seen, 0.2) is not None:
            return
    raise AssertionError("the inbox watcher never reported a change")


async def test_a_bundle_dropped_in_appears_within_a_second(world: World) -> None:
    src = later_bundle(world)
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await watcher_ready(app, world)
        assert src.name not in app.inbox.rows
        drop_in(src, world.home)
        took = await wait_for(lambda: src.name in app.inbox.rows and app.inbox.rows[src.name].verdict.verdict == "verified", 1.0)
        assert took is not None, "the new bundle did not appear within a second"
        assert "1 Pending (5)" in app.inbox.query_one("#pending").label.plain


async def test_half_written_bundle_never_crashes_and_settles(world: World) -> None:
    src = later_bundle(world, nonce=51, subject="written slowly")
    dest = world.home.state_dir("pending") / src.name
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await watcher_ready(app, world)
        # Written in place, piece by piece, with pauses: every stage is a change the app sees.
        dest.mkdir()
        await asyncio.sleep(0.2)
        (dest / MANIFEST).write_bytes((src / MANIFEST).read_bytes()[:40])  # torn manifest
        await asyncio.sleep(0.2)
        assert app.is_running
        (dest / MANIFEST).write_bytes((src / MANIFEST).read_bytes())
        await asyncio.sleep(0.2)
        shutil.copytree(src / PAYLOAD, dest / PAYLOAD)
        await asyncio.sleep(0.2)
        assert app.is_running
        invalid = await wait_for(lambda: src.name in app.inbox.rows, 1.0)
        assert invalid is not None and app.inbox.rows[src.name].verdict.verdict == "invalid"  # no signature yet
        (dest / SIGNATURE).write_bytes((src / SIGNATURE).read_bytes())
        took = await wait_for(lambda: app.inbox.rows.get(src.name) is not None and app.inbox.rows[src.name].verdict.verdict == "verified", 1.0)
        assert took is not None, "the completed bundle was not recomputed within a second"


async def test_vanishing_and_renamed_dirs_are_tolerated(world: World) -> None:
    src = later_bundle(world, nonce=52, subject="renamed into place")
    pending = world.home.state_dir("pending")
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await watcher_ready(app, world)
        for i in range(20):  # directories named like bundles that vanish at once
            d = pending / f"{i:064x}"
            d.mkdir()
            (d / MANIFEST).write_bytes(b"{")
            shutil.rmtree(d)
        tmp = pending / ".incoming-tmp"
        shutil.copytree(src, tmp)
        os.rename(tmp, pending / src.name)  # temporary name, then rename
        took = await wait_for(lambda: src.name in app.inbox.rows, 1.0)
        assert took is not None
        await pilot.pause(0.2)
        assert app.is_running
        assert all(not k.startswith("0000") for k in app.inbox.rows)
        await pilot.press("down")  # still answers keys
