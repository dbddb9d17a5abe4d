"""`gage a2a serve` reports as `gage watch` does: the same event type, the same printer, the same lines.

For each outcome both can have (a bundle landed, a delivery refused over a limit, a bundle
already held) the watcher (a drop folder, or the mailbox for "already there", the only way
`gage watch` says it) and the A2A server report into one `WatchLog`, and the lines they
print differ only in where the bundle came from. And a peer's hostile words in what the
server reports reach a terminal escaped, through the printer, never raw.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from relaytest import open_mailbox, relay  # noqa: E402, F401  (fixture)
from test_a2a_live import bundle, homes, post, rpc_body  # noqa: E402, F401  (homes: a fixture)
from test_limits import set_limits  # noqa: E402

from gage.carriers.a2a import artifact, client, server  # noqa: E402
from gage.carriers.a2a.reports import Events  # noqa: E402
from gage.carriers.events import WatchEvent  # noqa: E402
from gage.carriers.watch import Watcher  # noqa: E402
from gage.cli.watch_log import WatchLog  # noqa: E402
from gage.home import sealing  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.inbox import store  # noqa: E402

STAMP_TEXT = "2026-01-02T03:04:05+00:00"
STAMP = re.escape(STAMP_TEXT)  # in a pattern
ID = r"(?P<id>[0-9a-f]{12})"
# Where a bundle came from, as each carrier names it: the only part the lines may differ in.
WHERE = r"(?:from (?P<path>/\S+)|from the mailbox|via A2A from 127\.0\.0\.1)"
HOSTILE = "\x1b[2J\x1b[31mEVIL\x07\u202eboss\x9b"


def _log(as_json: bool = False) -> WatchLog:
    fixed = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return WatchLog(as_json=as_json, clock=lambda: fixed)


@pytest.fixture
def serving() -> Iterator[Callable[[Home, Callable[[WatchEvent], None]], server.Server]]:
    started: list[server.Server] = []

    def start(home: Home, on_event: Callable[[WatchEvent], None]) -> server.Server:
        srv = server.Server(home, host="127.0.0.1", port=0, on_event=on_event).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop(timeout=5)


def _watch_a_drop(home: Home, tmp: Path, bundle_dir: Path, log: WatchLog) -> None:
    drop = tmp / "drop"
    drop.mkdir(exist_ok=True)
    shutil.copytree(bundle_dir, drop / bundle_dir.name)
    Watcher(home, [drop], settle=0.0, on_event=log).scan()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_landing_is_the_line_watch_prints(homes, serving, tmp_path: Path, capsys, as_json: bool) -> None:  # noqa: F811
    alice, bob = homes
    first, first_dir = bundle(alice, tmp_path, b"one\n")
    second, second_dir = bundle(alice, tmp_path, b"two\n")
    log = _log(as_json)

    _watch_a_drop(bob, tmp_path, first_dir, log)
    watched = capsys.readouterr()
    srv = serving(bob, log)
    assert client.send(alice, second_dir, srv.url).delivered
    served = capsys.readouterr()

    assert watched.err == served.err == ""
    [w], [s] = _lines(watched.out), _lines(served.out)
    message = rf"received {ID} {WHERE} into pending: VERIFIED, sender alice"
    if not as_json:
        watch_line = re.fullmatch(rf"{STAMP} {message}", w)
        # The peer's claim comes after the watcher's words, never in place of the verdict's sender.
        serve_line = re.fullmatch(rf"{STAMP} {message}; the peer claims to be \"alice\"", s)
        assert watch_line and serve_line, (w, s)
        assert (watch_line["id"], serve_line["id"]) == (first[:12], second[:12])
        return
    wj, sj = json.loads(w), json.loads(s)
    assert list(wj) == list(sj) == ["time", "kind", "message", "id", "path"]
    assert (wj["time"], wj["kind"], wj["id"]) == (STAMP_TEXT, "imported", first)
    assert (sj["time"], sj["kind"], sj["id"], sj["path"]) == (STAMP_TEXT, "imported", second, None)
    assert re.fullmatch(message, wj["message"]) and re.fullmatch(rf"{message}; the peer claims to be \"alice\"", sj["message"])
    assert w.isascii() and s.isascii()


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_refusal_over_a_limit_is_the_error_line_watch_prints(homes, serving, tmp_path: Path, capsys, as_json: bool) -> None:  # noqa: F811
    alice, bob = homes
    set_limits(bob, max_files=0)
    _bid, refused = bundle(alice, tmp_path)  # the same bundle both ways: neither lands it
    log = _log(as_json)

    _watch_a_drop(bob, tmp_path, refused, log)
    watched = capsys.readouterr()
    srv = serving(bob, log)
    with pytest.raises(client.A2ARefusedError):
        client.send(alice, refused, srv.url)
    served = capsys.readouterr()
    assert os.listdir(bob.state_dir("pending")) == []

    if as_json:
        assert watched.err == served.err == ""
        [wj], [sj] = [json.loads(x) for x in _lines(watched.out)], [json.loads(x) for x in _lines(served.out)]
        assert list(wj) == list(sj) and wj["kind"] == sj["kind"] == "error" and wj["time"] == sj["time"] == STAMP_TEXT
        w_why = re.fullmatch(r"could not import \S+: (.*)", wj["message"])
        s_why = re.fullmatch(r"refused a request via A2A from 127\.0\.0\.1: (.*); nothing was written", sj["message"])
    else:
        # An error goes to standard error, as `gage: error: ...` after the time, for both.
        assert watched.out == served.out == ""
        [w], [s] = _lines(watched.err), _lines(served.err)
        w_why = re.fullmatch(rf"{STAMP} gage: error: could not import \S+: (.*)", w)
        s_why = re.fullmatch(rf"{STAMP} gage: error: refused a request via A2A from 127\.0\.0\.1: (.*); nothing was written", s)
    assert w_why and s_why, (watched, served)
    # The same refusal in the same words: the limit, the bundle's count, the setting that would admit it.
    assert "limits.max_files" in w_why[1] and w_why[1] == s_why[1]


def test_already_there_is_the_line_watch_prints_for_the_mailbox(homes, serving, relay, tmp_path: Path, capsys) -> None:  # noqa: F811
    """The drop-folder watcher says nothing of a bundle held already; `gage watch` says it for the mailbox."""
    from gage.carriers.relay import follow, mailbox, seal

    alice, bob = homes
    address = open_mailbox(bob, relay.url)
    bid, out = bundle(alice, tmp_path)
    store.import_bundle(bob, out)  # bob holds it already
    sealed = tmp_path / "again.age"
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    with open(sealed, "wb") as f:
        seal.seal_bundle(out, key.recipient, f)
    mailbox.run(mailbox.publish(relay.url, address, sealed))
    log = _log()
    said = threading.Event()

    def on_event(event: WatchEvent) -> None:
        log(event)
        if event.kind == "skipped":
            said.set()

    stop = threading.Event()
    t = threading.Thread(
        target=follow.follow, args=(bob, relay.url, address),
        kwargs={"creds": None, "budget": None, "on_event": on_event, "stop": stop}, daemon=True,
    )
    t.start()
    try:
        assert said.wait(30), "the mailbox never said it"
    finally:
        stop.set()
        t.join(30)
    watched = capsys.readouterr()
    srv = serving(bob, log)
    assert client.send(alice, out, srv.url).delivered
    served = capsys.readouterr()

    [w] = [line for line in _lines(watched.out) if "already there" in line]
    [s] = _lines(served.out)
    pattern = rf"{STAMP} {ID} {WHERE}: already there \(pending\)"
    assert re.fullmatch(pattern, w) and re.fullmatch(pattern, s), (w, s)
    assert w.split(" ")[1] == s.split(" ")[1] == bid[:12]
    assert served.err == ""


def test_a_hostile_claimed_name_reaches_the_terminal_escaped(homes, tmp_path: Path) -> None:  # noqa: F811
    """A peer's name with ANSI, BEL, a bidi override and a C1 control, through a real `gage a2a serve`."""
    alice, bob = homes
    bid, out = bundle(alice, tmp_path)
    for as_json in (False, True):
        outs = _serve_one(bob, out, {"from_name": HOSTILE}, as_json)
        assert not any(c in outs for c in "\x1b\x07\u202e\x9b"), outs
        lines = _lines(outs)
        if as_json:
            arrived = [json.loads(x) for x in lines if json.loads(x)["kind"] in ("imported", "skipped")]
            assert [e["id"] for e in arrived] == [bid] and all(x.isascii() for x in lines)
        else:
            arrived = [x for x in lines if bid[:12] in x]
            assert len(arrived) == 1
            # Shown, escaped, inside quotes it cannot close: a person sees what the peer tried.
            assert r'the peer claims to be "\x1b[2J\x1b[31mEVIL\x07\u202eboss\x9b"' in arrived[0], arrived[0]


