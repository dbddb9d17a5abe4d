"""Every cache-backed answer equals the answer computed with no cache at all, after every kind of
change a home sees (docs/architecture.md, "The caches").

The answers: `gage id` and `gage contacts` (word pairs, contacts), `gage list --json`, `gage
verdict ID --json`, the read model's rows whole (`listed_rows`), the interface's rows (the read
model gage/tui builds them from: `load_rows` through the check cache, and the arrival order it
takes from the row index), and the MCP tools' `list_bundles`, `verdict`, `read`, `list_files`,
`contacts` and authority summary (through the server's own memo of the opened home,
gage.mcp.seams.open_home). "No cache at all": the home's `cache/` folder (check cache, row index,
journal index, reconcile marker, word cache, TOML memos) moved out of the home and the server's
memo emptied while the same answers are computed again; then the caches are put back as they
were, so the next change meets them.

`test_the_comparison_fails_when_an_invalidation_is_skipped` shows, for each cache that decides
an answer, that the comparison fails when its invalidation is skipped. The journal-index damage
cases show a fact damaged in place costs only a rebuild (the index's rows are sealed).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from gagetest import Run, arrive, change_a_byte_keeping_mtime, pair

from gage.bundle import readonly
from gage.home.cache import checks, reconcilemark, rowindex, tomlparsed
from gage.home.cache.checks import CheckCache
from gage.home.cache.journalindex import JournalIndex
from gage.home.layout import ALL_STATES
from gage.home.listing import list_bundles
from gage.inbox import opening, ownkey, send
from gage.inbox.listed import listed_rows
from gage.inbox.rows import InboxReader
from gage.mcp import answers as mcp
from gage.mcp import seams
from gage.trust import ceremony, retirement
from gage.tui.inbox_sync import indexed_arrivals
from gage.tui.rows import load_rows

Gage = Callable[..., Run]
TOKEN = re.compile(r"==== gage frame ([0-9a-f]{16}) ====")
RACY_S = checks.RACY_NS / 1e9


class Clock:
    """The clock the racy rules read (the check cache's and the reconcile marker's), moved by
    `offset` seconds from the real one; the file system's own timestamps stay real."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.offset = 0.0
        monkeypatch.setattr(checks, "now_ns", self.now_ns)
        monkeypatch.setattr(reconcilemark, "now_ns", self.now_ns)

    def now_ns(self) -> int:
        return time.time_ns() + int(self.offset * 1e9)


