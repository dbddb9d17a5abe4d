"""The journal index (gage/home/cache/journalindex.py) is a cache of the journal, never a source.

Every answer it gives (decisions, where each bundle last was, the verdict's `seen` facts, the
unattended thread and budget) must equal a brute-force scan of the journal, written here the
way gage computed them before the index (one pass over `entries()`); deleting the index changes
nothing but speed; and a journal edited, cut, replaced, torn, or appended outside gage is seen
and the index rebuilt, never served stale.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gage.format.keys.asjson import with_fingerprints
from gage.home import listing
from gage.home.journal.log import Journal, line_hash
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import gate
from gage.trust import unattended

IDS = [hashlib.sha256(bytes([i])).hexdigest() for i in range(8)]


# --- the brute force: one pass over every entry, as gage did before the index ----------------


def ref_decisions(entries: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in entries:
        b = e.get("bundle")
        if not isinstance(b, str) or b in out:
            continue
        ev = e.get("event")
        if ev in ("accepted", "rejected"):
            out[b] = ev
        elif ev == "reconciled" and e.get("found") == "rejected" and e.get("state") == "rejected" and e.get("action") == "recorded":
            out[b] = "rejected"
    return out


def ref_states(entries: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in entries:
        b = e.get("bundle")
        if not isinstance(b, str):
            continue
        ev = e.get("event")
        if ev in ("accepted", "rejected"):
            out[b] = ev
        elif ev == "reconciled" and isinstance(e.get("state"), str):
            out[b] = e["state"]
    return out


def ref_seen(entries: list[dict[str, Any]], bundle_id: str, parent: str | None) -> tuple[Any, ...]:
    received = [e for e in entries if e.get("bundle") == bundle_id and e.get("event") in ("imported", "received")]
    sent = {e.get("bundle") for e in entries if e.get("event") == "sent"}
    got = {e.get("bundle") for e in entries if e.get("event") in ("imported", "received")}
    pstatus = None if not parent else "sent-by-me" if parent in sent else "received" if parent in got else "unknown"
    how = [str(e.get("how") or "human") for e in entries if e.get("bundle") == bundle_id and e.get("event") == "accepted"]
    transport = [e["transport"] for e in received if isinstance(e.get("transport"), dict)]
    first = str(received[0].get("time")) if received else None
    return (len(received), first, bundle_id in sent, pstatus, how[-1] if how else None, transport[-1] if transport else None)


def ref_unattended(entries: list[dict[str, Any]], thread: str) -> int:
    return sum(1 for e in entries if e.get("event") == "accepted" and e.get("how") == "unattended" and e.get("thread") == thread)


def ref_thread(entries: list[dict[str, Any]], parent: str) -> str | None:
    sent: dict[str, dict[str, Any]] = {}
    arrived: dict[str, dict[str, Any]] = {}
    for e in entries:
        b, ev = e.get("bundle"), e.get("event")
        if not isinstance(b, str):
            continue
        if ev == "sent":
            sent.setdefault(b, e)
        elif ev in ("imported", "received") and e.get("ok") is True and not e.get("again"):
            arrived.setdefault(b, e)
    if parent not in sent:
        return None
    cur = parent
    for _ in range(len(sent) + 1):
        p = sent[cur].get("parent")
        if not isinstance(p, str) or not p:
            return cur
        if p in sent:
            cur = p
            continue
        theirs = arrived.get(p)
        mine = theirs.get("parent") if theirs is not None else None
        if not isinstance(mine, str) or mine not in sent:
            return cur
        to = sent[mine].get("to")
        if isinstance(to, list) and to and theirs.get("sender") not in to:  # type: ignore[union-attr]
            return cur
        cur = mine
    return cur


class _H:
    """What the readers need of a home: its journal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal


