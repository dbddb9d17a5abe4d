"""The journal: append-only, hash-chained, with a head; damage is detected, torn lines kept."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from gagetest import run_gage_process

from gage.format.errors import Exit
from gage.home.journal.log import GENESIS
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home


def _home_with_entries(make_home, n: int = 5) -> Home:
    home = make_home("me")
    for i in range(n):
        home.journal.append("sent", bundle=f"{i:064x}", thread=f"{i:064x}")
    return home


def _lines(home: Home) -> list[bytes]:
    return home.journal.path.read_bytes().split(b"\n")[:-1]


def _write_lines(home: Home, lines: list[bytes]) -> None:
    home.journal.path.write_bytes(b"".join(ln + b"\n" for ln in lines))


def test_a_fresh_journal_verifies_and_chains(make_home) -> None:
    home = _home_with_entries(make_home)
    lines = _lines(home)
    objs = [json.loads(ln) for ln in lines]
    assert [o["seq"] for o in objs] == list(range(1, len(lines) + 1))
    assert objs[0]["event"] == "init" and objs[0]["prev"] == GENESIS
    for before, after in zip(lines, objs[1:], strict=False):
        assert after["prev"] == hashlib.sha256(before).hexdigest()
    head = json.loads(home.journal.head_path.read_bytes())
    assert head == {"seq": len(lines), "hash": hashlib.sha256(lines[-1]).hexdigest()}
    report = verify_journal(home.journal)
    assert (report.ok, report.entries, report.problems) == (True, 6, [])


def test_an_edited_line_is_detected(make_home, gage) -> None:
    home = _home_with_entries(make_home)
    lines = _lines(home)
    lines[2] = lines[2].replace(b'"sent"', b'"rejected"')
    _write_lines(home, lines)
    report = verify_journal(home.journal)
    assert not report.ok
    assert any(p.startswith("line 4: chain broken") for p in report.problems), report.problems
    r = gage(home, "journal", "verify")
    assert r.code == Exit.FAILED and "NOT ok" in r.out and "chain broken" in r.err


def test_an_edited_last_line_is_detected_by_the_head(make_home) -> None:
    home = _home_with_entries(make_home)
    lines = _lines(home)
    lines[-1] = lines[-1].replace(b'"sent"', b'"accepted"')
    _write_lines(home, lines)
    report = verify_journal(home.journal)
    assert not report.ok
    assert any("does not match journal.head" in p for p in report.problems), report.problems


def test_a_deleted_line_is_detected(make_home) -> None:
    home = _home_with_entries(make_home)
    lines = _lines(home)
    del lines[3]
    _write_lines(home, lines)
    report = verify_journal(home.journal)
    assert not report.ok
    assert any("chain broken" in p for p in report.problems)
    assert any("sequence number" in p for p in report.problems)


@pytest.mark.parametrize("cut", [1, 2, 6])
def test_truncation_is_detected_by_the_head(make_home, cut: int) -> None:
    """Cutting whole entries off the end leaves a valid chain: only the head can tell."""
    home = _home_with_entries(make_home)
    lines = _lines(home)
    _write_lines(home, lines[: len(lines) - cut])
    report = verify_journal(home.journal)
    assert not report.ok
    assert any(p.startswith("truncated") for p in report.problems), report.problems
    assert report.entries == len(lines) - cut


def test_a_missing_head_is_reported(make_home) -> None:
    home = _home_with_entries(make_home)
    home.journal.head_path.unlink()
    report = verify_journal(home.journal)
    assert not report.ok and any("journal.head is missing" in p for p in report.problems)


def test_lines_appended_outside_gage_are_reported(make_home) -> None:
    home = _home_with_entries(make_home)
    head = home.journal.head_path.read_bytes()
    home.journal.append("sent", bundle="a" * 64)
    home.journal.append("sent", bundle="b" * 64)
    home.journal.head_path.write_bytes(head)  # as if written by something that did not update the head
    report = verify_journal(home.journal)
    assert not report.ok and any("follow the recorded head" in p for p in report.problems)


def test_a_torn_last_line_is_reported_then_kept_in_a_repaired_entry(make_home, gage) -> None:
    home = _home_with_entries(make_home)
    torn = b'{"seq": 7, "time": "2026-01-01T00:00:00Z", "event": "acc\xc3'
    with open(home.journal.path, "ab") as f:
        f.write(torn)
    report = verify_journal(home.journal)
    assert not report.ok
    assert any("torn" in p and f"{len(torn)} bytes" in p for p in report.problems), report.problems
    assert gage(home, "journal", "verify").code == Exit.FAILED
    # Readers do not trip on it.
    assert len(home.journal.entries()) == 6

    home.journal.append("sent", bundle="c" * 64)
    entries = home.journal.entries()
    repaired, after = entries[-2], entries[-1]
    assert repaired["event"] == "repaired" and repaired["seq"] == 7
    assert base64.b64decode(repaired["torn_bytes"]) == torn  # the exact bytes, nothing dropped
    assert repaired["torn_length"] == len(torn)
    assert (after["event"], after["seq"], after["bundle"]) == ("sent", 8, "c" * 64)
    report = verify_journal(home.journal)
    assert report.ok, report.problems
    assert any("torn line" in n for n in report.notes)
    r = gage(home, "journal", "verify", "--json")
    assert r.code == 0 and json.loads(r.out)["ok"] is True


def test_a_torn_line_too_big_for_an_entry_is_kept_in_its_file_and_appends_go_on(make_home) -> None:
    """A torn gage line can be up to 64 KiB; its base64 would not fit in an entry. It must not brick the journal."""
    home = _home_with_entries(make_home)
    torn = b'{"seq": 7, "event": "sent", "note": "' + b"x" * 60_000
    with open(home.journal.path, "ab") as f:
        f.write(torn)
    home.journal.append("sent", bundle="c" * 64)
    repaired = home.journal.entries()[-2]
    assert repaired["event"] == "repaired" and "torn_bytes" not in repaired
    assert (home.journal.path.parent / repaired["torn_file"]).read_bytes() == torn
    assert repaired["torn_sha256"] == hashlib.sha256(torn).hexdigest()
    assert verify_journal(home.journal).ok


def test_a_repair_interrupted_after_the_cut_is_finished_by_the_next_append(make_home) -> None:
    """The torn bytes are saved before the journal is cut: a crash between the two loses nothing."""
    home = _home_with_entries(make_home)
    torn = b'{"seq": 7, "event": "acc'
    with open(home.journal.path, "ab") as f:
        f.write(torn)
    j = home.journal
    j._save_torn(torn)  # the repair's first step ...
    data = j.path.read_bytes()
    j._truncate(len(data) - len(torn))  # ... and its second; then the process dies
    report = verify_journal(j)
    assert not report.ok and any("no entry records it yet" in p for p in report.problems)
    j.append("sent", bundle="d" * 64)
    repaired = j.entries()[-2]
    assert repaired["event"] == "repaired" and base64.b64decode(repaired["torn_bytes"]) == torn
    assert verify_journal(j).ok


def test_a_kept_torn_line_that_changes_or_vanishes_is_reported(make_home) -> None:
    home = _home_with_entries(make_home)
    with open(home.journal.path, "ab") as f:
        f.write(b'{"seq": 7, "ev')
    home.journal.append("sent", bundle="e" * 64)
    kept = home.journal.path.parent / home.journal.entries()[-2]["torn_file"]
    kept.write_bytes(b"something else")
    assert any("has changed" in p for p in verify_journal(home.journal).problems)
    kept.unlink()
    assert any("is missing" in p for p in verify_journal(home.journal).problems)


def test_the_head_not_updated_after_the_last_write_is_a_note_not_a_failure(make_home) -> None:
    """A crash between the journal write and the head write: the entry is whole, so it stands."""
    home = _home_with_entries(make_home)
    head = home.journal.head_path.read_bytes()
    home.journal.append("sent", bundle="d" * 64)
    home.journal.head_path.write_bytes(head)
    report = verify_journal(home.journal)
    assert report.ok and any("head was not updated" in n for n in report.notes)


def test_unknown_events_are_refused_on_write_and_reported_on_read(make_home) -> None:
    home = _home_with_entries(make_home, 1)
    with pytest.raises(ValueError):
        home.journal.append("trusted", bundle="e" * 64)
    lines = _lines(home)
    obj = json.loads(lines[-1])
    obj["event"] = "trusted"
    lines[-1] = json.dumps(obj).encode()
    _write_lines(home, lines)
    assert any("unknown event" in p for p in verify_journal(home.journal).problems)


APPENDER = """
import sys
from gage.home.layout import Home
from gage.home.journal.verify import verify as verify_journal
home = Home(sys.argv[1])
w = sys.argv[2]
for i in range(int(sys.argv[3])):
    home.journal.append("sent", bundle=f"{w}{i:063x}"[:64], thread=w * 64)
