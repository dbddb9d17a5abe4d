"""SVG snapshots of the main screens at 80x24, from a deterministic world (see tuikit).

Update with `pytest tests/tui --snapshot-update` after a deliberate change, and look at
the SVGs (tests/tui/__snapshots__/) before committing them.
"""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from tuikit import (
    TestApp,
    World,
    build_world,
    hold_decisions,
    identity,
    settle,
    typed_keys,
    write_key_file,
)

from gage.format.words import derive

SIZE = (80, 24)


def _keys(*keys: str):
    """Press keys, waiting for the inbox's rows (computed in a thread worker) after each."""

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            await settle(pilot)

    return run_before


def test_inbox(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys())


def test_inbox_accepted_tab_empty(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys("2"))


def _open(app: TestApp, bundle_id: str, *keys: str):
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        app.open_bundle(bundle_id)
        await pilot.pause()
        await settle(pilot)  # the verdict and the preview are computed in workers
        if keys:
            await pilot.press(*keys)
            await pilot.pause()
            await settle(pilot)

    return run_before


def test_bundle_view_verified(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open(app, world.ids["review"]))


def test_bundle_view_verified_payload(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open(app, world.ids["review"], "end"))


def test_bundle_view_hostile(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open(app, world.ids["hostile"]))


def test_bundle_view_hostile_payload(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open(app, world.ids["hostile"], "end"))


def test_bundle_view_invalid_payload(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open(app, world.ids["invalid"], "end"))


def test_unverified_accept_dialog(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_open(app, world.ids["hostile"], "a"))


def test_ceremony(snap_compare, world: World, tmp_path: Path) -> None:
    app = TestApp(world.home)
    bob = identity("bob", 7)
    path = write_key_file(tmp_path / "bob.key", bob)

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        app.start_ceremony(bob.key, "bob", f'key file "{path.name}"')
        await pilot.pause()
        await pilot.press(*"bob", "enter")  # the pairing dialog: my name for them, first
        await pilot.pause()
        await pilot.press(*"aardv")  # the first word half typed: the completion shows
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_pairing_dialog_name_clash(snap_compare, world: World) -> None:
    """A name already confirmed for another key: said in the dialog, before any word is shown."""
    app = TestApp(world.home)

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        app.start_ceremony(world.stranger.key, "alice", "bundle 0123456789ab")
        await pilot.pause()
        await pilot.press(*"alice", "enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def _mutual(app: TestApp, *, finish: bool = False):
    """The mutual ceremony with bob: pair 1 heard right, pair 2 misheard (a near miss), or all four."""
    bob = identity("bob", 7)
    theirs = derive(bob.key)

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        app.start_ceremony(bob.key, "bob", 'key file "bob.key"', mutual=True)
        await pilot.pause()
        await pilot.press(*"bob", "enter")
        await pilot.pause()
        typed = [f"{a} {b}" for a, b in theirs] if finish else [" ".join(theirs[0]), f"{theirs[1][0][:-1]} {theirs[1][1]}"]
        for line in typed:
            await pilot.press(*typed_keys(line), "enter")
            await pilot.pause()
        await settle(pilot)  # confirming runs in a worker

    return run_before


def test_mutual_ceremony(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_mutual(app))


def test_mutual_ceremony_wide(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=WIDE, run_before=_mutual(app))


def test_mutual_ceremony_closing_pair(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=SIZE, run_before=_mutual(app, finish=True))


def test_mutual_ceremony_closing_pair_wide(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=WIDE, run_before=_mutual(app, finish=True))


def test_contacts(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys("c"))


def test_help(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys("question_mark"))


def test_world_is_deterministic(tmp_path: Path) -> None:
    """Two worlds built apart have the same ids: what the snapshots rely on."""
    a = build_world(tmp_path / "a")
    b = build_world(tmp_path / "b")
    assert a.ids == b.ids


WIDE = (160, 45)


def test_inbox_wide_with_preview_pane(snap_compare, world: World) -> None:
    """At 160x45 the list has a preview pane beside it: the frame, then the first lines."""
    assert snap_compare(TestApp(world.home), terminal_size=WIDE, run_before=_keys("down"))


def test_bundle_view_wide(snap_compare, world: World) -> None:
    app = TestApp(world.home)
    assert snap_compare(app, terminal_size=WIDE, run_before=_open(app, world.ids["review"]))


def test_accept_dialog_from_the_inbox(snap_compare, world: World) -> None:
    """The gate's one confirmation: the bundle named, Cancel focused, the dialog's own footer."""
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys("down", "down", "a"))


def test_accept_dialog_wide(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=WIDE, run_before=_keys("down", "down", "a"))


def test_inbox_filtered_and_marked(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys("space", "v", "v"))


def test_empty_inbox_says_how_bundles_get_in(snap_compare, tmp_path: Path) -> None:
    from tuikit import make_home

    home = make_home(tmp_path / "empty", "you", 1)
    assert snap_compare(TestApp(home), terminal_size=SIZE, run_before=_keys())


# --- issue 27: daily use ----------------------------------------------------------------


def test_inbox_mixed_stranger_at_the_bottom(snap_compare, tmp_path: Path) -> None:
    """A stranger's row highlighted at the table's bottom: in view, its claim on the line under the detail."""
    from tuikit import mixed_world

    world, _tokens = mixed_world(tmp_path)
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys(*["down"] * 15))


def test_inbox_mixed_wide(snap_compare, tmp_path: Path) -> None:
    """At 160x45 the kind and more of the sender are whole: the width is shared by content."""
    from tuikit import mixed_world

    world, _tokens = mixed_world(tmp_path)
    assert snap_compare(TestApp(world.home), terminal_size=WIDE, run_before=_keys("down"))


def test_inbox_sorted_by_verdict(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=_keys("S"))


def test_inbox_sorted_by_verdict_wide(snap_compare, world: World) -> None:
    assert snap_compare(TestApp(world.home), terminal_size=WIDE, run_before=_keys("S"))


def _held_reject(monkeypatch, n: int):
    """Reject every row with `*` then r, the gate held after its third bundle (the bar mid-way)."""
    go, seen = hold_decisions(monkeypatch, after=3)

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("asterisk", "r")
        await pilot.pause()
        await pilot.press("tab", "enter")
        for _ in range(500):
            if len(seen) >= 3 and pilot.app.inbox.query_one("#bulk-bar").progress == 3:
                break
            await Pilot.pause(pilot, 0.02)
        await Pilot.pause(pilot, 0.1)

    return run_before, go


def test_bulk_reject_progress(snap_compare, world: World, monkeypatch) -> None:
    run_before, go = _held_reject(monkeypatch, 4)
    try:
        assert snap_compare(TestApp(world.home), terminal_size=SIZE, run_before=run_before)
    finally:
        go.set()


def test_bulk_reject_progress_wide(snap_compare, world: World, monkeypatch) -> None:
    run_before, go = _held_reject(monkeypatch, 4)
    try:
        assert snap_compare(TestApp(world.home), terminal_size=WIDE, run_before=run_before)
    finally:
        go.set()
