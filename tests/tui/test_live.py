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


CAP = 60.0  # seconds: only so a broken interface fails instead of hanging; never a speed limit


async def wait_for(check: Callable[[], bool], limit: float = CAP) -> float | None:
    """Seconds until `check()` held, or None if it never did. No key is pressed.

    Waits on the condition, not on the clock: `limit` is raised to a generous cap, so a
    busy machine makes the test slower, never red. Speed is measured in bench/, not here.
    """
    start = time.monotonic()
    while time.monotonic() - start < max(limit, CAP):
        if check():
            return time.monotonic() - start
        await asyncio.sleep(0.02)
    return None


def shown_verdict(app: TestApp, bid: str) -> str | None:
    """The verdict the inbox shows for `bid` (None while absent or still being checked)."""
    row = app.inbox.rows.get(bid)
    return row.verdict.verdict if row is not None and row.verdict is not None else None


async def watcher_ready(app: TestApp, world: World) -> None:
    """Touch the inbox until the watcher reports a change, so timings start from a live watcher."""
    probe = world.home.state_dir("pending") / "probe"
    start = time.monotonic()
    while time.monotonic() - start < CAP:
        seen = app.changes_seen
        probe.mkdir()
        probe.rmdir()
        for _ in range(10):
            await asyncio.sleep(0.02)
            if app.changes_seen > seen:
                return
    raise AssertionError("the inbox watcher never reported a change")


async def test_a_bundle_dropped_in_appears_by_itself(world: World) -> None:
    src = later_bundle(world)
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await watcher_ready(app, world)
        assert src.name not in app.inbox.rows
        drop_in(src, world.home)
        took = await wait_for(lambda: shown_verdict(app, src.name) == "verified")
        assert took is not None, "the new bundle never appeared"
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
        invalid = await wait_for(lambda: shown_verdict(app, src.name) is not None)
        assert invalid is not None and shown_verdict(app, src.name) == "invalid"  # no signature yet
        (dest / SIGNATURE).write_bytes((src / SIGNATURE).read_bytes())
        took = await wait_for(lambda: shown_verdict(app, src.name) == "verified")
        assert took is not None, "the completed bundle was never checked again"


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
        took = await wait_for(lambda: src.name in app.inbox.rows)
        assert took is not None
        await pilot.pause(0.2)
        assert app.is_running
        assert all(not k.startswith("0000") for k in app.inbox.rows)
        await pilot.press("down")  # still answers keys