def _run_ok(*args: str) -> None:
    res = subprocess.run([sys.executable, "-m", "gage", *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def _read(text: str) -> str:
    """A read with its per-call frame token named the same way each time."""
    found = TOKEN.search(text)
    return text.replace(found.group(1), "TOKEN") if found else text


def append_arrival(root: Path, bundle: str) -> None:
    """Another process journals an arrival by A2A of `bundle`, and its update of the journal
    index is lost (killed between the two, or its cache unwritable): the journal alone says so."""
    code = (
        "import sys; from gage.home.layout import Home; from gage.home.journal.log import Journal;"
        "h = Home.open(sys.argv[1]); j = Journal(h.journal.path, h.lock);"
        "j.append('received', bundle=sys.argv[2], transport={'carrier': 'a2a'}, sender=None, kind='share', parent=None, thread=None)"
    )
    res = subprocess.run([sys.executable, "-c", code, str(root), bundle], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def answers(root: Path, gage: Gage) -> dict[str, Any]:
    """Every cache-backed answer about the home at `root`, as each reader gives it."""
    out: dict[str, Any] = {}
    for command in (("id",), ("contacts",)):  # word pairs (the word cache), contacts (the TOML memo)
        got = gage(root, *command)
        out[f"gage {command[0]}"] = (got.code, got.out, got.err)
    listed = gage(root, "list", "--json")
    assert listed.code == 0, listed.err
    out["gage list"] = json.loads(listed.out)
    ids = sorted(r["id"] for r in out["gage list"])
    for bid in ids:
        got = gage(root, "verdict", bid, "--json")
        out[f"gage verdict {bid}"] = (got.code, got.out, got.err)
    home = opening.open_home(root)
    # The read model's rows as kept (arrival and carrier included, which the JSON leaves out).
    out["listed rows"] = [r.fields_by_name() for r in listed_rows(home)]
    for state in ALL_STATES:
        cache = CheckCache.of(home)
        rows = load_rows(home, state, cache=cache)
        cache.save()
        out[f"tui rows {state}"] = [
            (r.id, r.state, r.arrived, r.kind, r.subject, r.claimed_name, r.verdict.to_json() if r.verdict else None)
            for r in rows
        ]
        present = {s.id: s for s in list_bundles(home, (state,))}
        facts = home.journal.index.facts()
        arrivals = indexed_arrivals(home, state, present, facts)
        if arrivals is None:  # what the interface falls back to: the journal index's order
            arrivals = facts.arrival_order(present)
        out[f"tui arrivals {state}"] = arrivals
    agent = seams.open_home(root)
    out["mcp list_bundles"] = mcp.list_bundles(agent, limit=mcp.MAX_ROWS)
    out["mcp contacts"] = mcp.contacts(agent)
    out["mcp authority"] = mcp.authority_summary(agent)
    for bid in ids:
        out[f"mcp verdict {bid}"] = mcp.verdict(agent, bid)
        out[f"mcp read {bid}"] = _read(mcp.read(agent, bid, pending=True))
        out[f"mcp list_files {bid}"] = mcp.list_files(agent, bid, pending=True)
    return out


def uncached(root: Path, gage: Gage) -> dict[str, Any]:
    """The same answers with no derived store: `cache/` moved out of the home and the MCP
    server's opened-home memo empty. The caches are put back afterwards, untouched."""
    aside = root.parent / f"{root.name}-cache-aside"
    os.rename(root / "cache", aside)
    kept_opened = dict(seams._opened)
    seams._opened.clear()
    try:
        return answers(root, gage)
    finally:
        seams._opened.clear()
        seams._opened.update(kept_opened)
        shutil.rmtree(root / "cache", ignore_errors=True)
        os.rename(aside, root / "cache")


def agree(root: Path, gage: Gage) -> dict[str, Any]:
    """The cached answers (asked twice: the first may fill the caches, the second is served by
    them), each equal to the uncached one."""
    first = answers(root, gage)
    served = answers(root, gage)
    truth = uncached(root, gage)
    assert first == truth
    assert served == truth
    return served


def level(got: dict[str, Any], bid: str) -> str | None:
    return next((r["verdict"] for r in got["gage list"] if r["id"] == bid), None)


@pytest.fixture
def world(make_home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:  # type: ignore[no-untyped-def]
    """`me`, with alice and bob confirmed and eve a stranger; pending bundles from each, one
    reply, one of my own in the outbox; the clock past the racy window for what was just made."""
    clock = Clock(monkeypatch)
    me, alice, bob, eve = (make_home(n) for n in ("me", "alice", "bob", "eve"))
    pair(me, "alice", alice)
    pair(me, "bob", bob)
    ids: dict[str, str] = {}
    wire = tmp_path / "wire"
    for name, sender in (("alice1", alice), ("alice2", alice), ("bob", bob), ("eve", eve), ("eve2", eve)):
        f = tmp_path / f"{name}.txt"
        f.write_text(f"from {name}\n" * 10)
        m, _ = send.create(sender, [f], kind="share", subject=name, copy_to=wire)
        ids[name] = arrive(me, wire / m.id).id
    reply = tmp_path / "reply.txt"
    reply.write_text("a reply\n")
    m, _ = send.create(alice, [reply], kind="share", subject="re", parent=ids["alice1"], copy_to=wire)
    ids["reply"] = arrive(me, wire / m.id).id
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    ids["mine"] = send.create(me, [mine], kind="share", subject="mine")[0].id
    clock.offset = 2 * RACY_S  # forward: everything above may be remembered at once
    yield SimpleNamespace(me=me, alice=alice, bob=bob, eve=eve, ids=ids, clock=clock, tmp=tmp_path, wire=wire)
    seams._opened.clear()


def test_every_cached_answer_equals_the_uncached_one_after_every_kind_of_change(world, gage: Gage) -> None:  # type: ignore[no-untyped-def]
    me, ids, tmp = world.me, world.ids, world.tmp
    root = me.root
    got = agree(root, gage)
    assert level(got, ids["alice1"]) == "verified" and level(got, ids["eve"]) == "unverified"
    assert (root / "cache" / "rows.sqlite").exists() and (root / "cache" / "checks.json").exists()
    assert (root / "cache" / "reconciled.json").exists() and (root / "cache" / "words.json").exists()
    with contextlib.closing(sqlite3.connect(root / "cache" / "rows.sqlite")) as db:
        assert "contacts.toml" in {n for (n,) in db.execute("SELECT name FROM parsed")}
    assert (root / "cache" / "journal-index.sqlite").exists() and not list((root / "cache").glob("*.parsed.json"))
    # And they serve: with nothing changed, no row is computed and no bundle is checked again.
    home = opening.open_home(root)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(InboxReader, "rows", lambda *_a, **_k: pytest.fail("a row was computed"))
        assert len(listed_rows(home)) == len(ids)
    cache = CheckCache.of(home)
    for stored in list_bundles(home):
        assert cache.check(stored).ok
    assert (cache.hits, cache.misses) == (len(ids), 0)

    # A contact confirmed (the ceremony), then removed.
    words = " ".join(" ".join(p) for p in ceremony.derive(world.eve.identity.key))
    assert ceremony.confirm(me, "eve", world.eve.identity.key, words).confirmed
    assert level(agree(root, gage), ids["eve"]) == "verified"
    ceremony.unpair(me, "eve")
    assert level(agree(root, gage), ids["eve"]) == "unverified"

    # The contacts file put back from a copy by hand (no journal line says so).
    backup = me.contacts_path.read_bytes()
    assert ceremony.confirm(me, "eve", world.eve.identity.key, words).confirmed
    agree(root, gage)
    me.contacts_path.write_bytes(backup)
    assert level(agree(root, gage), ids["eve"]) == "unverified"

    # A key retired (alice's, for a new one), and a key compromised (bob's), applied here.
    done = ownkey.retire(world.alice, reason="superseded", new=True, copy_to=tmp / "statements")
    assert done.bundle is not None and retirement.apply_bundle(me, tmp / "statements" / done.bundle.id)
    agree(root, gage)
    done = ownkey.retire(world.bob, reason="compromised", copy_to=tmp / "statements")
    assert done.bundle is not None and retirement.apply_bundle(me, tmp / "statements" / done.bundle.id)
    assert level(agree(root, gage), ids["bob"]) != "verified"
    # This home's own key retired for a new one (the MCP server's opened home is of the old identity).
    ownkey.retire(me, reason="superseded", new=True)
    agree(root, gage)

    # The authority file edited by hand.
    me.authority_path.write_text('[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Summarise it."\n')
    agree(root, gage)
    me.authority_path.write_text("")
    agree(root, gage)

    # A bundle removed by hand.
    readonly.remove_tree(me.state_dir("pending") / ids["eve2"])
    assert level(agree(root, gage), ids["eve2"]) is None

    # A bundle moved into accepted by hand, past the gate: reconcile puts it back.
    os.rename(me.state_dir("pending") / ids["alice2"], me.state_dir("accepted") / ids["alice2"])
    got = agree(root, gage)
    assert [r["state"] for r in got["gage list"] if r["id"] == ids["alice2"]] == ["pending"]

    # Bundles replaced by hand: a payload byte changed in place (size and mtime put back), a
    # file added to a payload, a manifest and signature swapped for another bundle's.
    pending = me.state_dir("pending")
    change_a_byte_keeping_mtime(pending / ids["alice2"] / "payload" / "alice2.txt")
    assert level(agree(root, gage), ids["alice2"]) == "invalid"
    (pending / ids["bob"] / "payload").chmod(0o755)
    (pending / ids["bob"] / "payload" / "extra.txt").write_text("planted\n")
    assert level(agree(root, gage), ids["bob"]) == "invalid"
    for name in ("manifest.json", "manifest.sig"):
        target = pending / ids["eve"] / name
        target.chmod(0o644)
        target.write_bytes((pending / ids["alice1"] / name).read_bytes())
    assert level(agree(root, gage), ids["eve"]) == "invalid"

    # Journal lines appended by another process: an arrival with its carrier, a decision made
    # by a second `gage` process.
    append_arrival(root, ids["reply"])
    got = agree(root, gage)
    assert '"a2a"' in got[f"gage verdict {ids['reply']}"][1]
    _run_ok("--home", str(root), "accept", ids["alice1"])
    got = agree(root, gage)
    assert [r["state"] for r in got["gage list"] if r["id"] == ids["alice1"]] == ["accepted"]

    # The clock moved back (nothing new is remembered; what is kept must still be true), a
    # change made meanwhile, then forward again past the racy window.
    world.clock.offset = -3600.0
    agree(root, gage)
    _run_ok("--home", str(root), "reject", ids["eve"])
    agree(root, gage)
    world.clock.offset = 2 * RACY_S
    agree(root, gage)

    # Two processes at once: a decision and two listings racing to fill the same caches.
    procs = [
        subprocess.Popen([sys.executable, "-m", "gage", "--home", str(root), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for args in (("list", "--json"), ("reject", ids["reply"]), ("list", "--json"))
    ]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    got = agree(root, gage)
    assert [r["state"] for r in got["gage list"] if r["id"] == ids["reply"]] == ["rejected"]


def _stale_toml_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TOML memo believed without comparing its text with the file's."""
    real = tomlparsed.loads

    def loads(text: str, path: Path | None) -> dict[str, Any]:
        if path is not None and (path.parent / "cache" / "rows.sqlite").exists():
            with contextlib.closing(sqlite3.connect(path.parent / "cache" / "rows.sqlite")) as db:
                got = db.execute("SELECT doc FROM parsed WHERE name = ?", (path.name,)).fetchone()
            if got is not None:
                return json.loads(got[0])  # type: ignore[no-any-return]
        return real(text, path)

    monkeypatch.setattr(tomlparsed, "loads", loads)


SKIPPED: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    # The row index's trust generation never moves: a contact's change does not retire its rows.
    "row index: trust generation": lambda m: m.setattr(rowindex, "generation", lambda home: "the same"),
    # The check cache's tree digest never moves: an edited payload is still "checked out".
    "check cache: tree digest": lambda m: m.setattr(checks, "_tree_digest", lambda entries: "the same"),
    # The reconcile marker, while there, is always fresh: a bundle moved past the gate by hand stays there.
    "reconcile marker": lambda m: m.setattr(reconcilemark, "fresh", lambda home: (home.cache / reconcilemark.FILE_NAME).exists()),
    "toml memo": _stale_toml_memo,
    # The row index never hears of journal lines appended since its stamp.
    "row index: journal": lambda m: m.setattr(rowindex, "named_since", lambda home, stamp: set()),
    # The journal index, once it has a state, is taken as current without comparing it with the journal.
    "journal index": lambda m: m.setattr(
        JournalIndex, "_current", lambda self, db, fd: db.execute("SELECT 1 FROM state").fetchone() is not None
    ),
}


@pytest.mark.parametrize("skipped", SKIPPED)
def test_the_comparison_fails_when_an_invalidation_is_skipped(world, gage: Gage, monkeypatch: pytest.MonkeyPatch, skipped: str) -> None:  # type: ignore[no-untyped-def]
    me, ids = world.me, world.ids
    SKIPPED[skipped](monkeypatch)
    backup = me.contacts_path.read_bytes()
    words = " ".join(" ".join(p) for p in ceremony.derive(world.eve.identity.key))
    with pytest.raises(AssertionError):
        # A contact confirmed (which the journal says), then changes one at a time, each compared,
        # that together reach every cache: the contacts file put back by hand (no journal line says
        # so), a payload byte changed, a bundle moved past the gate by hand, an arrival journaled
        # by another process.
        assert ceremony.confirm(me, "eve", world.eve.identity.key, words).confirmed
        agree(me.root, gage)
        me.contacts_path.write_bytes(backup)
        agree(me.root, gage)
        data = me.state_dir("pending") / ids["alice2"] / "payload" / "alice2.txt"
        data.chmod(0o644)
        data.write_bytes(b"X" + data.read_bytes()[1:])
        agree(me.root, gage)
        os.rename(me.state_dir("pending") / ids["bob"], me.state_dir("accepted") / ids["bob"])
        agree(me.root, gage)
        append_arrival(me.root, ids["eve2"])
        agree(me.root, gage)


# --- a journal index damaged in place -----------------------------------------------------------
# A fact damaged while the index still matches the journal (its state row untouched) costs a
# rebuild: each row carries a seal, and one that does not hold rebuilds the index from the journal.
DAMAGED_FACTS = [
    ("decision", "5"),
    ("location", "5"),
    ("received", "'x'"),
    ("received", "-1"),
    ("first_received", "5"),
    ("first_received", "'not a time'"),
    ("transport", "x'5b5d'"),
    ("transport", "5"),
    ("accepted_how", "5"),
]


@pytest.mark.parametrize(
    ("column", "value"),
    DAMAGED_FACTS,
)
def test_a_journal_index_fact_damaged_in_place_costs_only_a_rebuild(world, gage: Gage, column: str, value: str) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    root, ids = world.me.root, world.ids
    _run_ok("--home", str(root), "accept", ids["alice1"])
    truth = uncached(root, gage)
    db = sqlite3.connect(root / "cache" / "journal-index.sqlite")
    with db:
        db.execute(f"UPDATE bundle SET {column} = {value}")  # every bundle's
    db.close()
    try:
        got = answers(root, gage)
    except Exception as exc:  # noqa: BLE001 - a traceback is the failure this names
        pytest.fail(f"{type(exc).__name__}: {exc}")
    assert got == truth
