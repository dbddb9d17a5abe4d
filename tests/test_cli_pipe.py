"""Output into a pipe the reader has closed (`gage list --json | head -1`): gage stops quietly,
as git and cat do, with no traceback on standard error, whether it was printing a result or
an error object."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gage.home.layout import Home


def _closed_pipe_run(home: Path, *args: str) -> tuple[int, str]:
    """Run gage with standard output a pipe whose reading end is already closed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gage.cli.main", "--home", str(home), *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    Home.init(tmp_path / "h", "pipe")
    return tmp_path / "h"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("id", "--json"), 0),
        (("journal", "show"), 0),
        (("contacts", "forget", "ab", "--json"), 2),  # an error object, into the closed pipe
        (("verdict", "beef", "--json"), 8),
    ],
)
def test_a_closed_pipe_ends_quietly_with_the_commands_own_code(home: Path, args: tuple[str, ...], code: int) -> None:
    got, err = _closed_pipe_run(home, *args)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert got == code
