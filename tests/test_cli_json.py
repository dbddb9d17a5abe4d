"""`--json` on the commands that report something: read, import, journal show, watch (JSON lines)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from gagetest import pair

from gage.carriers.events import WatchEvent
from gage.cli.watch_log import WatchLog
from gage.format import strictjson
from gage.format.errors import Exit
from gage.home.layout import Home
from gage.inbox import send, store


@pytest.fixture
def two(make_home, tmp_path: Path) -> tuple[Home, Home]:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    return alice, bob


def _send(bob: Home, tmp_path: Path, files: dict[str, bytes]) -> str:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    paths = []
    for name, data in files.items():
        (src / name).write_bytes(data)
        paths.append(src / name)
    m, _dest = send.create(bob, paths, kind="share", subject="for \x1b[31malice", copy_to=tmp_path / "wire")
    return m.id


def _strict(text: str) -> object:
    strictjson.loads(text.encode("utf-8"), limit=1 << 24)  # gage's own strict reader accepts it
    assert text.isascii()
    return json.loads(text)


def test_read_json_gives_the_frame_and_describes_the_payload(two, gage, tmp_path: Path) -> None:
    alice, bob = two
    bid = _send(bob, tmp_path, {"note.txt": b"hello\n", "blob.bin": b"\x00\x01" * 10})
    store.import_bundle(alice, tmp_path / "wire" / bid)
    r = gage(alice, "read", bid, "--json")
    assert r.code == 0, r.err
    doc = _strict(r.out)
    assert doc["id"] == bid and doc["state"] == "pending" and doc["verdict"] == "verified"
    labels = [f["label"] for f in doc["frame"]]
    assert labels and all(isinstance(f["value"], str) for f in doc["frame"])
    assert "\x1b" not in json.dumps(doc["frame"], ensure_ascii=False), "values are made visible, as printed"
    assert doc["payload"]["shown"] is False and "pending" in doc["payload"]["why"]
    assert {f["path"] for f in doc["payload"]["files"]} == {"note.txt", "blob.bin"}
    assert all("type" not in f for f in doc["payload"]["files"])
    doc = _strict(gage(alice, "read", bid, "--pending", "--json").out)
    types = {f["path"]: f["type"] for f in doc["payload"]["files"]}
    assert types == {"note.txt": "text", "blob.bin": "binary"}
    assert doc["payload"]["shown"] is True and doc["payload"]["why"] is None
    sizes = {f["path"]: f["size"] for f in doc["payload"]["files"]}
    assert sizes == {"note.txt": 6, "blob.bin": 20}


def test_import_json_one_result_per_path(two, gage, tmp_path: Path) -> None:
    alice, bob = two
    bid = _send(bob, tmp_path, {"a.txt": b"a\n"})
    tampered = tmp_path / "t" / bid
    shutil.copytree(tmp_path / "wire" / bid, tampered)
    not_a_bundle = tmp_path / "nothing"
    not_a_bundle.mkdir()
    r = gage(alice, "import", str(tmp_path / "wire" / bid), str(not_a_bundle), str(tmp_path / "wire" / bid), "--json")
    assert r.code == Exit.MALFORMED
    doc = _strict(r.out)
    rows = doc["imported"]
    assert [row["id"] for row in rows] == [bid, None, bid]
    assert rows[0]["new"] is True and rows[0]["ok"] is True and rows[0]["state"] == "pending" and rows[0]["error"] is None
    assert rows[1]["error"]["stage"] == "malformed"
    assert rows[2]["new"] is False and rows[2]["state"] == "pending"
    assert doc["statements"] == []
    # Several PATHs: standard error sums up, by cause (issue 27), and --json carries the same sum.
    assert r.err.splitlines()[-1] == "imported 1, refused 1 (1 malformed), already there 1", r.err
    assert doc["summary"]["imported"] == 1 and doc["summary"]["already_there"] == 1


def test_import_json_reports_a_bundle_that_does_not_verify(two, gage, tmp_path: Path) -> None:
    alice, bob = two
    bid = _send(bob, tmp_path, {"a.txt": b"a\n"})
    (tmp_path / "wire" / bid / "payload" / "a.txt").write_bytes(b"b\n")
    doc = _strict(gage(alice, "import", str(tmp_path / "wire" / bid), "--json").out)
    row = doc["imported"][0]
    assert row["new"] is True and row["ok"] is False and row["problem"]["stage"] == "tampered"


def test_journal_show_json_is_strict(two, gage, tmp_path: Path) -> None:
    alice, _bob = two
    r = gage(alice, "journal", "show", "--json")
    entries = _strict(r.out)
    assert isinstance(entries, list) and entries[0]["event"] == "init"


# --- watch ---------------------------------------------------------------------------------


def _log(**kw: bool) -> WatchLog:
    fixed = datetime(2026, 12, 1, 8, 0, 5, tzinfo=timezone(timedelta(hours=1)))
    return WatchLog(clock=lambda: fixed, **kw)


EVENTS = [
    WatchEvent("started", "watching drop (attended)"),
    WatchEvent("waiting", "waiting for drop/x to finish arriving", path=Path("drop/x")),
    WatchEvent("imported", "received abc: pending", id="ab" * 32, path=Path("drop/b\x1bndle")),
    WatchEvent("error", "could not import drop/y: boom", path=Path("drop/y")),
    WatchEvent("stopped", "stopped watching"),
]


def test_watch_lines_carry_a_timestamp() -> None:
    log = _log()
    assert log.stamp() == "2026-12-01T08:00:05+01:00"
    assert [e.kind for e in EVENTS if log.wanted(e)] == [e.kind for e in EVENTS]
    assert log.text(EVENTS[2]) == "received abc: pending"


def test_watch_quiet_keeps_arrivals_and_errors_only() -> None:
    log = _log(quiet=True)
    assert [e.kind for e in EVENTS if log.wanted(e)] == ["imported", "error"]


def test_watch_verbose_names_kind_id_and_path_made_visible() -> None:
    text = _log(verbose=True).text(EVENTS[2])
    assert text.startswith("received abc: pending [kind=imported id=" + "ab" * 32)
    assert "\x1b" not in text and "path=drop/b" in text


def test_watch_json_lines() -> None:
    log = _log(as_json=True)
    line = log.json_line(EVENTS[2])
    assert "\n" not in line and line.isascii()
    doc = json.loads(line)
    assert doc == {"time": "2026-12-01T08:00:05+01:00", "kind": "imported", "message": "received abc: pending", "id": "ab" * 32, "path": "drop/b\x1bndle"}


def test_watch_options_are_exclusive(gage, make_home, tmp_path: Path) -> None:
    home = make_home("alice")
    with pytest.raises(SystemExit) as exc:
        gage(home, "watch", "--drop", str(tmp_path), "-v", "-q")
    assert exc.value.code == 2


def _watch(home: Home, drop: Path, *flags: str, until_id: str) -> tuple[list[str], str]:
    env = {**os.environ, "GAGE_HOME": str(home.root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage", "watch", "--drop", str(drop), "--settle", "0.2", *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Stop once the line naming the bundle is out (a condition, not a sleep that a busy machine
    # outlasts); the cap only ends a run that went wrong.
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if until_id in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(timeout=120), f"no line named {until_id} in {lines}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        reader.join(timeout=120)  # the rest of standard output, to its end
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert proc.returncode == 0, err
    return lines, err


def test_watch_json_and_quiet_end_to_end(two, tmp_path: Path) -> None:
    alice, bob = two
    bid = _send(bob, tmp_path, {"a.txt": b"a\n"})
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copytree(tmp_path / "wire" / bid, drop / bid)
    lines, _err = _watch(alice, drop, "--json", "-q", until_id=bid)
    docs = [json.loads(ln) for ln in lines]
    assert [d["kind"] for d in docs] == ["imported"], "quiet: no started or stopped"
    assert docs[0]["id"] == bid and docs[0]["time"][:4].isdigit()


def test_watch_text_lines_start_with_the_time(two, tmp_path: Path) -> None:
    alice, bob = two
    bid = _send(bob, tmp_path, {"a.txt": b"a\n"})
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copytree(tmp_path / "wire" / bid, drop / bid)
    lines, _err = _watch(alice, drop, "-v", until_id=bid)
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d ")
    assert lines and all(stamp.match(ln) for ln in lines), lines
    assert any("watching" in ln for ln in lines) and any(f"id={bid}" in ln for ln in lines)


def test_accept_and_reject_json(two, gage, tmp_path: Path) -> None:
    alice, bob = two
    first = _send(bob, tmp_path, {"a.txt": b"a\n"})
    store.import_bundle(alice, tmp_path / "wire" / first)
    doc = _strict(gage(alice, "accept", first[:10], "--json").out)
    assert doc == {"id": first, "state": "accepted", "how": "human", "verdict": "verified"}
    second = _send(bob, tmp_path, {"b.txt": b"b\n"})
    store.import_bundle(alice, tmp_path / "wire" / second)
    doc = _strict(gage(alice, "reject", second, "--why", "not \x1b now", "--json").out)
    assert doc == {"id": second, "state": "rejected", "why": "not \x1b now"}
