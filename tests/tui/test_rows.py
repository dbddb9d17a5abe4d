"""The inbox's rows: computed in a thread worker, cached only for display, and never moving
the cursor to a different bundle under the person.

Tests that must see a reload in flight hold the worker at a `threading.Event`, so what
they check never depends on how fast this machine hashes.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
from test_live import wait_for, watcher_ready
from tuikit import (
    Clock,
    TestApp,
    World,
    drop_in,
    frozen,
    identity,
    make_bundle,
    make_home,
    pair,
    screen_text,
)

from gage.bundle import PAYLOAD
from gage.home import listing
from gage.home.cache import checks
from gage.home.cache.checks import CheckCache
from gage.inbox import gate, send, store
from gage.inbox import rows as rows_mod
from gage.tui import inbox_sync as sync_mod
from gage.tui.bundle_view import BundleScreen
from gage.tui.gate_dialog import GateDialog
from gage.tui.help import HelpScreen
from gage.tui.rows import load_rows

SIZE = (80, 24)


def top_bundle(world: World, nonce: int, subject: str) -> Path:
    """A valid bundle from alice that sorts first (newest) when dropped into pending."""
    return make_bundle(world.alice, world.wire, {"new.txt": f"{subject}\n".encode()}, subject=subject, nonce=nonce, created="2026-03-14T14:59:00Z")


def hold_loads(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """From now on every sync of the inbox waits, before it looks at the home, until the returned event is set."""
    release = threading.Event()
    real = sync_mod._sync

    def held(*args, **kwargs):
        assert release.wait(30), "the test never released the row worker"
        return real(*args, **kwargs)

    monkeypatch.setattr(sync_mod, "_sync", held)
    return release


async def until_loaded(app: TestApp) -> None:
    assert await wait_for(lambda: not app.inbox.loading, 15.0) is not None, "the rows never arrived"


# --- cursor stability -------------------------------------------------------------------


async def test_live_reloads_keep_the_cursor_on_the_same_bundle(world: World) -> None:
    app = TestApp(world.home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        order = list(app.inbox.rows)
        target = world.ids["review"]
        assert order.index(target) == 2
        await pilot.press("down", "down")
        assert app.inbox.current_id() == target
        await watcher_ready(app, world)  # probes the inbox: more reloads
        await pilot.pause()
        assert app.inbox.current_id() == target
        for i in range(3):
            src = top_bundle(world, 70 + i, f"arrived while you looked {i}")
            drop_in(src, world.home)
            assert await wait_for(lambda src=src: src.name in app.inbox.rows, 5.0) is not None
            # Each arrival lands above the highlighted row; the cursor follows its bundle, not its index.
            assert list(app.inbox.rows).index(target) == 3 + i
            assert app.inbox.current_id() == target
            app.inbox.reload()
            app.inbox.reload()  # asked twice while the first runs: folded into one more load
            await pilot.pause()
            assert app.inbox.current_id() == target
        assert target[:12] in str(app.inbox.query_one("#inbox-detail").content)  # the detail line agrees


async def test_a_bundle_that_leaves_moves_the_cursor_to_its_neighbour(world: World) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        order = list(app.inbox.rows)  # invalid, hostile, review, notes
        await pilot.press("down", "down")
        assert app.inbox.current_id() == world.ids["review"]
        drop_in(top_bundle(world, 80, "new on top"), world.home)
        gate.accept(world.home, world.ids["review"])  # accepted elsewhere (the CLI), under the person
        app.inbox.reload()
        await pilot.pause()
        assert world.ids["review"] not in app.inbox.rows
        assert app.inbox.current_id() == order[3] == world.ids["notes"]  # the next one down, not "index 2"
        gate.accept(world.home, world.ids["notes"])  # the last row leaves: the one above it
        app.inbox.reload()
        await pilot.pause()
        assert app.inbox.current_id() == world.ids["hostile"]


async def test_a_key_pressed_during_a_reload_acts_on_the_highlighted_bundle(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")
        review = world.ids["review"]
        assert app.inbox.current_id() == review
        release = hold_loads(monkeypatch)
        new = top_bundle(world, 81, "lands during the reload")
        drop_in(new, world.home)
        app.inbox.reload()
        await asyncio.sleep(0.05)
        assert app.inbox.loading and new.name not in app.inbox.rows  # the reload is in flight
        await pilot.press("a")  # the dialog names the highlighted bundle; one deliberate confirmation
        assert isinstance(app.screen, GateDialog) and review[:12] in screen_text(app)
        await pilot.press("shift+tab", "enter")
        assert await wait_for(lambda: listing.find(world.home, review).state == "accepted") is not None
        assert listing.find(world.home, new.name).state == "pending"
        release.set()
        await until_loaded(app)
        await pilot.pause()
        assert new.name in app.inbox.rows and review not in app.inbox.rows
        assert app.inbox.current_id() == world.ids["notes"]  # review's neighbour


async def test_down_pressed_while_the_first_rows_load_is_not_lost(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    release = hold_loads(monkeypatch)
    app = TestApp(world.home, watch=True)
    async with app.raw_pilot(size=SIZE) as pilot:
        assert app.inbox.rows == {} and app.inbox.loading  # nothing shown yet
        await pilot.press("down")
        release.set()
        await until_loaded(app)
        await pilot.pause()
        second = list(app.inbox.rows)[1]
        assert app.inbox.current_id() == second
        # The watcher's first events and more reloads do not put the cursor back on top.
        await watcher_ready(app, world)
        app.inbox.reload()
        await until_loaded(app)
        await pilot.pause()
        assert app.inbox.current_id() == second


async def test_down_pressed_right_after_mount_lands_on_the_second_row(world: World) -> None:
    """No holding: whether or not the rows are there yet when Down arrives, it counts."""
    app = TestApp(world.home, watch=True)
    async with app.raw_pilot(size=SIZE) as pilot:
        await pilot.press("down")
        await until_loaded(app)
        await pilot.pause()
        second = list(app.inbox.rows)[1]
        assert app.inbox.current_id() == second
        await watcher_ready(app, world)
        await until_loaded(app)
        await pilot.pause()
        assert app.inbox.current_id() == second


# --- responsiveness ---------------------------------------------------------------------

MANY = 150


@pytest.fixture
def big_home(tmp_path: Path) -> World:
    clock = Clock()
    with frozen(clock):
        home = make_home(tmp_path / "you", "you", 1)
        alice = identity("alice", 2)
        pair(home, "alice", alice.key)
    wire = tmp_path / "wire"
    world = World(home=home, wire=wire, alice=alice, stranger=identity("alice", 3))
    pending = home.state_dir("pending")
    for i in range(MANY):
        b = make_bundle(alice, wire, {"data.bin": bytes([i % 256]) * 65536}, subject=f"bundle {i:03d}", nonce=1000 + i)
        os.rename(b, pending / b.name)
    return world


def trust_fresh_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the check cache remember bundles written a moment ago. It waits out RACY_NS (2 s)
    after a tree's last change because a coarse filesystem clock could hide a write in the
    same tick; these tests make their bundles just before they look, on a fine clock."""
    monkeypatch.setattr(checks, "RACY_NS", 0)


