"""The row index (gage/home/cache/rowindex.py, issue 28) never trades truth for speed: after every kind
of change, the rows it serves equal a full recomputation (every bundle checked afresh, every
verdict computed) on the same home, and it really serves rows when nothing changed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gagetest import arrive, change_a_byte_keeping_mtime, later_clock, pair

from gage.home.cache import checks, rowindex, sealkey
from gage.home.cache.checks import CheckCache
from gage.home.layout import Home
from gage.home.listing import list_bundles
from gage.inbox import rows as rows_mod
from gage.inbox import send
from gage.inbox.listed import ListedRow, listed_of, listed_rows
from gage.inbox.rows import ORDER as STATE_ORDER
from gage.inbox.rows import InboxReader
from gage.trust import ceremony


def recomputed(home: Home) -> list[ListedRow]:
    """Every row from scratch: no check cache, no row index."""
    reader = InboxReader(home, cache=CheckCache(None, trusted=False))
    rows = reader.rows(list_bundles(home))
    rows.sort(key=lambda r: (STATE_ORDER[r.state], r.created or "", r.id))
    return [listed_of(r) for r in rows]


def kept(home: Home) -> int:
    with sqlite3.connect(home.cache / "rows.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM rows").fetchone()[0])


def served_from_index(home: Home, monkeypatch: pytest.MonkeyPatch) -> list[ListedRow]:
    """A listing that must not compute any row (each is in the index and unchanged)."""
    with monkeypatch.context() as m:
        m.setattr(rows_mod.InboxReader, "rows", lambda *_a, **_k: pytest.fail("a row was computed"))
        return listed_rows(home)


def same(home: Home) -> list[ListedRow]:
    got = listed_rows(home)
    assert got == recomputed(home)
    return got


def level(rows: list[ListedRow], bid: str) -> str:
    return next(r.level for r in rows if r.id == bid)


@pytest.fixture
def homes(make_home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    me, alice, eve = make_home("me"), make_home("alice"), make_home("eve")
    pair(me, "alice", alice)
    ids = {}
    for who, sender in (("alice1", alice), ("alice2", alice), ("eve", eve)):
        f = tmp_path / f"{who}.txt"
        f.write_text(f"from {who}\n" * 20)
        m, _ = send.create(sender, [f], kind="share", subject=who, copy_to=tmp_path / "wire")
        ids[who] = arrive(me, tmp_path / "wire" / m.id).id
    f = tmp_path / "mine.txt"
    f.write_text("mine\n")
    ids["mine"], _ = send.create(me, [f], kind="share", subject="mine")
    ids["mine"] = ids["mine"].id
    # The check cache remembers (and so the row index keeps) only trees older than its racy
    # window: its clock is moved on past it, so what these tests write is remembered at once.
    monkeypatch.setattr(checks, "now_ns", later_clock)
    return me, alice, eve, ids, tmp_path


def test_rows_from_the_index_equal_a_full_recomputation_after_every_kind_of_change(homes, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    me, alice, eve, ids, tmp_path = homes
    first = same(me)
    assert kept(me) == 4 and served_from_index(me, monkeypatch) == first
    assert level(first, ids["alice1"]) == "verified" and level(first, ids["eve"]) == "unverified"

    # A payload byte, the size and mtime put back: the folder's identity (its ctime) still changed.
    change_a_byte_keeping_mtime(me.state_dir("pending") / ids["alice1"] / "payload" / "alice1.txt")
    assert level(same(me), ids["alice1"]) == "invalid"

    # A contact confirmed, then forgotten: by the ceremony (which journals it), and by the
    # contacts file put back from a copy (which the journal never hears of).
    backup = me.contacts_path.read_bytes()
    ceremony.confirm(me, "eve", eve.identity.key, " ".join(" ".join(p) for p in ceremony.derive(eve.identity.key)))
    assert level(same(me), ids["eve"]) == "verified"
    me.contacts_path.write_bytes(backup)
    assert level(same(me), ids["eve"]) == "unverified"
    ceremony.confirm(me, "eve", eve.identity.key, " ".join(" ".join(p) for p in ceremony.derive(eve.identity.key)))
    assert level(same(me), ids["eve"]) == "verified"
    ceremony.unpair(me, "eve")
    assert level(same(me), ids["eve"]) == "unverified"

    # The authority file edited (by hand: any process, any editor).
    me.authority_path.write_text('[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Summarise it."\n')
    same(me)

    # A journal line appended by another process: an arrival recorded for a bundle, with its carrier.
    code = (
        "import sys; from gage.home.layout import Home; h = Home.open(sys.argv[1]);"
        "h.journal.append('received', bundle=sys.argv[2], transport={'carrier': 'a2a'}, sender=None, kind='share', parent=None, thread=None)"
    )
    before = next(r for r in listed_rows(me) if r.id == ids["alice2"])
    res = subprocess.run([sys.executable, "-c", code, str(me.root), ids["alice2"]], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    after = next(r for r in same(me) if r.id == ids["alice2"])
    assert (before.via, after.via) == (None, "a2a")

    # A key retired: alice's key, compromised, applied here.
    from gage.inbox import ownkey
    from gage.trust import retirement

    done = ownkey.retire(alice, reason="compromised", copy_to=tmp_path / "shared")
    assert done.bundle is not None and retirement.apply_bundle(me, tmp_path / "shared" / done.bundle.id).applied
    assert level(same(me), ids["alice2"]) == "unverified"

    # A decision in another process, then nothing changed: every row is served again (but the
    # damaged bundle's: a row with a problem is never kept, so a repair shows at once; it goes).
    from gage.bundle import readonly

    readonly.remove_tree(me.state_dir("pending") / ids["alice1"])
    res = subprocess.run([sys.executable, "-m", "gage", "--home", str(me.root), "reject", ids["eve"]], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    settled = same(me)
    assert [r.state for r in settled if r.id == ids["eve"]] == ["rejected"]
    same(me)
    assert served_from_index(me, monkeypatch) == settled


def test_a_damaged_or_missing_index_costs_only_time(homes) -> None:  # type: ignore[no-untyped-def]
    me, *_ = homes
    good = same(me)
    (me.cache / "rows.sqlite").write_bytes(b"not a database" * 100)
    for extra in ("-wal", "-shm"):
        (me.cache / f"rows.sqlite{extra}").unlink(missing_ok=True)
    assert listed_rows(me) == good
    (me.cache / "rows.sqlite").unlink()
    assert same(me) == good
    assert json.dumps([r.to_json() for r in good])  # the rows of `gage list --json`


def test_a_link_or_fifo_where_the_index_goes_is_never_followed(homes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    me, *_ = homes
    good = same(me)
    outside = tmp_path / "someone-elses.sqlite"
    outside.write_bytes(b"theirs")
    for name in ("rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
        (me.cache / name).unlink(missing_ok=True)
    (me.cache / "rows.sqlite").symlink_to(outside)
    assert listed_rows(me) == good
    assert outside.read_bytes() == b"theirs" and not (me.cache / "rows.sqlite").is_symlink()
    (me.cache / "rows.sqlite").unlink()
    os.mkfifo(me.cache / "rows.sqlite")
    assert listed_rows(me) == good  # no wait on a FIFO
    assert (me.cache / "rows.sqlite").is_file()


def test_the_kept_check_gives_the_fresh_verdict_and_only_for_the_same_tree(homes) -> None:  # type: ignore[no-untyped-def]
    from gage.home.listing import resolve
    from gage.inbox.listed import indexed_check
    from gage.trust import verdict as verdict_mod

    me, _alice, _eve, ids, _tmp = homes
    same(me)
    for bid in ids.values():
        stored = resolve(me, bid)
        kept_check = indexed_check(me, stored)
        assert kept_check is not None, bid
        assert verdict_mod.compute(me, stored, check=kept_check).to_json() == verdict_mod.compute(me, stored).to_json()
    stored = resolve(me, ids["alice1"])
    data = stored.path / "payload" / "alice1.txt"
    data.chmod(0o644)
    data.write_bytes(b"X" + data.read_bytes()[1:])
    assert indexed_check(me, stored) is None
    assert verdict_mod.compute(me, stored).verdict == "invalid"


def test_a_listing_of_one_state_carries_no_other_states_stale_row_past_the_journal(homes) -> None:  # type: ignore[no-untyped-def]
    """`gage list --state pending` reads the journal lines since the rows were kept and moves the
    index's stamp on: a row of another state those lines named must not survive it."""
    me, _alice, _eve, ids, _tmp = homes
    from gage.inbox import gate

    gate.accept(me, ids["alice1"])
    same(me)  # every row kept, the accepted one too
    accepted_before = next(r for r in listed_rows(me) if r.id == ids["alice1"])
    me.journal.append("received", bundle=ids["alice1"], transport={"carrier": "a2a"}, sender=None, kind="share", parent=None, thread=None)
    listed_rows(me, ("pending",))  # reads that line, and stamps the index past it
    after = next(r for r in same(me) if r.id == ids["alice1"])
    assert (accepted_before.via, after.via) == (None, "a2a")


