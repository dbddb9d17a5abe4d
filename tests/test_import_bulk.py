"""`gage import` of many folders sums up (issue 27, item 3): refusals by cause, one line each with a
count (each path with -v or --json), then `imported N, refused M (...), already there K`; the exit
code stays the first failure's (spec/cli.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gagetest import Run

from gage.format.errors import Exit
from gage.home.layout import Home
from gage.inbox import send

Gage = Callable[..., Run]


def _folders(make_home: Callable[[str], Home], tmp_path: Path, n: int, me: str = "me") -> tuple[Home, list[Path], Path]:
    home, stranger = make_home(me), make_home(f"stranger-of-{me}")
    tmp_path.mkdir(parents=True, exist_ok=True)
    (home.root / "settings.toml").write_text("[limits]\npending_unconfirmed = 3\n")
    src = tmp_path / "note.txt"
    paths = []
    for i in range(n):
        src.write_text(f"note {i}\n")
        m, _ = send.create(stranger, [src], kind="share", copy_to=tmp_path / "shared")
        paths.append(tmp_path / "shared" / m.id)
    junk = tmp_path / "not-a-bundle"
    junk.mkdir()
    (junk / "x.txt").write_text("x")
    return home, paths, junk


def test_a_bulk_import_reports_refusals_by_cause_and_sums_up(gage: Gage, make_home, tmp_path: Path) -> None:
    me, paths, junk = _folders(make_home, tmp_path, 6)
    assert gage(me, "import", str(paths[0])).code == 0
    argv = [str(p) for p in paths] + [str(junk)]
    r = gage(me, "import", *argv)
    lines = r.err.splitlines()
    assert r.code == int(Exit.REFUSED), r.err  # the first failure's code, as documented
    assert len(r.out.split()) == 3  # the ids held now: two imported (the limit is 3) and the one there already
    assert "nothing was imported" not in r.err  # untrue when others were
    causes = [ln for ln in lines if ln.startswith("gage: refused ")]
    assert causes[0].startswith("gage: refused 3 (over limits.pending_unconfirmed): first: "), r.err
    assert causes[0].endswith("[limits] pending_unconfirmed = 6")  # how to take them all, once
    assert causes[1] == f"gage: refused 1 (malformed): first: {junk}: is not a gage bundle: it has no manifest.json", r.err
    assert len(causes) == 2
    assert lines[-1] == "imported 2, refused 4 (3 over limits.pending_unconfirmed, 1 malformed), already there 1", r.err
    assert all(str(p) not in r.err for p in paths[3:])  # no line per refusal without -v


def test_verbose_and_json_name_each_refusal(gage: Gage, make_home, tmp_path: Path) -> None:
    me, paths, junk = _folders(make_home, tmp_path, 5)
    argv = [str(p) for p in paths] + [str(junk)]
    r = gage(me, "import", "-v", *argv)
    assert r.code == int(Exit.REFUSED)
    for p in paths[3:] + [junk]:
        assert str(p) in r.err, p
    assert r.err.splitlines()[-1].startswith("imported 3, refused 3 (2 over limits.pending_unconfirmed, 1 malformed)")
    me2, paths2, junk2 = _folders(make_home, tmp_path / "b", 5, me="me2")
    r = gage(me2, "import", "--json", *([str(p) for p in paths2] + [str(junk2)]))
    assert r.code == int(Exit.REFUSED)
    doc = json.loads(r.out)
    s = doc["summary"]
    assert (s["imported"], s["refused"], s["already_there"]) == (3, 3, 0)
    causes = {c["cause"]: c for c in s["refusals"]}
    assert causes["limits.pending_unconfirmed"]["count"] == 2 and causes["limits.pending_unconfirmed"]["stage"] == "refused"
    assert sorted(causes["limits.pending_unconfirmed"]["paths"]) == sorted(str(p) for p in paths2[3:])
    assert causes["malformed"]["paths"] == [str(junk2)]


def test_one_path_is_reported_as_before(gage: Gage, make_home, tmp_path: Path) -> None:
    me, _, junk = _folders(make_home, tmp_path, 0)
    r = gage(me, "import", str(junk))
    assert r.code == int(Exit.MALFORMED)
    assert r.err.startswith("gage: malformed:") and "imported 0" not in r.err