async def test_keys_are_handled_while_a_large_inbox_loads(big_home: World, monkeypatch: pytest.MonkeyPatch) -> None:
    trust_fresh_trees(monkeypatch)
    main = threading.get_ident()
    threads: set[int] = set()
    halfway = threading.Event()
    release = threading.Event()
    real = rows_mod.compute
    calls = [0]

    def compute(*args, **kwargs):
        threads.add(threading.get_ident())
        if calls[0] == MANY // 2:
            halfway.set()
            assert release.wait(30), "the test never released the row worker"
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(rows_mod, "compute", compute)
    app = TestApp(big_home.home)
    async with app.raw_pilot(size=SIZE) as pilot:
        assert await wait_for(halfway.is_set, 15.0) is not None
        # Half the verdicts are computed and the worker is still in the middle of its load:
        # every row is already shown (checking), and the app still handles keys and changes screens.
        assert app.inbox.loading
        assert await wait_for(lambda: len(app.inbox.rows) == MANY, 30.0) is not None
        waiting = [b for b, r in app.inbox.rows.items() if r.verdict is None]
        assert waiting  # (the rows in view may be done already: they are checked first)
        table = app.inbox.query_one("#inbox-table")
        assert "checking" in table.get_cell(waiting[-1], "verdict").plain
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert app.screen is app.inbox
        await pilot.press("down")
        release.set()
        await until_loaded(app)
        await pilot.pause()
        table = app.inbox.query_one("#inbox-table")
        assert table.row_count == MANY and len(app.inbox.rows) == MANY
        assert f"1 Pending ({MANY})" in screen_text(app)
        assert app.inbox.current_id() == list(app.inbox.rows)[1]  # the Down pressed during the load counted
        assert threads and main not in threads  # every verdict was computed off the UI thread
        # A refresh with nothing changed re-hashes nothing.
        misses = app.inbox.cache.misses
        app.inbox.reload()
        await until_loaded(app)
        assert app.inbox.cache.misses == misses and app.inbox.cache.hits >= MANY


