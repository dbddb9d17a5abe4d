"""The README's walk and A2A block, pasted as they are into a fresh folder, as a new user would
(issue 18): the walk's blocks run in order (the ceremony typed at a terminal), and the A2A block
waits for the port instead of racing `serve &`."""

from __future__ import annotations

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


def test_the_walk_pastes_as_it_is_in_a_fresh_folder(tmp_path: Path) -> None:
    from gage.format.words import derive

    first, pairing, rest = _blocks("A five-minute walk")
    co = _checkout(tmp_path)
    env = {**os.environ, "TMPDIR": str(tmp_path), "TERM": "dumb"}
    env.pop("GAGE_HOME", None)
    r = subprocess.run(["bash", "-c", first], cwd=co, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    scratch = Path(r.stdout.splitlines()[0])
    assert scratch.parent == tmp_path and (scratch / "bob.key").is_file()
    words = " ".join(w for p in derive(open_home(scratch / "bob").identity.key) for w in p)
    full = f". {co}/.venv/bin/activate && " + pairing.strip()
    code, screen = _pty(full, scratch, env, words.encode())
    assert code == 0, screen
    r = subprocess.run(["bash", "-c", f". {co}/.venv/bin/activate\n" + rest], cwd=scratch, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr  # the last command (extract) succeeds
    assert "tampered" in r.stderr  # step 6 says what changed
    assert (scratch / "q3" / "report.txt").read_text() == "the numbers for Q3\n"


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
