"""The pseudo-terminal helper the invite tests drive `gage` with closes its end once.

`Term.finish` closes the terminal and the tests then call `close` again (to be sure); a second
`os.close` of the same number closed whatever the process had opened under that number since:
a file the open interface or the test itself was reading (`EBADF` in `contacts.load`, seen
once under CI load in the interface's invite test)."""

from __future__ import annotations

import os
from pathlib import Path

from invitetest import Term

from gage.home.layout import Home


def test_closing_a_finished_term_again_leaves_a_reused_descriptor_alone(tmp_path: Path) -> None:
    term = Term(Home(tmp_path / "home"), "--version")
    assert term.finish() == 0
    other = tmp_path / "other"
    other.write_bytes(b"kept")
    fd = os.open(other, os.O_RDONLY)  # the lowest free number: the terminal's, just closed
    try:
        term.close()  # the tests' "to be sure"
        assert os.read(fd, 4) == b"kept"  # still this file's: not closed under it
    finally:
        os.close(fd)