def _serve_one(home: Home, bundle_dir: Path, claims: dict[str, str], as_json: bool) -> str:
    """Run `gage a2a serve`, post one message carrying `bundle_dir` with `claims`, stop it: its standard output."""
    args = [sys.executable, "-m", "gage.cli.main", "--home", str(home.root), "a2a", "serve", "--port", "0"]
    proc = subprocess.Popen([*args, *(["--json"] if as_json else [])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the `started` line: the URL it serves at
        started = json.loads(first)["message"] if as_json else first
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", started)
        assert url, (first, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        msg = artifact.export_message(bundle_dir, protocol="1.0", message_id="m-hostile", claims=claims)
        answer = post(url[1], rpc_body("1.0", msg), version="1.0")
        assert answer.status_code == 200 and "result" in answer.json(), answer.text
    finally:
        proc.send_signal(signal.SIGTERM)
        outs, errs = proc.communicate(timeout=30)
    assert proc.returncode == 0, errs
    assert not any(c in errs for c in "\x1b\x07\u202e\x9b"), errs
    return first + outs


def test_the_printer_escapes_what_the_server_reports_raw() -> None:
    """The server keeps a peer's words as they came (cut to a bound); the printer alone makes them
    visible, on a line and in JSON, so no consumer of the events gets text altered twice."""
    seen: list[WatchEvent] = []
    Events(seen.append).refused("127.0.0.1", f"unknown method {HOSTILE}")
    [event] = seen
    assert event.kind == "error" and HOSTILE in event.message
    line = _log().text(event)
    assert not any(c in line for c in "\x1b\x07\u202e\x9b")
    assert r"\x1b[2J\x1b[31mEVIL\x07\u202eboss\x9b" in line
    as_json = _log(as_json=True).json_line(event)
    assert as_json.isascii() and json.loads(as_json)["message"] == event.message