def test_the_interfaces_arrival_order_from_the_index_is_the_journals(homes) -> None:  # type: ignore[no-untyped-def]
    # The interface orders its first screenful by arrival read from the row index
    # (gage.tui.inbox_sync.indexed_arrivals): the same times the journal gives, before and
    # after a journal line names a bundle since the index's stamp; nothing before a listing.
    from gage.tui.inbox_sync import indexed_arrivals

    me, _alice, _eve, ids, _tmp = homes
    present = {s.id: s for s in list_bundles(me, ("pending",))}

    def journal() -> dict[str, str]:
        facts = me.journal.index.facts()
        return {i: t for i in present if (t := facts.first_received.get(i)) is not None}

    assert indexed_arrivals(me, "pending", present, me.journal.index.facts()) is None  # no index yet
    listed_rows(me)
    got = indexed_arrivals(me, "pending", present, me.journal.index.facts())
    assert got == journal() and set(got) == set(present)
    with sqlite3.connect(me.cache / "rows.sqlite") as db:  # an arrival changed in place, its seal not: the journal's is used
        db.execute("UPDATE rows SET arrived = '2000-01-01T00:00:00Z' WHERE id = ?", (ids["alice1"],))
    assert indexed_arrivals(me, "pending", present, me.journal.index.facts()) == journal()
    planted = rowindex._arrival_text("pending", ids["alice1"], "2000-01-01T00:00:00Z")
    with sqlite3.connect(me.cache / "rows.sqlite") as db:  # sealed with the home's key: only a stamp's journal tail corrects it
        db.execute("UPDATE rows SET arrived_seal = ? WHERE id = ?", (sealkey.seal(sealkey.home_key(me.root), planted), ids["alice1"]))
    assert indexed_arrivals(me, "pending", present, me.journal.index.facts())[ids["alice1"]] == "2000-01-01T00:00:00Z"  # type: ignore[index]
    me.journal.append("received", bundle=ids["alice1"], source="again")  # named since the stamp: the journal answers
    got = indexed_arrivals(me, "pending", present, me.journal.index.facts())
    assert got == journal() and got[ids["alice1"]] != "2000-01-01T00:00:00Z"  # type: ignore[index]


