"""What people expect from git and minisign (issue 27, item 6, the command line): list filters,
`journal show -n`, pairing a key already confirmed, passphrase files and short passphrases,
one way to write word-pairs, Ctrl-C and SIGTERM on the long-running commands, and per-command
exit codes in --help."""

from __future__ import annotations

import builtins
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, arrive, pair, run_gage_process

from gage.cli import help as help_mod
from gage.cli import passphrase
from gage.cli.main import build_parser
from gage.format.errors import Exit, PassphraseError
from gage.format.keys import seal as keyseal
from gage.format.keys.fingerprint import fingerprint
from gage.format.words import derive, format_pairs, pair_text
from gage.home.layout import Home
from gage.inbox import send

Gage = Callable[..., Run]


def _send(frm: Home, to: Home, tmp_path: Path, text: str, kind: str = "share") -> str:
    src = tmp_path / f"{frm.identity.name}-{abs(hash(text))}.txt"
    src.write_text(text)
    m, dest = send.create(frm, [src], kind=kind, subject=text)  # type: ignore[arg-type]
    arrive(to, dest)
    return m.id


@pytest.fixture
def inbox(make_home, tmp_path: Path) -> tuple[Home, dict[str, list[str]]]:
    me, bob, carol = make_home("me"), make_home("bob"), make_home("carol")
    pair(me, "bob", bob)
    ids = {
        "bob": [_send(bob, me, tmp_path, f"bob {i}", "share" if i % 2 else "question") for i in range(5)],
        "carol": [_send(carol, me, tmp_path, f"carol {i}") for i in range(2)],
    }
    return me, ids


# --- gage list --limit --kind --from ---------------------------------------------------------


def test_list_filters_by_kind_and_sender_and_cuts_to_a_limit(gage: Gage, inbox) -> None:
    me, ids = inbox
    every = json.loads(gage(me, "list", "--json").out)
    r = gage(me, "list", "--from", "bob", "--json")
    assert r.code == 0, r.err
    assert sorted(x["id"] for x in json.loads(r.out)) == sorted(ids["bob"])
    r = gage(me, "list", "--from", "bob", "--kind", "question", "--json")
    assert {x["kind"] for x in json.loads(r.out)} == {"question"} and len(json.loads(r.out)) == 3
    r = gage(me, "list", "--limit", "2", "--json")
    assert [x["id"] for x in json.loads(r.out)] == [x["id"] for x in every[:2]]
    r = gage(me, "list", "--limit", "2")
    assert len(r.out.splitlines()) == 2 and "5 more" in r.err
    text = gage(me, "list", "--from", "bob", "--kind", "share").out.splitlines()
    assert len(text) == 2 and all(" share " in ln and " bob " in ln for ln in text)
    # A candidate's claimed name is a claim, never a name to filter by; its fingerprint is.
    carol_key = next(x["sender"]["fingerprint"] for x in every if x["id"] == ids["carol"][0])
    assert gage(me, "list", "--from", "carol").code == int(Exit.UNKNOWN_KEY)
    r = gage(me, "list", "--from", carol_key, "--json")
    assert sorted(x["id"] for x in json.loads(r.out)) == sorted(ids["carol"])


def test_journal_show_n_gives_the_last_entries(gage: Gage, inbox) -> None:
    me, _ = inbox
    every = json.loads(gage(me, "journal", "show", "--json").out)
    last = json.loads(gage(me, "journal", "show", "-n", "3", "--json").out)
    assert [e["seq"] for e in last] == [e["seq"] for e in every[-3:]]
    lines = gage(me, "journal", "show", "-n", "2").out.splitlines()
    assert len(lines) == 2 and lines[-1].split()[0] == str(every[-1]["seq"])
    r = run_gage_process("journal", "show", "-n", "0", home=me.root)
    assert r.code == int(Exit.USAGE) and "at least 1" in r.err


# --- pairing a key already confirmed ---------------------------------------------------------


