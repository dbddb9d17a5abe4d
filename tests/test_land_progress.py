"""A landing of many shows a progress line on a terminal (count, bytes, rate) and nothing when piped."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from gage.cli.progress import CountLine
from gage.home.layout import Home
from gage.inbox import send


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_count_line_says_count_bytes_and_rate_and_steps_aside_for_a_line() -> None:
    now = [0.0]
    out = Tty()
    line = CountLine("import", out, total=3, clock=lambda: now[0])
    now[0] = 1.0
    line.add(1, 2048)
    assert out.getvalue() == "\r\x1b[2Kgage import: 1 of 3 bundles, 2.0 KiB, 1/s"
    with line.aside():
        out.write("abc\n")
    assert out.getvalue().endswith("\r\x1b[2Kabc\ngage import: 1 of 3 bundles, 2.0 KiB, 1/s")
    now[0] = 1.05
    line.add(1, 10)  # within a tenth of a second of the last draw: not drawn
    assert out.getvalue().count("gage import:") == 2
    line.clear()
    assert out.getvalue().endswith("\r\x1b[2K")


def test_no_terminal_no_line() -> None:
    out = io.StringIO()
    line = CountLine("mailbox fetch", out)
    line.add(5, 100)
    with line.aside():
        pass
    line.clear()
    assert out.getvalue() == ""
    assert line.count == 5 and line.bytes == 100


def test_gage_import_of_many_ends_with_one_summary_and_json_gives_every_id(make_home: Callable[[str], Home], gage, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    me, bob = make_home("me"), make_home("bob")
    paths = []
    for i in range(3):
        f = tmp_path / f"f{i}.txt"
        f.write_text(f"note {i}\n")
        paths.append(send.create(bob, [f], kind="share")[1])
    junk = tmp_path / "junk"
    junk.mkdir()
    r = gage(me, "import", *map(str, paths), str(junk))
    assert r.code == 3, r.err
    assert r.err.strip().splitlines()[-1] == "imported 3, refused 1 (1 malformed), already there 0"
    assert "\x1b" not in r.err  # not a terminal: no progress line
    assert sorted(r.out.split()) == sorted(p.name for p in paths)
    j = gage(me, "import", "--json", *map(str, paths))
    assert [row["id"] for row in __import__("json").loads(j.out)["imported"]] == [p.name for p in paths]