def answers(journal: Journal, ids: list[str] = IDS) -> dict[str, Any]:
    """Everything the readers ask, answered through the index."""
    h: Any = _H(journal)
    facts = h.journal.index.facts()
    decided = listing.decisions(h)
    return {
        # The interface's order, asked first (before any fact is held), as the interface asks it.
        "arrival order": facts.arrival_order(ids),
        "decisions": {b: decided.get(b) for b in ids},
        "all_decisions": dict(decided.items()),
        "states": gate.journal_states(h),
        "seen": {
            (b, p): (*(lambda s: (s.times_received, s.first_received, s.sent_by_me, s.parent_status))(facts.seen(b, p)),
                     facts.accepted_how.get(b), facts.transport.get(b))
            for b in ids for p in (None, *ids[:3])
        },
        "unattended": {t: unattended.unattended_used(h, t) for t in ids},
        "thread": {b: unattended.sent_thread(h, b) for b in ids},
    }


def brute(journal: Journal, ids: list[str] = IDS) -> dict[str, Any]:
    """The same questions, answered by scanning every entry."""
    entries = journal.entries()
    decided = ref_decisions(entries)
    return {
        "decisions": {b: decided.get(b) for b in ids},
        "all_decisions": decided,
        "arrival order": {b: t for b in ids if (t := ref_seen(entries, b, None)[1]) is not None},
        "states": ref_states(entries),
        "seen": {(b, p): ref_seen(entries, b, p) for b in ids for p in (None, *ids[:3])},
        "unattended": {t: ref_unattended(entries, t) for t in ids},
        "thread": {b: ref_thread(entries, b) for b in ids},
    }


def agree(journal: Journal) -> None:
    got, want = answers(journal), brute(journal)
    for key in want:
        assert got[key] == want[key], key


def history(journal: Journal) -> None:
    """A small realistic history: sends, arrivals (one again, one over a transport), decisions,
    a reconcile, an unattended accept in a thread, a reply to a reply."""
    a, b, c, d, e, f, g, h = IDS
    journal.append("sent", bundle=a, parent=None, to=["ed25519:bob"])
    journal.append("imported", bundle=b, parent=a, sender="ed25519:bob", ok=True)
    journal.append("sent", bundle=c, parent=b, to=[])
    journal.append("received", bundle=d, parent=c, sender="ed25519:bob", ok=True, via="watch", transport={"peer": "x"})
    journal.append("accepted", bundle=d, how="unattended", thread=a)
    journal.append("imported", bundle=e, parent=None, sender="ed25519:eve", ok=False)
    journal.append("imported", bundle=e, again=True, state="pending")
    journal.append("rejected", bundle=e, why="no")
    journal.append("reconciled", bundle=e, found="missing", action="recorded", state="missing", note="gone")
    journal.append("imported", bundle=f, ok=True, sender="ed25519:carol")
    journal.append("accepted", bundle=f, how="human", thread=None)
    journal.append("reconciled", bundle=g, found="rejected", action="recorded", state="rejected", note="x")
    journal.append("paired", name="bob", key="ed25519:bob")
    journal.append("imported", bundle=h, ok=True, sender="ed25519:bob", transport={"peer": "y"})


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    j = Journal(tmp_path / "journal.jsonl", contextlib.nullcontext, index_path=tmp_path / "cache" / "journal-index.sqlite")
    history(j)
    return j