"""


def test_concurrent_appends_from_several_processes(make_home, tmp_path: Path) -> None:
    home = make_home("me")
    writers, each = 4, 50
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(home.root), str(w), str(each)], stderr=subprocess.PIPE)
        for w in range(writers)
    ]
    for p in procs:
        _, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
    report = verify_journal(home.journal)
    assert report.ok, report.problems
    entries = home.journal.entries()
    assert len(entries) == 1 + writers * each
    assert [e["seq"] for e in entries] == list(range(1, 2 + writers * each))
    for w in range(writers):
        mine = [e["bundle"] for e in entries if e.get("thread") == str(w) * 64]
        assert mine == [f"{w}{i:063x}"[:64] for i in range(each)]  # each writer's order kept


def test_journal_verify_exit_codes_in_a_real_process(make_home) -> None:
    home = _home_with_entries(make_home, 2)
    ok = run_gage_process("journal", "verify", home=home.root)
    assert ok.code == 0 and ok.out.startswith("ok: 3 entries")
    _write_lines(home, _lines(home)[:-1])
    bad = run_gage_process("journal", "verify", home=home.root)
    assert bad.code == Exit.FAILED and "truncated" in bad.err


def test_journal_show_prints_untrusted_fields_safely(make_home, gage) -> None:
    home = make_home("me")
    home.journal.append("received", bundle="f" * 64, via="\x1b]0;owned\x07drop")
    r = gage(home, "journal", "show")
    assert "\x1b" not in r.out and "\\x1b" in r.out


@pytest.mark.parametrize("damage", ["truncate", "truncate-all", "edit-last"])
def test_damage_stays_detected_after_the_next_append(make_home, damage: str) -> None:
    """The next gage command appends to the journal: that must not rewrite the evidence away."""
    home = _home_with_entries(make_home)
    lines = _lines(home)
    if damage == "truncate":
        lines = lines[:-2]
    elif damage == "truncate-all":
        lines = []
    else:
        lines[-1] = lines[-1].replace(b'"sent"', b'"accepted"')
    _write_lines(home, lines)
    assert not verify_journal(home.journal).ok
    home.journal.append("sent", bundle="9" * 64)
    home.journal.append("sent", bundle="8" * 64)
    report = verify_journal(home.journal)
    assert not report.ok
    assert any(("sequence number" in p or "chain broken" in p) for p in report.problems), report.problems
    # ... and the new entries themselves are kept whole.
    assert [e["bundle"] for e in home.journal.entries()[-2:]] == ["9" * 64, "8" * 64]


def test_a_missing_journal_with_no_head_starts_afresh(make_home) -> None:
    home = make_home("me")
    home.journal.path.unlink()
    home.journal.head_path.unlink()
    home.journal.append("sent", bundle="7" * 64)
    assert verify_journal(home.journal).ok


def test_a_batch_killed_before_its_head_is_rewritten_still_verifies(make_home, monkeypatch) -> None:
    """A bulk decision's journal lines go in one write (issue 28); a kill between that write and the
    head's rewrite leaves the head several entries behind. The head announced the batch first, so
    `verify` notes an interrupted write instead of reporting lines appended outside gage, and the
    next append catches the head up."""
    home = make_home("me")
    journal = home.journal
    real = journal._write_head

    def killed(seq, digest, *, pending=None):  # the kill: after the announcing head and the batch's write
        if pending is None:
            raise KeyboardInterrupt("killed")
        real(seq, digest, pending=pending)

    monkeypatch.setattr(journal, "_write_head", killed)
    with pytest.raises(KeyboardInterrupt):
        journal.append_many([("rejected", {"bundle": f"{i:064x}", "why": None}) for i in range(5)])
    monkeypatch.undo()
    report = verify_journal(journal)
    assert report.ok, report.problems
    assert any("a batch the head announced" in n for n in report.notes)
    journal.append("rejected", bundle="f" * 64, why=None)
    after = verify_journal(journal)
    assert after.ok and not after.notes, (after.problems, after.notes)


def test_lines_appended_past_the_head_without_an_announced_batch_are_still_reported(make_home) -> None:
    home = make_home("me")
    journal = home.journal
    head = journal.head_path.read_bytes()
    journal.append_many([("rejected", {"bundle": f"{i:064x}", "why": None}) for i in range(3)])
    journal.head_path.write_bytes(head)  # as if two lines were added by something else than gage
    report = verify_journal(journal)
    assert not report.ok and any("appended outside gage" in p for p in report.problems)
