"""The README's walk and A2A block, pasted as they are into a fresh folder, as a new user would
(issue 18): the walk's blocks run in order (the ceremony typed at a terminal), and the A2A block
waits for the port instead of racing `serve &`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from test_ceremony import _read_until

from gage.inbox.opening import open_home

ROOT = Path(__file__).resolve().parent.parent


def _blocks(section: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, re.S)


def _checkout(tmp_path: Path) -> Path:
    """A stand-in checkout whose .venv/bin/activate puts this interpreter's `gage` on PATH."""
    co = tmp_path / "checkout"
    bin_dir = co / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "gage").write_text(f'#!/bin/sh\nexec {sys.executable} -m gage.cli.main "$@"\n')
    (bin_dir / "gage").chmod(0o755)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    return co


def _pty(cmd: str, cwd: Path, env: dict[str, str], answer: bytes) -> tuple[int, str]:
    master, slave = os.openpty()
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        screen = _read_until(master, b"their 8 words:", 60)
        os.write(master, answer + b"\n")
        screen += _read_until(master, None, 60)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, screen.decode(errors="replace")


def _verdict(scratch: Path, who: str, bid: str, env: dict[str, str], co: Path) -> str:
    r = subprocess.run(
        ["bash", "-c", f". {co}/.venv/bin/activate && GAGE_HOME={who} gage verdict {bid} --json"],
        cwd=scratch, env=env, capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stdout)["verdict"])


def test_the_walk_pastes_as_it_is_in_a_fresh_folder_and_ends_verified_both_ways(tmp_path: Path) -> None:
    """Issue 27: both people pair, each with the other's key, so each side's verdict of what the other
    signed is `verified`; the README says in one line why a side that has not paired sees "unverified"."""
    from gage.format.words import derive

    first, alice_pairs, bob_pairs, rest = _blocks("A five-minute walk")
    co = _checkout(tmp_path)
    env = {**os.environ, "TMPDIR": str(tmp_path), "TERM": "dumb"}
    env.pop("GAGE_HOME", None)
    r = subprocess.run(["bash", "-c", first], cwd=co, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    scratch = Path(r.stdout.splitlines()[0])
    assert scratch.parent == tmp_path and (scratch / "bob.key").is_file() and (scratch / "alice.key").is_file()
    for block, other in ((alice_pairs, "bob"), (bob_pairs, "alice")):
        words = " ".join(w for p in derive(open_home(scratch / other).identity.key) for w in p)
        code, screen = _pty(f". {co}/.venv/bin/activate && " + block.strip(), scratch, env, words.encode())
        assert code == 0, screen
        assert f"Confirmed. {other} is now a contact" in screen
    r = subprocess.run(["bash", "-c", f". {co}/.venv/bin/activate\n" + rest], cwd=scratch, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr  # the last command succeeds
    assert "tampered" in r.stderr  # step 6 says what changed
    assert (scratch / "q3" / "report.txt").read_text() == "the numbers for Q3\n"
    # Verified on both sides: alice holds bob's report, bob holds alice's answer.
    reports = {p.name for p in (scratch / "alice" / "inbox" / "accepted").iterdir()}
    answers = {p.name for p in (scratch / "bob" / "inbox" / "pending").iterdir()}
    assert len(reports) == 1 and len(answers) == 1
    assert _verdict(scratch, "alice", reports.pop(), env, co) == "verified"
    assert _verdict(scratch, "bob", answers.pop(), env, co) == "verified"
    text = (ROOT / "README.md").read_text()
    assert "unverified" in text.split("## A five-minute walk", 1)[1].split("\n## ", 1)[0]


def test_the_a2a_block_waits_for_the_port(tmp_path: Path) -> None:
    walk = _blocks("A five-minute walk")
    (block,) = _blocks("A2A: bundles between agents")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    # The ceremony from a card asks a person; the rest runs unattended, on a port free here.
    block = "\n".join(ln for ln in block.splitlines() if "gage pair" not in ln).replace("8470", port).replace("8471", port)
    co = _checkout(tmp_path)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("GAGE_HOME", None)
    setup = walk[0] + "\n" + "GAGE_HOME=bob gage bundle bob.key >/dev/null\n"  # homes, and something in the outbox
    script = f"cd {co}\n{setup}\necho 'the numbers for Q3' > report.txt\n{block}"
    r = subprocess.run(["bash", "-c", script], cwd=co, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "delivered to pending" in r.stdout + r.stderr
    assert "connection" not in r.stderr.lower() or "refused" not in r.stderr.lower()
