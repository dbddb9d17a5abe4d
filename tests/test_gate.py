"""The gate's human acts: accept, reject, refusals, time-of-check to time-of-use, reconcile, concurrency.

`World` (also used by test_gate_kill, test_gate_unattended and test_watch) is three real
homes: `me` (the receiver), `bob` (a contact `me` confirmed through the ceremony code),
`eve` (a key `me` never confirmed), and a `wire` folder bundles travel through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from gagetest import arrive, pair

from gage import bundle as bundle_mod
from gage.bundle import PAYLOAD
from gage.format.errors import NotFoundError
from gage.home import listing
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import STATES, Home
from gage.inbox import gate, send, store
from gage.trust import frame
from gage.trust import verdict as verdict_mod

# --- the world ----------------------------------------------------------------------------


@dataclass
class World:
    me: Home
    bob: Home
    eve: Home
    wire: Path
    files: Path
    n: int = 0

    def _file(self, text: str) -> Path:
        self.n += 1
        d = self.files / f"f{self.n}"
        d.mkdir(parents=True)
        p = d / "note.txt"
        p.write_text(text, encoding="utf-8")
        return p

    def make(self, sender: Home, text: str = "hello", *, kind: str = "share", parent: str | None = None) -> str:
        """A bundle made by `sender` (replying to `parent`, which it must hold), copied to the wire."""
        if parent is not None and listing.find(sender, parent) is None:
            store.import_bundle(sender, self.wire / parent)
        m, _ = send.create(sender, [self._file(text)], kind=kind, parent=parent, copy_to=self.wire)
        return m.id

    def deliver(self, bundle_id: str) -> str:
        return arrive(self.me, self.wire / bundle_id).id

    def pending_from(self, sender: Home, text: str = "hello", **kw: object) -> str:
        return self.deliver(self.make(sender, text, **kw))  # type: ignore[arg-type]

    def where(self, bundle_id: str) -> list[str]:
        return [s for s in STATES if (self.me.state_dir(s) / bundle_id).is_dir()]


@pytest.fixture(name="world")
def world_fixture(make_home: Callable[[str], Home], tmp_path: Path) -> World:
    me, bob, eve = make_home("me"), make_home("bob"), make_home("eve")
    pair(me, "bob", bob)
    pair(bob, "me", me)
    return World(me=me, bob=bob, eve=eve, wire=tmp_path / "wire", files=tmp_path / "files")


def accepted_entries(home: Home, bundle_id: str) -> list[dict]:
    return [e for e in home.journal.entries() if e.get("event") == "accepted" and e.get("bundle") == bundle_id]


def staging_left(home: Home) -> list[str]:
    d = gate.staging_dir(home)
    return os.listdir(d) if d.exists() else []


def flip_payload_byte(path: Path) -> Path:
    f = path / PAYLOAD / "note.txt"
    data = bytearray(f.read_bytes())
    data[0] ^= 0x01
    f.write_bytes(bytes(data))
    return f


# --- accept ---------------------------------------------------------------------------------


def test_accept_verified_moves_and_journals(world: World, gage) -> None:
    bid = world.pending_from(world.bob, "from bob")
    r = gage(world.me, "accept", bid)
    assert r.code == 0, r.err
    assert "accepted" in r.out and "verified" in r.out
    assert world.where(bid) == ["accepted"]
    assert bundle_mod.check(world.me.state_dir("accepted") / bid, expect_name=True).ok
    [e] = accepted_entries(world.me, bid)
    assert e["how"] == "human" and e["verdict"] == "verified" and e["kind"] == "share"
    assert e["sender"] == world.bob.identity.key_text
    assert verify_journal(world.me.journal).ok
    assert staging_left(world.me) == []
    v = verdict_mod.compute(world.me, listing.find(world.me, bid))
    assert v.accepted_how == "human"


def test_accept_api_result(world: World) -> None:
    bid = world.pending_from(world.bob)
    res = gate.accept(world.me, bid)
    assert isinstance(res, gate.AcceptResult)
    assert (res.id, res.how, res.verdict.verdict, res.verdict.state) == (bid, "human", "verified", "accepted")


def test_invalid_bundle_refused_and_left_whole_in_pending(world: World, gage) -> None:
    bid = world.pending_from(world.bob)
    flip_payload_byte(world.me.state_dir("pending") / bid)
    before = (world.me.state_dir("pending") / bid / PAYLOAD / "note.txt").read_bytes()
    r = gage(world.me, "accept", bid)
    assert r.code == 9
    assert "invalid" in r.err and "payload/note.txt" in r.err
    assert world.where(bid) == ["pending"]
    assert (world.me.state_dir("pending") / bid / PAYLOAD / "note.txt").read_bytes() == before
    assert accepted_entries(world.me, bid) == []
    assert staging_left(world.me) == []
    with pytest.raises(gate.InvalidBundleError):
        gate.accept(world.me, bid, unverified=True)  # the flag is about the sender, never about bad bytes


def test_unverified_needs_the_flag_and_is_journaled_as_such(world: World, gage) -> None:
    bid = world.pending_from(world.eve, "from someone unconfirmed")
    r = gage(world.me, "accept", bid)
    assert r.code == 9
    assert "not a confirmed contact" in r.err and "--unverified" in r.err
    assert world.where(bid) == ["pending"]
    assert accepted_entries(world.me, bid) == []

    r = gage(world.me, "accept", bid, "--unverified")
    assert r.code == 0, r.err
    assert "SENDER UNVERIFIED" in r.out
    assert world.where(bid) == ["accepted"]
    [e] = accepted_entries(world.me, bid)
    assert e["how"] == "human-unverified" and e["verdict"] == "unverified"
    v = verdict_mod.compute(world.me, listing.find(world.me, bid))
    state = next(f.value for f in frame.fields(v) if f.label == "state")
    assert "sender unverified" in state


def test_verified_with_unverified_flag_is_plain_human(world: World) -> None:
    bid = world.pending_from(world.bob)
    assert gate.accept(world.me, bid, unverified=True).how == "human"


def test_reject_with_reason(world: World, gage) -> None:
    bid = world.pending_from(world.eve)
    r = gage(world.me, "reject", bid, "--why", "not expecting this\x1b[2J")
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\\x1b" in r.out
    assert world.where(bid) == ["rejected"]
    [e] = [e for e in world.me.journal.entries() if e.get("event") == "rejected"]
    assert e["bundle"] == bid and e["why"] == "not expecting this\x1b[2J" and e["sender"] == world.eve.identity.key_text
    assert gate.journal_states(world.me)[bid] == "rejected"


def test_already_accepted_and_already_rejected(world: World, gage) -> None:
    a = world.pending_from(world.bob, "a")
    b = world.pending_from(world.bob, "b")
    gate.accept(world.me, a)
    gate.reject(world.me, b)
    for args, word in (
        (("accept", a), "already accepted"),
        (("reject", a), "already accepted"),
        (("accept", b), "already rejected"),
        (("reject", b), "already rejected"),
    ):
        r = gage(world.me, *args)
        assert r.code == 9 and word in r.err, (args, r.err)
    with pytest.raises(gate.AlreadyError, match="already accepted"):
        gate.accept(world.me, a)
    assert world.where(a) == ["accepted"] and world.where(b) == ["rejected"]
    assert len(accepted_entries(world.me, a)) == 1


def test_prefixes_unknown_and_ambiguous(world: World, gage) -> None:
    ids = [world.pending_from(world.bob, f"n{i}") for i in range(2)]
    r = gage(world.me, "accept", ids[0][:8])
    assert r.code == 0 and world.where(ids[0]) == ["accepted"]
    assert gage(world.me, "accept", "0123456789abcdef0").code == 8
    assert gage(world.me, "accept", "not-hex").code == 8
    # Make two pending bundles share a first hex digit (17 ids must), then use that digit.
    by_first: dict[str, list[str]] = {}
    i = 0
    while not any(len(v) > 1 for v in by_first.values()):
        bid = world.pending_from(world.bob, f"m{i}")
        i += 1
        by_first.setdefault(bid[0], []).append(bid)
    digit = next(k for k, v in by_first.items() if len(v) > 1)
    r = gage(world.me, "accept", digit)
    assert r.code == 8 and "at least 4 hex digits" in r.err  # too short while more than one is held

    real = listing.MIN_PREFIX
    listing.MIN_PREFIX = 1  # to reach the ambiguity a short prefix has
    try:
        r = gage(world.me, "accept", digit)
    finally:
        listing.MIN_PREFIX = real
    assert r.code == 8 and "ambiguous" in r.err
    assert all(world.where(b) == ["pending"] for b in by_first[digit])
    with pytest.raises(NotFoundError):
        gate.reject(world.me, "ffff" * 16)


# --- time of check, time of use -----------------------------------------------------------


def test_changed_after_review_is_not_accepted(world: World) -> None:
    bid = world.pending_from(world.bob, "the reviewed text")
    reviewed = verdict_mod.compute(world.me, listing.find(world.me, bid))
    assert reviewed.verdict == "verified"
    # After the person read "verified", one payload byte changes in pending.
    flip_payload_byte(world.me.state_dir("pending") / bid)
    with pytest.raises(gate.InvalidBundleError, match="payload/note.txt"):
        gate.accept(world.me, bid)
    assert world.where(bid) == ["pending"]
    assert accepted_entries(world.me, bid) == []
    assert staging_left(world.me) == []


def test_writer_by_path_cannot_reach_the_bytes_being_accepted(world: World, monkeypatch) -> None:
    """Once staged, the pending path is gone: a write through it fails instead of changing what lands."""
    bid = world.pending_from(world.bob, "original")
    target = world.me.state_dir("pending") / bid / PAYLOAD / "note.txt"
    monkeypatch.setenv(gate.SLOW_ENV, "0.3")
    outcome: dict[str, object] = {}

    def meddle() -> None:
        staged = gate.staging_dir(world.me) / bid
        deadline = time.monotonic() + 120  # a cap for a busy machine; the loop ends when staged
        while not staged.exists() and time.monotonic() < deadline:
            time.sleep(0.001)
        try:
            with open(target, "r+b") as f:
                f.write(b"X")
            outcome["wrote"] = True
        except FileNotFoundError:
            outcome["wrote"] = False

    t = threading.Thread(target=meddle)
    t.start()
    gate.accept(world.me, bid)
    t.join()
    assert outcome == {"wrote": False}
    assert bundle_mod.check(world.me.state_dir("accepted") / bid, expect_name=True).ok


def test_hard_linked_payload_is_refused(world: World, tmp_path: Path) -> None:
    bid = world.pending_from(world.bob)
    os.link(world.me.state_dir("pending") / bid / PAYLOAD / "note.txt", tmp_path / "outside-handle")
    with pytest.raises(gate.InvalidBundleError, match="hard link"):
        gate.accept(world.me, bid)
    assert world.where(bid) == ["pending"]


# --- reconcile --------------------------------------------------------------------------


def test_reconcile_returns_staged_bundle_to_pending(world: World) -> None:
    bid = world.pending_from(world.bob)
    gate.staging_dir(world.me).mkdir(parents=True, exist_ok=True)
    os.rename(world.me.state_dir("pending") / bid, gate.staging_dir(world.me) / bid)  # a kill after staging
    notes = gate.reconcile(world.me)
    assert len(notes) == 1 and "back in pending" in notes[0]
    assert world.where(bid) == ["pending"] and staging_left(world.me) == []
    [e] = [e for e in world.me.journal.entries() if e.get("event") == "reconciled"]
    assert e["bundle"] == bid and e["state"] == "pending" and e["found"] == "staging"
    assert gate.reconcile(world.me) == []  # idempotent
    assert verify_journal(world.me.journal).ok


def test_reconcile_returns_unjournaled_accept_to_pending(world: World, gage) -> None:
    """A bundle in accepted with no journaled accept (a kill before the journal line, or a bypass)."""
    bid = world.pending_from(world.bob)
    os.rename(world.me.state_dir("pending") / bid, world.me.state_dir("accepted") / bid)
    r = gage(world.me, "accept", bid)  # every gate operation reconciles first, and says so
    assert "reconciled" in r.err and "no journaled accept" in r.err
    assert r.code == 0 and world.where(bid) == ["accepted"]
    events = [e["event"] for e in world.me.journal.entries() if e.get("bundle") == bid]
    assert events[-2:] == ["reconciled", "accepted"]
    assert gate.reconcile(world.me) == []


def test_reconcile_records_unjournaled_reject_and_missing_bundles(world: World) -> None:
    a = world.pending_from(world.bob, "a")
    b = world.pending_from(world.bob, "b")
    gate.accept(world.me, b)
    os.rename(world.me.state_dir("pending") / a, world.me.state_dir("rejected") / a)  # a kill before the journal line
    shutil.rmtree(world.me.state_dir("accepted") / b)  # removed behind gage's back
    notes = gate.reconcile(world.me)
    assert len(notes) == 2
    states = gate.journal_states(world.me)
    assert states[a] == "rejected" and states[b] == "missing"
    assert gate.reconcile(world.me) == []


def test_reconcile_drops_staged_duplicate_of_a_reimported_bundle(world: World) -> None:
    bid = world.pending_from(world.bob)
    gate.staging_dir(world.me).mkdir(parents=True, exist_ok=True)
    os.rename(world.me.state_dir("pending") / bid, gate.staging_dir(world.me) / bid)
    world.deliver(bid)  # imported again before anything reconciled
    notes = gate.reconcile(world.me)
    assert len(notes) == 1 and "dropped" in notes[0]
    assert world.where(bid) == ["pending"] and staging_left(world.me) == []


# --- concurrency ------------------------------------------------------------------------


def test_concurrent_accepts_exactly_one_wins(world: World) -> None:
    bid = world.pending_from(world.bob)
    env = {**os.environ, "GAGE_HOME": str(world.me.root), gate.SLOW_ENV: "0.05"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", "accept", bid[: 10 + i]],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(5)
    ]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    codes = sorted(c for c, _, _ in results)
    assert codes == [0, 9, 9, 9, 9], results
    assert all("already accepted" in e for c, _, e in results if c == 9)
    assert world.where(bid) == ["accepted"]
    assert len(accepted_entries(world.me, bid)) == 1
    assert verify_journal(world.me.journal).ok
    assert staging_left(world.me) == []


def test_reconcile_removes_stale_scratch_copies_but_not_fresh_ones(make_home) -> None:
    """A killed import leaves tmp/import-*; reconcile clears it once it is old, never a copy in progress."""
    home = make_home("me")
    stale = home.staging / "import-0000aaaa"
    fresh = home.staging / "import-1111bbbb"
    for d in (stale, fresh):
        (d / "b" / "payload").mkdir(parents=True)
        (d / "b" / "manifest.json").write_bytes(b"{}")
    old = time.time() - gate.STALE_SCRATCH_SECONDS - 60
    os.utime(stale, (old, old))
    notes = gate.reconcile(home)
    assert not stale.exists()
    assert fresh.exists()
    assert any("import-0000aaaa" in n for n in notes)


@pytest.mark.parametrize("prefix", ["import-", "import-a2a-", "build-", "discard-", "statement-"])
def test_every_scratch_copy_gage_makes_is_tidied_once_stale(make_home, prefix: str) -> None:
    """One list of scratch prefixes (gage.home.layout.SCRATCH_PREFIXES) for reconcile and its marker: a killed
    `gage key retire` leaves tmp/statement-*, which was in neither list and stayed forever."""
    home = make_home("me")
    stale = home.staging / f"{prefix}0000aaaa"
    (stale / "payload").mkdir(parents=True)
    old = time.time() - gate.STALE_SCRATCH_SECONDS - 60
    os.utime(stale, (old, old))
    notes = gate.reconcile(home)
    assert not stale.exists()
    assert any(stale.name in n for n in notes)


def test_the_hard_link_walk_before_accepting_is_bounded(make_home, monkeypatch) -> None:
    home = make_home("me")
    tree = home.staging / "tree"
    for i in range(30):
        (tree / f"d{i}").mkdir(parents=True)
    linked = tree / "d0" / "f"
    linked.write_bytes(b"x")
    os.link(linked, tree / "d1" / "f")
    assert gate._extra_links(tree)[:2] == ["d0/f", "d1/f"]
    monkeypatch.setattr(gate, "LINK_SCAN_LIMIT", 5)
    assert gate._extra_links(tree)[-1].startswith("(more than 5 entries")
