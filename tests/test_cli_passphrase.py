"""`gage init --protect`, `gage key protect` / `unprotect`, and signing with a protected key
on the command line: the passphrase comes from the terminal, a file or a descriptor, never
from an argument; a wrong one is exit 13 and nothing is written."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run

from gage.cli import passphrase
from gage.format.errors import Exit
from gage.format.keys import seal as keyseal

PASS = "a long passphrase"


@pytest.fixture(autouse=True)
def cheap_and_no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyseal, "OPSLIMIT", 1)
    monkeypatch.setattr(keyseal, "MEMLIMIT", 8192)
    monkeypatch.setattr(passphrase, "_have_terminal", lambda: False)


def _file(tmp_path: Path, text: str, name: str = "pass") -> str:
    p = tmp_path / name
    p.write_text(text)
    p.chmod(0o600)
    return str(p)


def _protected(gage: Callable[..., Run], tmp_path: Path) -> Path:
    home = tmp_path / "alice"
    r = gage(home, "init", "--name", "alice", "--protect", "--passphrase-file", _file(tmp_path, PASS + "\n"))
    assert r.code == 0, r.err
    assert "sealed with a passphrase" in r.out
    return home


def _state(home: Path) -> tuple[list[str], bytes, bytes]:
    return sorted(os.listdir(home / "outbox")), (home / "journal.jsonl").read_bytes(), (home / "identity.json").read_bytes()


def test_init_protect_writes_no_secret_in_the_clear(gage: Callable[..., Run], tmp_path: Path) -> None:
    home = _protected(gage, tmp_path)
    obj = json.loads((home / "identity.json").read_text())
    assert "secret" not in obj and obj["sealed"]["gage-sealed"] == 1
    r = gage(home, "id")  # no passphrase needed to say who I am
    assert r.code == 0 and "sealed with a passphrase" in r.out


def test_a_signing_command_with_a_wrong_or_missing_passphrase_exits_13_and_writes_nothing(
    gage: Callable[..., Run], tmp_path: Path
) -> None:
    home = _protected(gage, tmp_path)
    (tmp_path / "f.txt").write_text("hello")
    before = _state(home)
    r = gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share", "--passphrase-file", _file(tmp_path, "nope\n", "bad"))
    assert r.code == int(Exit.PASSPHRASE) == 13
    assert "gage: passphrase: wrong passphrase" in r.err
    assert _state(home) == before
    r = gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share")  # no terminal, no file
    assert r.code == 13 and "--passphrase-file" in r.err
    assert _state(home) == before


def test_the_right_passphrase_from_a_file_or_a_descriptor_signs(gage: Callable[..., Run], tmp_path: Path) -> None:
    home = _protected(gage, tmp_path)
    (tmp_path / "f.txt").write_text("hello")
    r = gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share", "--passphrase-file", _file(tmp_path, PASS + "\r\n"))
    assert r.code == 0, r.err
    assert gage(None, "verify", str(home / "outbox" / r.out.strip())).code == 0
    rfd, wfd = os.pipe()
    os.write(wfd, PASS.encode() + b"\n")
    os.close(wfd)
    try:
        r = gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share", "--subject", "2", "--passphrase-fd", str(rfd))
    finally:
        os.close(rfd)
    assert r.code == 0, r.err


def test_the_terminal_is_asked_when_there_is_one(gage: Callable[..., Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _protected(gage, tmp_path)
    (tmp_path / "f.txt").write_text("hello")
    prompts: list[str] = []
    monkeypatch.setattr(passphrase, "_have_terminal", lambda: True)
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or PASS)
    r = gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share")
    assert r.code == 0, r.err
    assert len(prompts) == 1 and "alice" in prompts[0]


def test_a_passphrase_is_never_an_argument(gage: Callable[..., Run], tmp_path: Path) -> None:
    home = _protected(gage, tmp_path)
    (tmp_path / "f.txt").write_text("hello")
    with pytest.raises(SystemExit) as exc:
        gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share", "--passphrase", PASS)
    assert exc.value.code == 2


def test_key_protect_unprotect_and_a_new_passphrase_typed_twice(
    gage: Callable[..., Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "bob"
    assert gage(home, "init", "--name", "bob").code == 0
    monkeypatch.setattr(passphrase, "_have_terminal", lambda: True)
    typed = iter(["one", "two"])
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(typed))
    before = (home / "identity.json").read_bytes()
    r = gage(home, "key", "protect")
    assert r.code == 13 and "differ" in r.err
    assert (home / "identity.json").read_bytes() == before
    r = gage(home, "key", "protect", "--new-passphrase-file", _file(tmp_path, "first\n"))
    assert r.code == 0, r.err
    assert "secret" not in json.loads((home / "identity.json").read_text())
    r = gage(home, "key", "protect", "--passphrase-file", _file(tmp_path, "first\n", "p1"), "--new-passphrase-file", _file(tmp_path, "second\n", "p2"))
    assert r.code == 0, r.err
    before = (home / "identity.json").read_bytes()
    r = gage(home, "key", "unprotect", "--passphrase-file", _file(tmp_path, "first\n", "p3"))
    assert r.code == 13 and (home / "identity.json").read_bytes() == before
    r = gage(home, "key", "unprotect", "--passphrase-file", _file(tmp_path, "second\n", "p4"))
    assert r.code == 0, r.err
    assert "secret" in json.loads((home / "identity.json").read_text())


def test_retiring_a_protected_key_keeps_every_secret_sealed(gage: Callable[..., Run], tmp_path: Path) -> None:
    home = _protected(gage, tmp_path)
    pf = _file(tmp_path, PASS + "\n")
    r = gage(home, "key", "retire", "--reason", "superseded", "--new", "--passphrase-file", pf)
    assert r.code == 0, r.err
    obj = json.loads((home / "identity.json").read_text())
    assert "secret" not in obj and obj["retired"][0]["secret"] is None
    old = obj["retired"][0]["key"]
    # The old key's secret is inside the seal: escalating to compromised can still sign with it.
    r = gage(home, "key", "retire", "--reason", "compromised", "--key", old, "--passphrase-file", pf)
    assert r.code == 0, r.err
    (tmp_path / "f.txt").write_text("x")
    assert gage(home, "bundle", str(tmp_path / "f.txt"), "--kind", "share", "--passphrase-file", pf).code == 0


def test_the_cli_copy_of_the_passphrase_limit_is_the_seal_s() -> None:
    assert passphrase.MAX_PASSPHRASE == keyseal.MAX_PASSPHRASE


def test_id_json_says_the_key_is_protected(gage: Callable[..., Run], tmp_path: Path) -> None:
    home = _protected(gage, tmp_path)
    assert json.loads(gage(home, "id", "--json").out)["protected"] is True
    made = gage(tmp_path / "j", "init", "--name", "j", "--protect", "--passphrase-file", _file(tmp_path, "pw\n", "pj"), "--json")
    assert json.loads(made.out)["protected"] is True
    plain = tmp_path / "plain"
    assert gage(plain, "init", "--name", "p").code == 0
    assert "protected" not in json.loads(gage(plain, "id", "--json").out)


def test_the_readme_passphrase_lines_work(gage: Callable[..., Run], tmp_path: Path) -> None:
    """The two agent lines of the README, with this home and a real descriptor."""
    import subprocess
    import sys

    home = _protected(gage, tmp_path)
    (tmp_path / "report.txt").write_text("r")
    secret = _file(tmp_path, PASS + "\n", "secret")
    env = {**os.environ, "GAGE_HOME": str(home), "SECRET_FILE": secret}
    cmd = f'{sys.executable} -m gage.cli.main bundle report.txt --passphrase-fd 3 3<"$SECRET_FILE"'
    # The child follows the cost written in the file (cheap here), as every reader does.
    r = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