def _fresh(j: Journal) -> Journal:
    """The same files, as another process opens them (no connection or memory carried over)."""
    return Journal(j.path, contextlib.nullcontext, index_path=j.index_path)


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes without changing the size, the inode, or (as far as it can) the mtime."""
    assert len(old) == len(new)
    data = path.read_bytes()
    at = data.index(old)
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # a write moves the mtime on


# --- deleting it changes nothing but speed ---------------------------------------------------


def test_answers_agree_with_a_scan_and_survive_deleting_the_index(journal: Journal) -> None:
    agree(journal)
    before = answers(journal)
    assert journal.index_path is not None and journal.index_path.exists()
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{journal.index_path}{suffix}")
    again = _fresh(journal)
    assert answers(again) == before
    assert journal.index_path.exists()  # rebuilt


def test_a_real_home_answers_the_same_without_its_index(make_home) -> None:  # noqa: ANN001
    home = make_home("me")
    history(home.journal)
    before = answers(home.journal)
    for p in home.cache.glob("journal-index.sqlite*"):
        p.unlink()
    assert answers(Home(home.root).journal) == before  # (not `open`: its reconcile would record where bundles are)


def test_a_damaged_index_file_is_rebuilt(journal: Journal) -> None:
    before = answers(journal)
    assert journal.index_path is not None
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{journal.index_path}{suffix}")
    journal.index_path.write_bytes(b"this is not a database" * 100)
    assert answers(_fresh(journal)) == before


def test_an_index_that_cannot_be_written_is_kept_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "cache"
    blocked.write_bytes(b"a file where the cache folder should be")
    j = Journal(tmp_path / "journal.jsonl", contextlib.nullcontext, index_path=blocked / "journal-index.sqlite")
    history(j)
    agree(j)


# --- never served stale ----------------------------------------------------------------------


def test_an_entry_edited_in_place_is_seen(journal: Journal) -> None:
    agree(journal)
    f = IDS[5]
    _edit_in_place(journal.path, f'"bundle":"{f}","event":"accepted"'.encode(), f'"bundle":"{f}","event":"rejected"'.encode())
    assert ref_decisions(journal.entries())[f] == "rejected"
    agree(journal)
    agree(_fresh(journal))


def test_an_edit_before_the_next_gage_append_is_seen(journal: Journal) -> None:
    """The append stamps the index with the journal as gage left it, so an edit made between two
    gage commands shows as a change in place, even once more lines follow it."""
    agree(journal)
    f = IDS[5]
    _edit_in_place(journal.path, f'"bundle":"{f}","event":"accepted"'.encode(), f'"bundle":"{f}","event":"rejected"'.encode())
    journal.append("sent", bundle=IDS[7], parent=None, to=[])
    agree(_fresh(journal))


@pytest.mark.parametrize("cut", [1, 3, 14])
def test_a_truncated_journal_is_seen(journal: Journal, cut: int) -> None:
    agree(journal)
    lines = journal.path.read_bytes().split(b"\n")[:-1]
    journal.path.write_bytes(b"".join(ln + b"\n" for ln in lines[: len(lines) - cut]))
    agree(journal)
    agree(_fresh(journal))


def test_a_last_line_edited_to_the_same_length_is_seen(journal: Journal) -> None:
    agree(journal)
    lines = journal.path.read_bytes().split(b"\n")[:-1]
    obj = json.loads(lines[-1])
    obj["sender"] = "ed25519:bxb"
    lines[-1] = json.dumps(obj, separators=(",", ":")).encode()
    st = os.stat(journal.path)
    journal.path.write_bytes(b"".join(ln + b"\n" for ln in lines))
    os.utime(journal.path, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the mtime put back
    agree(journal)


def test_lines_appended_outside_gage_are_read(journal: Journal) -> None:
    agree(journal)
    last = journal.path.read_bytes().split(b"\n")[-2]
    seq = json.loads(last)["seq"]
    with open(journal.path, "ab") as f:
        prev = line_hash(last)
        for i, (ev, extra) in enumerate([("accepted", {"how": "unattended", "thread": IDS[0]}), ("rejected", {})]):
            line = json.dumps({"seq": seq + 1 + i, "event": ev, "prev": prev, "bundle": IDS[7], **extra}).encode()
            f.write(line + b"\n")
            prev = line_hash(line)
    agree(journal)


def test_lines_appended_outside_gage_that_do_not_chain_are_read(journal: Journal) -> None:
    agree(journal)
    with open(journal.path, "ab") as f:
        f.write(json.dumps({"seq": 99, "event": "accepted", "prev": "0" * 64, "bundle": IDS[6], "how": "human"}).encode() + b"\n")
    agree(journal)


def test_a_journal_replaced_by_another_file_is_seen(journal: Journal, tmp_path: Path) -> None:
    agree(journal)
    other = Journal(tmp_path / "other.jsonl", contextlib.nullcontext)
    other.append("rejected", bundle=IDS[0], why="other")
    os.replace(other.path, journal.path)
    agree(journal)


def test_a_torn_tail_and_its_repair(journal: Journal) -> None:
    agree(journal)
    with open(journal.path, "ab") as f:
        f.write(b'{"seq": 99, "event": "accepted", "bundle": "' + IDS[1].encode())
    agree(journal)  # the torn tail is not an entry
    journal.append("rejected", bundle=IDS[1], why="after the tear")
    entries = journal.entries()
    assert [e["event"] for e in entries[-2:]] == ["repaired", "rejected"]
    agree(journal)
    assert verify_journal(journal).ok


def test_a_deleted_journal_empties_the_answers(journal: Journal) -> None:
    agree(journal)
    journal.path.unlink()
    assert answers(journal)["all_decisions"] == {}
    agree(journal)


# --- what stays flat -----------------------------------------------------------------------------


def test_append_and_one_bundle_s_facts_never_read_the_whole_journal(journal: Journal, monkeypatch) -> None:  # noqa: ANN001
    """The structure that makes them flat: once the index is current, an append reads the tail and a
    question about one bundle reads the index, never the journal from its start."""
    agree(journal)

    def whole(*_a: object, **_k: object) -> None:
        raise AssertionError("read the whole journal")

    monkeypatch.setattr(Journal, "_raw", whole)
    monkeypatch.setattr(Journal, "iter_entries", whole)
    monkeypatch.setattr(Journal, "entries", whole)
    journal.append("sent", bundle=IDS[6], parent=IDS[3], to=[])
    h: Any = _H(journal)
    assert listing.decisions(h).get(IDS[4]) == "rejected"
    assert h.journal.index.facts().seen(IDS[7], IDS[6]).parent_status == "sent-by-me"
    assert unattended.unattended_used(h, IDS[0]) == 1


# --- a randomized history, against the brute force -------------------------------------------

EVENT = st.sampled_from(["accepted", "rejected", "reconciled", "imported", "received", "sent", "paired", "repaired"])
ENTRY = st.fixed_dictionaries(
    {"event": EVENT, "bundle": st.sampled_from(IDS) | st.just(7)},
    optional={
        "how": st.sampled_from(["human", "unattended", "", None]),
        "thread": st.sampled_from(IDS[:3]) | st.none(),
        "parent": st.sampled_from(IDS) | st.none() | st.just(""),
        "to": st.lists(st.sampled_from(["ed25519:a", "ed25519:b"]), max_size=2) | st.none(),
        "sender": st.sampled_from(["ed25519:a", "ed25519:b"]),
        "ok": st.booleans(),
        "again": st.booleans(),
        "state": st.sampled_from(["pending", "accepted", "rejected", "missing"]) | st.just(3),
        "found": st.sampled_from(["rejected", "accepted", "staging"]),
        "action": st.sampled_from(["recorded", "returned to pending"]),
        "transport": st.dictionaries(st.sampled_from(["peer", "agent"]), st.text(max_size=3), max_size=2) | st.just("x"),
        "torn_sha256": st.sampled_from(IDS[:2]),
    },
)
STEP = st.one_of(
    st.tuples(st.just("append"), ENTRY),
    st.tuples(st.just("ask"), st.none()),
    st.tuples(st.just("drop-index"), st.none()),
    st.tuples(st.just("cut"), st.integers(1, 3)),
    st.tuples(st.just("tear"), st.binary(min_size=1, max_size=20).filter(lambda b: b"\n" not in b)),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(STEP, min_size=1, max_size=40))
def test_a_random_history_agrees_with_a_scan(steps: list[tuple[str, Any]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        j = Journal(Path(d) / "journal.jsonl", contextlib.nullcontext, index_path=Path(d) / "cache" / "idx.sqlite")
        for kind, arg in steps:
            if kind == "append":
                j.append(arg["event"], **{k: v for k, v in arg.items() if k != "event"})
            elif kind == "ask":
                agree(j)
            elif kind == "drop-index":
                assert j.index_path is not None
                for p in j.index_path.parent.glob("idx.sqlite*"):
                    p.unlink()
                j = _fresh(j)
            elif kind == "cut":
                lines = j.path.read_bytes().split(b"\n")[:-1] if j.path.exists() else []
                j.path.write_bytes(b"".join(ln + b"\n" for ln in lines[: max(0, len(lines) - arg)]))
            else:
                with open(j.path, "ab") as f:
                    f.write(arg)
        agree(j)
        agree(_fresh(j))


# --- two processes at once -------------------------------------------------------------------------

WRITER = """
import sys
from gage.home import listing
from gage.home.layout import Home
home = Home(sys.argv[1])
w = sys.argv[2]
for i in range(int(sys.argv[3])):
    bid = f"{w}{i:063x}"[:64]
    home.journal.append("imported", bundle=bid, ok=True, sender="ed25519:" + w)
    if i % 2:
        home.journal.append("accepted", bundle=bid, how="unattended", thread=w * 64)
    assert listing.decisions(home).get(bid) == ("accepted" if i % 2 else None)