def test_a_listing_that_changes_nothing_writes_nothing(homes, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`gage list` is a read: once the index holds every row and nothing changed, it must not
    commit (each commit is an fsync of the WAL and a checkpoint: 20-30 ms of a 5-bundle listing)."""
    me, alice, _eve, ids, tmp_path = homes
    first = listed_rows(me)
    index = me.cache / "rows.sqlite"
    before = (index.stat().st_mtime_ns, index.read_bytes())
    time.sleep(0.05)
    assert served_from_index(me, monkeypatch) == first
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before
    assert not (me.cache / "rows.sqlite-wal").exists()
    # A change is still kept: a new bundle's row is computed once, then served.
    f = tmp_path / "late.txt"
    f.write_text("late\n")
    m, _ = send.create(alice, [f], kind="share", subject="late", copy_to=tmp_path / "wire2")
    arrive(me, tmp_path / "wire2" / m.id)
    assert same(me) != first
    assert index.stat().st_mtime_ns != before[0]
    assert served_from_index(me, monkeypatch) == recomputed(me)


def _computed_ids(home: Home, monkeypatch: pytest.MonkeyPatch) -> tuple[list[ListedRow], set[str]]:
    """A listing, and the ids whose rows it had to compute (not take from the index)."""
    computed: set[str] = set()
    real = rows_mod.InboxReader.rows

    def spy(self, stored, *a, **k):  # type: ignore[no-untyped-def]
        computed.update(s.id for s in stored)
        return real(self, stored, *a, **k)

    with monkeypatch.context() as m:
        m.setattr(rows_mod.InboxReader, "rows", spy)
        return listed_rows(home), computed


def test_a_file_added_or_a_manifest_swapped_is_seen_before_a_row_is_shown(homes, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The freshness proof of a kept row: a file added anywhere in the folder, and a manifest
    swapped (another bundle's, or the same bytes under a new inode), each send the row to be
    computed again, and what it shows is what a full recomputation shows."""
    me, _alice, _eve, ids, _tmp = homes
    same(me)
    assert served_from_index(me, monkeypatch)
    pending = me.state_dir("pending")

    # A file added inside the payload (the folder's mtime and ctime move).
    extra = pending / ids["alice1"] / "payload" / "added.txt"
    extra.parent.chmod(0o755)
    extra.write_text("added\n")
    rows, computed = _computed_ids(me, monkeypatch)
    assert computed == {ids["alice1"]} and rows == recomputed(me)
    assert level(rows, ids["alice1"]) == "invalid"

    # The same manifest bytes under a new inode: the row is proved again, and stays what it was.
    m = pending / ids["alice2"] / "manifest.json"
    data = m.read_bytes()
    m.chmod(0o644)
    m.unlink()
    m.write_bytes(data)
    rows, computed = _computed_ids(me, monkeypatch)
    assert ids["alice2"] in computed and rows == recomputed(me)

    # Another bundle's manifest and signature swapped in: the row says so.
    for name in ("manifest.json", "manifest.sig"):
        target = pending / ids["eve"] / name
        target.chmod(0o644)
        target.write_bytes((pending / ids["alice2"] / name).read_bytes())
    rows, computed = _computed_ids(me, monkeypatch)
    assert ids["eve"] in computed and rows == recomputed(me)
    assert level(rows, ids["eve"]) == "invalid"
