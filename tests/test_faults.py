"""Issue 10, classes 2 to 4: ordinary faults give clear errors, never tracebacks, hangs or raw text.

Each test runs the command the way a user would (the CLI in-process, so an uncaught
exception fails the test; a real process where a hang or a disk is involved) and checks the
exit code of the stage (spec/cli.md) and that the message names the file at fault.
We may run as root, so "unreadable" is simulated by making the system call fail.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gagetest import pair, run_gage_process

from gage.format.errors import Exit, GageError
from gage.home import listing
from gage.home.health import check_files
from gage.home.journal.log import Journal
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import send, store
from gage.inbox.opening import open_home

HOME_FILES = ("identity.json", "contacts.toml", "authority.toml", "journal.jsonl", "settings.toml")


@pytest.fixture
def two(make_home):  # noqa: ANN001, ANN201
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    return me, bob


def _bundle(sender: Home, tmp: Path, text: str = "hello") -> Path:
    d = tmp / f"src-{text}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "note.txt").write_text(text)
    m, dest = send.create(sender, [d / "note.txt"], kind="share")
    return dest


def _fail_on(monkeypatch, name: str, target: str, exc: OSError) -> None:  # noqa: ANN001
    """Make os.<name> fail with `exc` for any path starting with `target`."""
    real = getattr(os, name)

    def failing(path, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if isinstance(path, str | os.PathLike) and os.fspath(path).startswith(target):
            raise exc
        return real(path, *a, **kw)

    monkeypatch.setattr(os, name, failing)


# --- class 2: tracebacks instead of errors ------------------------------------------------


def test_unreadable_manifest_is_an_io_error_exit_7_not_1(two, gage, tmp_path, monkeypatch) -> None:  # noqa: ANN001
    me, bob = two
    b = _bundle(bob, tmp_path)
    _fail_on(monkeypatch, "open", str(b / "manifest.json"), PermissionError(errno.EACCES, "Permission denied"))
    r = gage(None, "verify", str(b))
    assert r.code == Exit.IO, (r.code, r.err)
    assert "manifest.json" in r.err and "Permission denied" in r.err
    r = gage(me, "import", str(b))
    assert r.code == Exit.IO, (r.code, r.err)


def test_unreadable_bundle_folder_is_an_io_error(two, gage, tmp_path, monkeypatch) -> None:  # noqa: ANN001
    me, bob = two
    b = _bundle(bob, tmp_path)
    for call in ("scandir", "listdir"):
        _fail_on(monkeypatch, call, str(b), PermissionError(errno.EACCES, "Permission denied", str(b)))
    _fail_on(monkeypatch, "open", str(b / "payload"), PermissionError(errno.EACCES, "Permission denied", str(b / "payload")))
    r = gage(None, "verify", str(b))
    assert r.code in (Exit.IO, Exit.TAMPERED), (r.code, r.err)
    assert "Traceback" not in r.err
    assert me is not None


@pytest.mark.parametrize("command", [["verify"], ["import"], ["bundle", "--kind", "share"], ["a2a", "import"]])
def test_a_path_longer_than_the_system_allows_is_an_error(two, gage, command) -> None:  # noqa: ANN001
    me, _ = two
    long = "a" * 5000
    r = gage(me, *command, long)
    assert r.code in (Exit.IO, Exit.USAGE, Exit.REFUSED), (r.code, r.err)
    assert r.err.startswith("gage: ") and len(r.err) < 1000, r.err  # the name is cut short, not 5000 characters


def test_a_full_disk_during_bundle_exits_7_and_leaves_nothing(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("needs root to mount a 1 MiB tmpfs (test_a_full_disk_for_the_journal covers the journal without)")
    try:
        home = mnt / "h"
        assert run_gage_process("init", "--name", "me", home=home).code == 0
        big = tmp_path / "big.bin"
        big.write_bytes(os.urandom(2 << 20))
        r = run_gage_process("bundle", str(big), "--kind", "share", home=home)
        assert r.code == Exit.IO, (r.code, r.err)
        assert "No space left" in r.err and "Traceback" not in r.err
        assert os.listdir(home / "outbox") == []
        assert [e["event"] for e in Journal(home / "journal.jsonl", Home(home).lock).entries()] == ["init"]
        assert run_gage_process("journal", "verify", home=home).code == 0
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_full_disk_for_the_journal_is_an_error_and_writes_no_torn_line(two, monkeypatch) -> None:  # noqa: ANN001
    """A short write (a full disk, a quota) is detected, cut back, and reported; never ignored."""
    me, _ = two
    before = me.journal.path.read_bytes()
    real = os.write

    shorted: list[int] = []

    def short(fd: int, data: bytes) -> int:
        if shorted:  # once: the journal line; later writes (the head) are whole
            return real(fd, data)
        shorted.append(fd)
        return real(fd, data[: len(data) // 2])

    caught: Exception | None = None
    with monkeypatch.context() as m:  # restored before anything else writes (pytest's own output)
        m.setattr(os, "write", short)
        try:
            me.journal.append("init", name="x", key="y")
        except Exception as exc:  # noqa: BLE001
            caught = exc
    assert isinstance(caught, GageError), caught
    assert caught.exit_code == Exit.IO and "short write" in str(caught)
    assert me.journal.path.read_bytes() == before
    assert verify_journal(me.journal).ok


def test_a_full_disk_raised_by_the_journal_write_leaves_it_whole(two, monkeypatch) -> None:  # noqa: ANN001
    me, _ = two
    before = me.journal.path.read_bytes()

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    caught: Exception | None = None
    with monkeypatch.context() as m:
        m.setattr(os, "write", full)
        try:
            me.journal.append("init", name="x", key="y")
        except Exception as exc:  # noqa: BLE001
            caught = exc
    assert isinstance(caught, GageError) and caught.exit_code == Exit.IO, caught
    assert me.journal.path.read_bytes() == before


def _damage(home: Home, name: str, how: str) -> None:
    p = home.root / name
    if how == "folder":
        p.unlink(missing_ok=True)
        p.mkdir()
    elif how == "fifo":
        p.unlink(missing_ok=True)
        os.mkfifo(p)
    elif how == "not-utf8":
        p.write_bytes(b'name = "\xff\xfe"\n')
    elif how == "truncated":
        data = p.read_bytes() if p.exists() else b'[a2a]\nmax_bytes = 2000\n'
        p.write_bytes(data[: max(1, len(data) // 2 - 3)])


DAMAGE = [(f, how) for f in HOME_FILES for how in ("folder", "fifo", "not-utf8", "truncated")]


@pytest.mark.parametrize(("name", "how"), DAMAGE, ids=[f"{f}-{h}" for f, h in DAMAGE])
def test_every_damaged_home_file_is_an_error_naming_it(two, gage, tmp_path, name, how) -> None:  # noqa: ANN001
    me, bob = two
    b = _bundle(bob, tmp_path)
    store.import_bundle(me, b)
    _damage(me, name, how)
    for cmd in (["list"], ["verdict", b.name[:10]], ["contacts"], ["id"], ["journal", "verify"], ["authority", "check"]):
        r = gage(me, *cmd)
        assert "Traceback" not in r.err
        if r.code == Exit.FAILED and cmd == ["journal", "verify"]:
            continue  # the answer "does not verify", with each problem: the journal's own report
        if r.code != 0:
            assert name in r.err, (cmd, r.code, r.err)
            assert r.code in (Exit.FAILED, Exit.MALFORMED, Exit.IO, Exit.REFUSED), (cmd, r.code, r.err)
    problems = check_files(Home(me.root))
    # What the interface shows at start. A journal's damaged lines are `journal verify`'s to report
    # (a torn last line after a crash must not stop anyone); a journal it cannot read is shown.
    must_show = ("folder", "fifo") if name == "journal.jsonl" else ("folder", "fifo", "not-utf8")
    if how in must_show:
        assert problems and any(name in str(p) for p in problems), problems


@pytest.mark.parametrize(
    "text",
    [
        "contact = 5\n",
        "contact = [1, 2]\n",
        "candidate = \"x\"\n",
        '[[contact]]\nname = 5\nkey = "ed25519:' + "0" * 64 + '"\n',
        '[[contact]]\nname = "x"\nkey = "ed25519:' + "0" * 64 + '"\nmethod = 7\n',
        '[[contact]]\nname = "x"\nkey = "ed25519:' + "0" * 64 + '"\nconfirmed_at = 2026-01-01T00:00:00Z\n',
        '[[contact]]\nname = "x"\nkey = "ed25519:' + "0" * 64 + '"\nprevious = 3\n',
        '[[contact]]\nname = "x"\nkey = "ed25519:' + "0" * 64 + '"\nretired = { reason = "superseded", retired_at = [1] }\n',
        '[[candidate]]\nkey = "ed25519:' + "0" * 64 + '"\nseen_at = 12\n',
        "[contact]\nname = 1\n",
    ],
)
def test_contacts_with_a_wrong_type_is_an_error_naming_the_file(two, gage, text) -> None:  # noqa: ANN001
    me, _ = two
    me.contacts_path.write_text(text)
    for cmd in (["contacts"], ["list"], ["contacts", "--json"]):
        r = gage(me, *cmd)
        assert r.code == Exit.MALFORMED, (cmd, r.code, r.err)
        # With --json the error is the one JSON object on standard output (issue 18).
        assert "contacts.toml" in (r.out if "--json" in cmd else r.err)


def test_authority_that_is_a_folder(two, gage, tmp_path) -> None:  # noqa: ANN001
    me, bob = two
    b = _bundle(bob, tmp_path)
    store.import_bundle(me, b)
    me.authority_path.unlink()
    me.authority_path.mkdir()
    r = gage(me, "authority", "check")
    assert r.code == Exit.IO, (r.code, r.err)
    assert "authority.toml" in r.err and "folder" in r.err
    # The verdict still shows, and says the authority file is unusable (no grant applies).
    for cmd in (["verdict", b.name[:10]], ["read", b.name[:10], "--pending"], ["verdict", b.name[:10], "--json"]):
        r = gage(me, *cmd)
        assert r.code == 0, (cmd, r.code, r.err)
        assert "authority.toml" in r.out and "folder" in r.out, (cmd, r.out)


@pytest.mark.parametrize(
    "change",
    [
        {"name": 5},
        {"name": "bad\nname"},
        {"secret": 5},
        {"secret": "zz"},
        {"retired": [{"key": 1}]},
        {"retired": 3},
    ],
)
def test_identity_with_a_wrong_type_is_an_error(two, gage, change) -> None:  # noqa: ANN001
    me, _ = two
    obj = json.loads(me.identity_path.read_bytes())
    obj.update(change)
    me.identity_path.write_text(json.dumps(obj))
    r = gage(me, "id")
    assert r.code == Exit.MALFORMED, (r.code, r.err)
    assert "identity.json" in r.err


def test_torn_folder_that_is_a_file_is_an_error(two) -> None:  # noqa: ANN001
    me, _ = two
    with open(me.journal.path, "ab") as f:
        f.write(b'{"torn')
    me.journal.torn_dir.write_bytes(b"")
    with pytest.raises(GageError) as info:
        me.journal.append("init", name="x", key="y")
    assert info.value.exit_code == Exit.IO and "torn" in str(info.value)


def test_interface_shows_a_damaged_home_instead_of_crashing(two) -> None:  # noqa: ANN001
    import asyncio

    from gage.tui.app import GageApp, HomeProblemsScreen

    me, _ = two
    me.contacts_path.write_text("contact = 5\n")

    async def go() -> None:
        app = GageApp(open_home(me.root), watch=False)
        async with app.run_test() as pilot:
            await pilot.pause()
            assert isinstance(app.screen, HomeProblemsScreen)
            text = "\n".join(str(p) for p in app.screen.problems)
            assert "contacts.toml" in text
            await pilot.press("q")
        assert app.return_value == Exit.MALFORMED

    asyncio.run(go())


def test_a_drop_folder_whose_name_is_not_utf8(two, tmp_path) -> None:  # noqa: ANN001
    me, bob = two
    b = _bundle(bob, tmp_path)
    drop = os.path.join(os.fsencode(tmp_path), b"drop-\xff")
    os.mkdir(drop)
    env = {**os.environ, "GAGE_HOME": str(me.root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "watch", "--drop", os.fsdecode(drop), "--settle", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    said: list[bytes] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        deadline = time.monotonic() + 120  # a cap for a busy machine, not a wait
        while time.monotonic() < deadline and not any(b"watching" in line for line in said):
            time.sleep(0.02)  # until the watcher says it watches the folder
        assert any(b"watching" in line for line in said), said
        shutil.copytree(b, os.fsdecode(os.path.join(drop, os.fsencode(b.name))))
        while time.monotonic() < deadline and listing.find(me, b.name) is None:
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        reader.join(30)
        err = proc.stderr.read()  # type: ignore[union-attr]
    assert listing.find(me, b.name) is not None, err.decode(errors="replace")
    assert b"Traceback" not in err, err.decode(errors="replace")
    assert proc.returncode == 130  # stopped by Ctrl-C, as the exit-code table says (spec/cli.md)


# --- class 3: nothing gage opens may block ----------------------------------------------


def test_read_does_not_hang_on_a_payload_swapped_for_a_fifo(two, tmp_path) -> None:  # noqa: ANN001
    me, bob = two
    b = _bundle(bob, tmp_path, "to be swapped")
    bid = store.import_bundle(me, b).id
    p = me.state_dir("pending") / bid / "payload" / "note.txt"
    p.unlink()
    os.mkfifo(p)
    r = run_gage_process("read", bid[:10], "--pending", home=me.root, timeout=120)
    assert "Traceback" not in r.err


@pytest.mark.parametrize("name", ["contacts.toml", "authority.toml", "settings.toml", "journal.jsonl", "identity.json"])
def test_no_home_file_that_is_a_fifo_hangs_a_command(two, name) -> None:  # noqa: ANN001
    me, _ = two
    _damage(me, name, "fifo")
    for cmd in (["list"], ["contacts"], ["authority", "check"]):
        r = run_gage_process(*cmd, home=me.root, timeout=120)  # raises TimeoutExpired on a hang
        assert "Traceback" not in r.err, r.err


# --- class 4: raw text from hand-edited files -------------------------------------------


def test_contacts_prints_hand_edited_fields_sanitised(two, gage) -> None:  # noqa: ANN001
    me, bob = two
    text = me.contacts_path.read_text()
    text = text.replace('method = "', 'method = "\\u001b]0;pwned\\u0007\\u001b[2J').replace(
        'confirmed_at = "', 'confirmed_at = "\\u001b[31m'
    )
    me.contacts_path.write_text(text)
    r = gage(me, "contacts")
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\x07" not in r.out
