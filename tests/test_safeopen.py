"""gage.bundle.safeopen: the one way gage opens a file it did not write (issue 11).

Each refusal below is something a hostile bundle folder can hold; each must be refused by
the opener itself, before any byte is read, and the same way for every reader.
"""

from __future__ import annotations

import ast
import errno
import os
import threading
from pathlib import Path

import pytest

from gage.bundle import safeopen

GAGE = Path(__file__).resolve().parent.parent / "gage"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "bundle"
    (r / "payload" / "sub").mkdir(parents=True)
    (r / "payload" / "sub" / "f.txt").write_bytes(b"hello")
    (tmp_path / "secret.txt").write_bytes(b"outside the bundle")
    return r


def test_a_regular_file_beneath_the_bundle_opens(root: Path) -> None:
    fd, st = safeopen.open_regular_beneath(root, "payload/sub/f.txt")
    try:
        assert st.st_size == 5 and os.read(fd, 10) == b"hello"
    finally:
        os.close(fd)
    assert safeopen.read_head(root, "payload/sub/f.txt", 3) == (b"hel", 5)
    assert safeopen.read_head(root, "payload/sub/f.txt", 5) == (b"hello", None)


def test_a_symlink_as_the_file_is_refused(root: Path, tmp_path: Path) -> None:
    (root / "payload" / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(OSError) as info:
        safeopen.open_regular_beneath(root, "payload/link.txt")
    assert info.value.errno == errno.ELOOP
    with pytest.raises(OSError):
        safeopen.read_head(root, "payload/link.txt", 100)


def test_a_symlink_as_a_folder_on_the_way_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f.txt").write_bytes(b"not in the bundle")
    (root / "payload" / "linked").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError) as info:
        safeopen.open_beneath(root, "payload/linked/f.txt")
    assert info.value.errno in (errno.ELOOP, errno.ENOTDIR)


def test_a_fifo_is_refused_without_hanging(root: Path) -> None:
    os.mkfifo(root / "payload" / "fifo")
    outcome: list[BaseException | None] = []

    def try_it() -> None:
        try:
            safeopen.open_regular_beneath(root, "payload/fifo")
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 (recorded and checked below)
            outcome.append(exc)

    t = threading.Thread(target=try_it, daemon=True)
    t.start()
    t.join(60)  # a guard against a hang, not a speed limit: the open never waits for a writer
    assert not t.is_alive(), "opening a FIFO blocked"
    assert len(outcome) == 1 and isinstance(outcome[0], safeopen.NotRegularFileError)
    with pytest.raises(safeopen.NotRegularFileError):
        safeopen.read_head(root, "payload/fifo", 10)


def test_a_directory_is_refused(root: Path) -> None:
    with pytest.raises(safeopen.NotRegularFileError) as info:
        safeopen.open_regular_beneath(root, "payload/sub")
    assert info.value.errno == errno.ENODEV
    with pytest.raises(safeopen.NotRegularFileError):
        safeopen.open_regular(root / "payload")


@pytest.mark.parametrize("rel", ["../secret.txt", "payload/../../secret.txt", "/etc/passwd", "", "payload//sub/f.txt", "./payload/sub/f.txt", "payload/sub/.."])
def test_a_path_that_could_leave_the_bundle_is_refused_before_any_open(root: Path, rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []
    real = os.open
    monkeypatch.setattr(os, "open", lambda *a, **kw: opened.append(a) or real(*a, **kw))
    with pytest.raises(safeopen.OutsideError) as info:
        safeopen.open_regular_beneath(root, rel)
    assert info.value.errno == errno.EINVAL and opened == []
    with pytest.raises(safeopen.OutsideError):
        safeopen.read_head(root, rel, 10)


def test_a_hash_reads_at_most_one_byte_past_its_limit(root: Path) -> None:
    (root / "payload" / "big").write_bytes(b"x" * 10_000)
    fd, _st = safeopen.open_regular_beneath(root, "payload/big")
    try:
        size, _digest = safeopen.hash_fd(fd, limit=100)
    finally:
        os.close(fd)
    assert size == 101


def _reads_payload(tree: ast.Module) -> bool:
    """Whether a module names the payload folder (`PAYLOAD`, or `x.PAYLOAD`) at all."""
    return any(
        (isinstance(n, ast.Name) and n.id == "PAYLOAD") or (isinstance(n, ast.Attribute) and n.attr == "PAYLOAD") for n in ast.walk(tree)
    )


def test_no_other_module_opens_payload_files_itself() -> None:
    """Every os.open in a module that handles payload paths writes, or opens a folder of the
    reader's own (a destination): reading a payload file goes through gage.bundle.safeopen."""
    offenders = []
    for path in sorted(GAGE.rglob("*.py")):
        if path.name == "safeopen.py":
            continue
        source = path.read_text()
        tree = ast.parse(source)
        if not _reads_payload(tree):
            continue
        # A flags value named by a module-level constant is read as what it is set to.
        named = {t.id: ast.unparse(n.value) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.open":
                flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
                flags = named.get(flags, flags)
                if not any(w in flags for w in ("O_WRONLY", "O_RDWR", "_WRITE", "O_DIR", "O_DIRECTORY")):
                    offenders.append(f"{path.relative_to(GAGE)}:{node.lineno}: os.open(..., {flags})")
    assert offenders == []


@pytest.mark.parametrize(
    "module",
    ["bundle/checking.py", "bundle/making.py", "bundle/walk.py", "bundle/hash.py", "trust/frame.py", "inbox/extract.py", "inbox/read_json.py", "tui/payload_view.py"],
)
def test_every_payload_reader_uses_safeopen(module: str) -> None:
    source = (GAGE / module).read_text()
    assert "safeopen" in source, module
    assert "O_NONBLOCK" not in source, f"{module} builds its own flags for reading an untrusted file"
