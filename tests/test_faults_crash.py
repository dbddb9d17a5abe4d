"""Issue 10, class 1: after a kill at any instant, every reader sees each bundle, whole, in exactly one state.

The crash states are made by hand here (the renames a killed `gage accept`/`reject` leaves);
`tests/test_soak.py` makes them with real SIGKILLs. Each reader opens the home the way the
CLI and the interface do (`Home.open`), and must show the bundle straight away: not "No
bundles" until some later accept happens to reconcile.
"""

from __future__ import annotations

import json
import os

from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)

from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import gate
from gage.inbox.opening import open_home, recover


def _stage_by_hand(world: World, bid: str) -> None:
    """What a `gage accept` killed after its first rename leaves: the bundle under the staging name."""
    sdir = gate.staging_dir(world.me)
    sdir.mkdir(parents=True, exist_ok=True)
    os.rename(world.me.state_dir("pending") / bid, sdir / bid)


def test_list_shows_a_bundle_left_staged_by_a_killed_accept(world: World, gage) -> None:  # noqa: ANN001
    bid = world.pending_from(world.bob, "staged")
    _stage_by_hand(world, bid)
    r = gage(world.me, "list", "--json")
    assert r.code == 0, r.err
    rows = json.loads(r.out)
    assert [(x["id"], x["state"]) for x in rows] == [(bid, "pending")]
    assert world.where(bid) == ["pending"]
    assert verify_journal(world.me.journal).ok


def test_verdict_and_read_find_a_staged_bundle(world: World, gage) -> None:  # noqa: ANN001
    bid = world.pending_from(world.bob, "staged too")
    _stage_by_hand(world, bid)
    r = gage(world.me, "verdict", bid[:10])
    assert r.code == 0, r.err
    _stage_by_hand(world, bid)
    r = gage(world.me, "read", bid[:10], "--pending")
    assert r.code == 0, r.err
    assert "staged too" in r.out


def test_a_bundle_in_accepted_without_its_journal_line_is_listed_as_pending(world: World, gage) -> None:  # noqa: ANN001
    """Killed between the landing rename and the journal line: not accepted, and no reader says it is."""
    bid = world.pending_from(world.bob, "landed, not journaled")
    os.rename(world.me.state_dir("pending") / bid, world.me.state_dir("accepted") / bid)
    rows = json.loads(gage(world.me, "list", "--json").out)
    assert [(x["id"], x["state"]) for x in rows] == [(bid, "pending")]


def test_opening_a_home_reconciles_and_the_next_gate_command_still_says_so(world: World, gage) -> None:  # noqa: ANN001
    bid = world.pending_from(world.bob, "noted")
    _stage_by_hand(world, bid)
    home = open_home(world.me.root)  # what the interface does at start
    assert world.where(bid) == ["pending"]
    assert home.reconciled and "interrupted" in home.reconciled[0]
    notes = list(home.reconciled)
    assert gate.reconcile(home) == notes  # handed on once (so `gage accept` still prints them), then gone
    assert gate.reconcile(home) == []


def test_a_reader_does_not_wait_for_ever_on_a_held_lock(world: World) -> None:
    """Another process mid-move holds the lock: opening waits a bounded time, then reads what is there."""
    import fcntl

    bid = world.pending_from(world.bob, "locked")
    fd = os.open(world.me.root / "lock", os.O_RDWR)
    try:
        # A different open file description: a conflicting flock, as another process's would be.
        fcntl.flock(fd, fcntl.LOCK_EX)
        home = Home(world.me.root)
        assert recover(home, timeout=0.2) == []
        assert world.where(bid) == ["pending"]
    finally:
        os.close(fd)


def test_a_read_only_home_is_still_read(world: World, gage, monkeypatch) -> None:  # noqa: ANN001
    bid = world.pending_from(world.bob, "ro")
    real_open = os.open

    def no_lock(path, flags, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if str(path).endswith("/lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", no_lock)
    r = gage(world.me, "list", "--json")
    assert r.code == 0, r.err
    assert [x["id"] for x in json.loads(r.out)] == [bid]


def test_two_kills_in_a_row_between_a_journal_line_and_its_head_still_verify(world: World, monkeypatch) -> None:
    """Found by bench/soak.py: `gage bundle` killed after its `sent` line, then `gage accept` killed
    after its `accepted` line: the head two behind read as "appended outside gage"."""
    from gage.home.journal.log import Journal

    journal = world.me.journal
    head = journal.head_path.read_bytes()
    journal.append("sent", bundle="a" * 64)
    journal.head_path.write_bytes(head)  # kill 1: the line is written, the head is not
    real = Journal._write_head
    calls: list[int] = []

    def dies_after_the_line(self: Journal, seq: int, digest: str) -> None:
        calls.append(seq)
        if seq == calls[0] and len(calls) == 1 and journal.path.read_bytes().count(b"b" * 64) == 0:
            real(self, seq, digest)  # the catch-up before the new line
            return
        raise OSError(5, "killed")  # kill 2: after the new line, before its head

    monkeypatch.setattr(Journal, "_write_head", dies_after_the_line)
    # The line is durable, so the append stands (spec/journal.md, "When an append has happened"):
    # the head's failure is told apart, not raised as if nothing had been written.
    journal.append("accepted", bundle="b" * 64)
    assert journal.head_error is not None
    monkeypatch.undo()
    report = verify_journal(journal)
    assert report.ok, report.problems
    assert any("interrupted" in n for n in report.notes)


def test_the_open_interface_lists_a_bundle_staged_after_it_started(world: World) -> None:
    """A kill while the interface is open: its next listing puts the bundle back, no restart needed."""
    from gage.tui.rows import load_rows

    bid = world.pending_from(world.bob, "staged while open")
    home = open_home(world.me.root)  # the interface opened the home before the kill
    _stage_by_hand(world, bid)
    rows = load_rows(home, "pending")
    assert [r.id for r in rows] == [bid]
    assert world.where(bid) == ["pending"]