"""


def test_two_processes_appending_and_reading_keep_a_valid_chain_and_index(make_home) -> None:  # noqa: ANN001
    home = make_home("me")
    each = 40
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(home.root), w, str(each)], stderr=subprocess.PIPE) for w in ("a", "b")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    report = verify_journal(home.journal)
    assert report.ok, report.problems
    entries = home.journal.entries()
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    ids = [f"{w}{i:063x}"[:64] for w in ("a", "b") for i in range(each)]
    got, want = answers(home.journal, ids), brute(home.journal, ids)
    assert got == want
    assert unattended.unattended_used(home, "a" * 64) == each // 2


def test_journal_show_json_streams_exactly_the_entries(make_home, gage) -> None:  # noqa: ANN001
    home = make_home("me")
    history(home.journal)
    r = gage(home, "journal", "show", "--json")
    # each entry as written, with a fingerprint beside every key it names (issue 27)
    shown = [with_fingerprints(e) for e in home.journal.entries()]
    assert r.code == 0 and json.loads(r.out) == shown
    assert r.out == json.dumps(shown, indent=2, ensure_ascii=True) + "\n"
    assert all({k: v for k, v in s.items() if not k.endswith("fingerprint")} == e for s, e in zip(shown, home.journal.entries(), strict=True))


def test_any_string_the_journal_holds_is_kept_exactly(journal: Journal) -> None:
    """JSON can spell lone surrogates and any Unicode: the index stores and returns them unchanged."""
    odd = ["\ud800x", "caf\u00e9", "\udcff"]
    last = journal.path.read_bytes().split(b"\n")[-2]
    with open(journal.path, "ab") as f:
        f.write(
            b'{"seq": 99, "event": "rejected", "prev": "' + line_hash(last).encode() + b'", "bundle": "\\ud800x"}\n'
            b'{"event": "reconciled", "bundle": "caf\\u00e9", "state": "\\udcff", "found": "x"}\n'
            b'{"event": "imported", "bundle": "\\udcff", "time": "\\u00e9", "transport": {"\\ud800": "\\u00e9"}}\n'
        )
    agree(journal)
    got, want = answers(journal, odd), brute(journal, odd)
    assert got == want
    assert got["decisions"]["\ud800x"] == "rejected" and got["states"]["caf\u00e9"] == "\udcff"


def test_a_readings_facts_go_with_it_not_at_the_next_full_collection(tmp_path: Path) -> None:
    """The facts a reading looked up are freed when the reading is dropped, by reference counting
    alone: a fetch keeping its rows batch after batch (gage.inbox.listed.keep_landed) otherwise held
    every batch's facts, in reference cycles, until the interpreter's next full collection."""
    import gc
    import weakref

    from gage.home.layout import Home

    home = Home.init(tmp_path / "me", "me")
    home.journal.append("imported", bundle="b" * 64, sender=None, kind="share", parent=None, thread=None, ok=True)
    facts = home.journal.index.facts()
    facts.prefetch(["b" * 64])
    assert facts.first_received.get("b" * 64) is not None and "b" * 64 in facts.received
    gone = weakref.ref(facts)
    was = gc.isenabled()
    gc.disable()
    try:
        del facts
        assert gone() is None, "held by a reference cycle"
    finally:
        if was:
            gc.enable()