def test_pairing_a_key_already_confirmed_says_so_before_any_word(gage: Gage, make_home, tmp_path: Path, monkeypatch) -> None:
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    assert gage(bob, "a2a", "card", "--json").code == 0
    card = tmp_path / "bob.card.json"
    card.write_text(gage(bob, "a2a", "card", "--url", "http://127.0.0.1:8471/", "--json").out)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)

    def no_words(prompt: str = "") -> str:
        raise AssertionError("asked for words")

    monkeypatch.setattr(builtins, "input", no_words)
    r = gage(me, "pair", "--card", str(card), "--name", "bob")
    assert r.code == 0, r.err
    assert f"already a confirmed contact here, as bob ({fingerprint(bob.identity.key)})" in r.out + r.err
    assert "Read YOUR words" not in r.out


# --- passphrases -----------------------------------------------------------------------------


def test_a_passphrase_file_others_can_read_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "pass"
    p.write_text("a long passphrase\n")
    p.chmod(0o644)
    with pytest.raises(PassphraseError, match="chmod 600"):
        passphrase.from_file(str(p))
    p.chmod(0o600)
    assert passphrase.from_file(str(p)) == b"a long passphrase"


def test_a_fifo_whose_writer_never_writes_is_a_clear_passphrase_error(
    gage: Gage, make_home, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(keyseal, "OPSLIMIT", 1)
    monkeypatch.setattr(keyseal, "MEMLIMIT", 8192)
    monkeypatch.setattr(passphrase, "_have_terminal", lambda: False)
    pw = tmp_path / "pw"
    pw.write_text("a long passphrase\n")
    pw.chmod(0o600)
    home = tmp_path / "me"
    assert gage(home, "init", "--name", "me", "--protect", "--passphrase-file", str(pw)).code == 0
    fifo = tmp_path / "pass.fifo"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer that holds it open and writes nothing
    monkeypatch.setattr(passphrase, "PIPE_WAIT", 0.3)
    try:
        (tmp_path / "f.txt").write_text("x")
        r = gage(home, "bundle", str(tmp_path / "f.txt"), "--passphrase-file", str(fifo))
    finally:
        os.close(held)
    assert r.code == int(Exit.PASSPHRASE) == 13, r.err
    assert "Traceback" not in r.err and "TypeError" not in r.err
    assert "no passphrase" in r.err and str(fifo) in r.err


def test_a_fifo_no_writer_ever_opens_waits_the_same_bound_and_says_so(tmp_path: Path, monkeypatch) -> None:
    fifo = tmp_path / "pass.fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(passphrase, "PIPE_WAIT", 0.5)
    t0 = time.monotonic()
    with pytest.raises(PassphraseError, match="no writer opened it") as exc:
        passphrase.from_file(str(fifo))
    assert 0.5 <= time.monotonic() - t0 < 5  # the bound, not a hang and not at once
    assert exc.value.exit_code == 13


def test_a_fifo_that_is_written_gives_its_first_line(tmp_path: Path) -> None:
    fifo = tmp_path / "pass.fifo"
    os.mkfifo(fifo)
    w = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    os.write(w, b"from a pipe\n")
    try:
        assert passphrase.from_file(str(fifo)) == b"from a pipe"
    finally:
        os.close(w)


def test_a_short_new_passphrase_is_warned_and_asked_again(monkeypatch, capsys) -> None:
    monkeypatch.setattr(passphrase, "_have_terminal", lambda: True)
    typed = iter(["short", "short"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(typed))
    assert passphrase.from_terminal("new passphrase: ", twice=True) == b"short"
    assert "5 characters" in capsys.readouterr().err
    # Enter at the second prompt chooses another; a long one is asked twice as usual.
    typed = iter(["short", "", "a much longer one", "a much longer one"])
    assert passphrase.from_terminal("new passphrase: ", twice=True) == b"a much longer one"
    assert capsys.readouterr().err.count("warning") == 1
    typed = iter(["a much longer one", "a much longer one"])
    assert passphrase.from_terminal("new passphrase: ", twice=True) == b"a much longer one"
    assert "characters" not in capsys.readouterr().err


# --- word-pairs: one way everywhere ----------------------------------------------------------


def test_word_pairs_are_written_one_way_in_id_and_pair(gage: Gage, make_home, monkeypatch) -> None:
    me, bob = make_home("me"), make_home("bob")
    mine = derive(me.identity.key)
    assert format_pairs(mine) == "  ".join(pair_text(a, b) for a, b in mine)
    assert all(pair_text(a, b) in gage(me, "id").out for a, b in mine)
    path = bob.root / "bob.key"
    path.write_text(gage(bob, "key", "export").out)
    words = " ".join(w for p in derive(bob.identity.key) for w in p)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(builtins, "input", lambda prompt="": words)
    r = gage(me, "pair", str(path), "--name", "bob")
    assert r.code == 0, r.err
    for i, (a, b) in enumerate(mine, 1):
        assert f"{i}. {pair_text(a, b)}" in r.out
        assert f"{a} {b}" not in r.out


# --- Ctrl-C and SIGTERM -----------------------------------------------------------------------


def _start(args: list[str], home: Path | None, ready: str, stream: str = "stderr") -> subprocess.Popen[str]:
    env = dict(os.environ)
    if home is not None:
        env["GAGE_HOME"] = str(home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", *args], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    pipe = proc.stderr if stream == "stderr" else proc.stdout
    assert pipe is not None
    deadline = time.monotonic() + 60
    seen = ""
    while time.monotonic() < deadline:
        line = pipe.readline()
        seen += line
        if ready in line:
            return proc
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"never ready: {seen}")


def test_watch_exits_130_on_ctrl_c(make_home, tmp_path: Path) -> None:
    home = make_home("me")
    drop = tmp_path / "drop"
    drop.mkdir()
    proc = _start(["watch", "--drop", str(drop)], home.root, "watching", stream="stdout")
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, errs = proc.communicate(timeout=30)
    assert proc.returncode == 130, errs


@pytest.mark.skipif(shutil.which("nats-server") is None and not Path(sys.executable).with_name("nats-server").exists(), reason="needs nats-server")
def test_relay_dev_exits_130_on_ctrl_c(tmp_path: Path) -> None:
    pytest.importorskip("nats")
    proc = _start(["relay", "dev", "--port", "0", "--dir", str(tmp_path / "store")], None, "Ctrl-C stops it")
    proc.send_signal(signal.SIGINT)
    _, errs = proc.communicate(timeout=30)
    assert proc.returncode == 130, errs
    assert "stopped" in errs


def test_a2a_serve_says_why_it_stops_on_sigterm(make_home) -> None:
    pytest.importorskip("uvicorn")
    home = make_home("me")
    proc = _start(["a2a", "serve", "--port", "0"], home.root, "Ctrl-C stops", stream="stdout")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    outs, errs = proc.communicate(timeout=30)
    # Its last line, as `gage watch` prints a `stopped` event: the time, then why it stopped.
    last = outs.splitlines()[-1]
    assert re.fullmatch(r"\S+ stopped serving: it was sent SIGTERM .*; what had arrived is in pending", last), outs
    assert proc.returncode == 0, errs


# --- --help: the exit codes each command can return -------------------------------------------


def test_every_command_s_help_lists_only_its_own_exit_codes() -> None:
    parser = build_parser()
    for path, sub in help_mod.walk(parser):
        if path == "" or help_mod.subcommands(sub):
            continue
        assert path in help_mod.CODES, f"gage {path}: no exit codes of its own"
        text = sub.format_help()
        listed = [c for c in Exit if f"  {int(c):>3}  {c.name} " in text]
        assert len(listed) < len(Exit), f"gage {path} lists every exit code"
    relay = help_mod.codes_for("mailbox create")
    assert Exit.RELAY in relay and Exit.A2A_REFUSED not in relay