# --- the check cache --------------------------------------------------------------------


def test_the_cache_rechecks_any_changed_file(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    trust_fresh_trees(monkeypatch)
    home = world.home
    cache = CheckCache()

    def verdicts() -> dict[str, str]:
        return {r.id: r.verdict.verdict for r in load_rows(home, "pending", cache=cache)}

    first = verdicts()
    bad = sum(v == "invalid" for v in first.values())  # never remembered: checked afresh each time, so a repair shows
    assert bad == 1 and cache.misses == 4 and cache.hits == 0 and len(cache) == 3
    assert verdicts() == first and cache.misses == 4 + bad and cache.hits == 3

    review = listing.find(home, world.ids["review"]).path
    target = review / PAYLOAD / "patch" / "NOTES.txt"
    st = target.stat()
    data = target.read_bytes()
    target.write_bytes(data.upper())  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the mtime put back
    misses = cache.misses
    assert verdicts()[world.ids["review"]] == "invalid"  # ctime gave it away: checked again
    assert cache.misses == misses + 1 + bad

    target.write_bytes(data)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert verdicts()[world.ids["review"]] == "verified"

    (review / PAYLOAD / "extra.txt").write_bytes(b"smuggled\n")  # a new file
    assert verdicts()[world.ids["review"]] == "invalid"
    os.unlink(review / PAYLOAD / "extra.txt")
    assert verdicts()[world.ids["review"]] == "verified"
    assert len(cache) == 3

    gate.accept(home, world.ids["review"])  # moved: forgotten for pending, checked afresh for accepted
    assert world.ids["review"] not in verdicts() and len(cache) == 2
    accepted = load_rows(home, "accepted", cache=cache)
    assert [r.verdict.verdict for r in accepted] == ["verified"] and len(cache) == 3


async def test_the_bundle_view_never_uses_the_cache(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """If a change ever slipped past the cache's key, the list could be stale; the view, never."""
    first: dict[object, object] = {}
    real = CheckCache.check

    def blind(self, target, **kwargs):  # a cache that never sees a change
        if target.path not in first:
            first[target.path] = real(self, target, **kwargs)
        return first[target.path]

    monkeypatch.setattr(CheckCache, "check", blind)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        bid = world.ids["notes"]
        assert app.inbox.rows[bid].verdict.verdict == "verified"
        (listing.find(world.home, bid).path / PAYLOAD / "notes.md").write_bytes(b"Minutes, rewritten.\n")
        app.inbox.reload()
        await pilot.pause()
        assert app.inbox.rows[bid].verdict.verdict == "verified"  # the (blinded) check cache
        app.open_bundle(bid)
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        assert app.screen.verdict.verdict == "invalid" and "INVALID" in screen_text(app)


# --- unattended accepts -----------------------------------------------------------------


def accept_a_reply_unattended(world: World, tmp_path: Path) -> str:
    """I ask alice a question; her verified reply is accepted by the budgeted unattended rule."""
    question = tmp_path / "question.txt"
    question.write_text("Which timeout?\n")
    q, _ = send.create(world.home, [question], kind="question", to=["alice"])
    reply = make_bundle(
        world.alice, world.wire, {"answer.txt": b"30 seconds.\n"}, kind="answer", subject="Re: timeout", parent=q.id, nonce=90
    )
    bid = store.import_bundle(world.home, reply).id
    result = gate.accept_unattended(world.home, bid, budget=1)
    assert result.ok, result.reason
    return bid


async def test_unattended_accepts_are_marked_in_the_list_and_the_view(world: World, tmp_path: Path) -> None:
    auto = accept_a_reply_unattended(world, tmp_path)
    gate.accept(world.home, world.ids["review"])  # a person's accept, for contrast
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        assert set(app.inbox.rows) == {auto, world.ids["review"]}
        table = app.inbox.query_one("#inbox-table")
        assert table.get_cell(auto, "verdict").plain == "✔ unattended"
        assert table.get_cell(world.ids["review"], "verdict").plain == "✔ verified"
        await pilot.press("home")
        for _ in range(3):
            if app.inbox.current_id() == auto:
                break
            await pilot.press("down")
        assert app.inbox.current_id() == auto
        assert "accepted UNATTENDED" in str(app.inbox.query_one("#inbox-detail").content)
        assert "✔ unattended" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        bar = str(app.screen.query_one("#verdict-bar").content)
        assert "accepted UNATTENDED" in bar and "VERIFIED" in bar
        assert "UNATTENDED: by the watcher's budgeted rule" in screen_text(app)  # the frame's state line
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("home")
        for _ in range(3):
            if app.inbox.current_id() == world.ids["review"]:
                break
            await pilot.press("down")
        assert app.inbox.current_id() == world.ids["review"]
        await pilot.press("enter")
        await pilot.pause()
        assert "UNATTENDED" not in str(app.screen.query_one("#verdict-bar").content)


def _regex_time(text: str | None) -> object:
    """What parse_time answered when it read times with a pattern: the reference it must agree with."""
    import re
    from datetime import UTC, datetime

    found = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z", text or "")
    if found is None:
        return None
    try:
        return datetime(*map(int, found.groups()), tzinfo=UTC)
    except ValueError:
        return None


TIMES = [
    None, "", "Z", "2026-03-14T15:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
    "2026-02-29T00:00:00Z", "2028-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z",
    "2026-03-14T24:00:00Z", "2026-03-14T23:59:60Z", "2026-03-14T15:60:00Z",
    "2026-03-14t15:00:00Z", "2026-03-14T15:00:00z", "2026-03-14 15:00:00Z", "2026-03-14X15:00:00Z",
    "2026-03-14T15:00:00", "2026-03-14T15:00:00+00:00", "2026-03-14T15:00:00+01:00Z", "2026-03-14T15:00:00.000Z",
    "2026-03-14T15:00:00.5Z", "2026-03-14T15:00Z", "2026-03-14T15Z", "2026-03-14Z", "2026-03-14",
    "20260314T150000Z", "2026-03-14T150000Z", "2026-W11-6T15:00:00Z", "2026-073T15:00:00Z", "2026-03-14T150000.5Z",
    " 2026-03-14T15:00:00Z", "2026-03-14T15:00:00Z ", "2026-03-14T15:00:00Z\n", "+2026-03-14T15:00:00Z",
    "２０２６-03-14T15:00:00Z", "٢٠٢٦-03-14T15:00:00Z", "2026-03-14T15:00:00ZZ", "2026-03-14T15:00:00-00:00",
]


@pytest.mark.parametrize("text", TIMES)
def test_parse_time_reads_what_the_pattern_read(text: str | None) -> None:
    from gage.tui.rows import parse_time

    got, want = parse_time(text), _regex_time(text)
    assert got == want, (text, got, want)
    assert got is None or got.tzinfo is not None and got.utcoffset() == want.utcoffset()  # type: ignore[union-attr]


def test_parse_time_agrees_with_the_pattern_on_generated_text() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from gage.tui.rows import parse_time

    shaped = st.builds(
        lambda y, mo, d, sep, h, mi, s, tail: f"{y:04d}-{mo:02d}-{d:02d}{sep}{h:02d}:{mi:02d}:{s:02d}{tail}",
        st.integers(0, 9999), st.integers(0, 14), st.integers(0, 32), st.sampled_from("T t:"),
        st.integers(0, 25), st.integers(0, 61), st.integers(0, 61), st.sampled_from(["Z", "z", "", "+00:00", ".0Z", "Z\n"]),
    )
    loose = st.text(alphabet="0123456789-:TZW.+ ", max_size=24)

    @settings(max_examples=400, deadline=None)
    @given(st.one_of(shaped, loose))
    def agree(text: str) -> None:
        assert parse_time(text) == _regex_time(text), text

    agree()
