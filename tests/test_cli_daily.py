"""The command line people live in every day (issue 18): one rule for a missing path, `verify ID`
in a home, id prefixes of at least 4 hex digits, and accept/reject of several ids at once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, arrive, pair

from gage.format.errors import Exit
from gage.format.keys import key_text, short_fingerprint
from gage.home.layout import Home
from gage.inbox import send

Gage = Callable[..., Run]


@pytest.fixture
def homes(make_home) -> tuple[Home, Home]:
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    return me, bob


def _send(bob: Home, me: Home, tmp_path: Path, text: str) -> str:
    src = tmp_path / f"{abs(hash(text))}.txt"
    src.write_text(text)
    m, dest = send.create(bob, [src], kind="share", subject=text)
    arrive(me, dest)
    return m.id


@pytest.mark.parametrize("argv", [["bundle", "{missing}", "--kind", "share"], ["verify", "{missing}"], ["import", "{missing}"]])
def test_a_missing_path_is_one_rule_one_code_one_wording(gage: Gage, make_home, tmp_path: Path, argv: list[str]) -> None:
    me = make_home("me")
    missing = tmp_path / "not-here"
    r = gage(me, *(a.format(missing=missing) for a in argv))
    assert r.code == int(Exit.IO) == 7, r.err
    assert f"gage: io: {missing}: does not exist" in r.err


def test_verify_takes_the_id_of_a_held_bundle(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    bid = _send(bob, me, tmp_path, "hello")
    r = gage(me, "verify", bid[:8])
    assert r.code == 0, r.err
    assert f"ok: {bid}" in r.out
    r = gage(me, "verify", "abcdef12")  # hex, but no bundle and no such folder
    assert r.code == int(Exit.NOT_FOUND)


def test_prefixes_need_four_hex_digits_unless_one_bundle_is_held(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    first = _send(bob, me, tmp_path, "one")
    r = gage(me, "read", first[:1], "--pending")
    assert r.code == 0, r.err  # the only bundle held: any prefix of it will do
    second = _send(bob, me, tmp_path, "two")
    r = gage(me, "read", second[:3], "--pending")
    assert r.code == int(Exit.NOT_FOUND) and "at least 4 hex digits" in r.err
    assert gage(me, "read", second[:4], "--pending").code == 0 or second[:4] == first[:4]


def test_accept_and_reject_take_several_ids(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    ids = [_send(bob, me, tmp_path, f"n{i}") for i in range(4)]
    r = gage(me, "accept", ids[0][:8], ids[1][:8], "--json")
    assert r.code == 0, r.err
    rows = json.loads(r.out)
    assert [x["id"] for x in rows] == ids[:2] and all(x["state"] == "accepted" for x in rows)
    r = gage(me, "reject", ids[2][:8], ids[3][:8], "--why", "not mine")
    assert r.code == 0, r.err
    assert sorted(os.listdir(me.state_dir("rejected"))) == sorted(ids[2:])


def test_a_bad_id_among_several_moves_nothing(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    ids = [_send(bob, me, tmp_path, f"m{i}") for i in range(2)]
    r = gage(me, "accept", ids[0][:8], "ffffffffff", ids[1][:8])
    assert r.code == int(Exit.NOT_FOUND)
    assert sorted(os.listdir(me.state_dir("pending"))) == sorted(ids)


def test_one_refusal_among_several_is_reported_and_the_rest_are_decided(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    ids = [_send(bob, me, tmp_path, f"k{i}") for i in range(2)]
    assert gage(me, "reject", ids[0]).code == 0
    r = gage(me, "accept", ids[0][:8], ids[1][:8], "--json")
    assert r.code == int(Exit.REFUSED)
    rows = json.loads(r.out)
    assert rows[0]["error"]["stage"] == "refused" and rows[0]["error"]["exit_code"] == 9
    assert rows[1]["state"] == "accepted"


def test_a_failure_in_json_mode_is_one_json_object(gage: Gage, make_home, tmp_path: Path) -> None:
    me = make_home("me")
    r = gage(me, "verify", str(tmp_path / "gone"), "--json")
    assert r.code == 7 and r.err == ""
    assert json.loads(r.out) == {
        "error": {"stage": "io", "message": "does not exist", "path": str(tmp_path / "gone"), "field": None, "exit_code": 7}
    }
    r = gage(me, "verdict", "abcdef", "--json")
    assert r.code == 8 and json.loads(r.out)["error"]["stage"] == "not-found"


def test_journal_show_prints_json_words_not_python_values(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    _send(bob, me, tmp_path, "x")
    r = gage(bob, "journal", "show")
    assert r.code == 0
    assert "None" not in r.out and "True" not in r.out and "False" not in r.out
    assert "parent=null" in r.out
    # A hybrid key is named by its fingerprint, as `gage id` names it; --json keeps every byte.
    key = bob.identity.key
    assert key_text(key) not in r.out and short_fingerprint(key) in r.out
    assert key_text(key) in gage(bob, "journal", "show", "--json").out


def test_import_json_says_ok_for_a_bundle_already_there(gage: Gage, homes, tmp_path: Path) -> None:
    me, bob = homes
    src = tmp_path / "f.txt"
    src.write_text("f")
    m, dest = send.create(bob, [src], kind="share")
    assert gage(me, "import", str(dest)).code == 0
    r = gage(me, "import", str(dest), "--json")
    row = json.loads(r.out)["imported"][0]
    assert row["new"] is False and row["ok"] is True


def test_a_mistyped_command_or_choice_says_what_was_meant(capsys: pytest.CaptureFixture[str]) -> None:
    from gage.cli.main import main

    for argv, meant in ((["lsit"], "did you mean list?"), (["bundle", "x", "--kind", "shar"], "did you mean share?")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert meant in capsys.readouterr().err


def test_help_names_only_the_codes_a_command_returns_and_points_at_gage_man(capsys: pytest.CaptureFixture[str]) -> None:
    from gage.cli.main import main

    with pytest.raises(SystemExit):
        main(["list", "--help"])
    text = capsys.readouterr().out
    assert "A2A_TRANSPORT" not in text and "TAMPERED" not in text and "MALFORMED" in text
    assert "gage man" in text and "spec/cli.md" not in text and "docs/" not in text


def test_bundle_kind_defaults_to_share(gage: Gage, make_home, tmp_path: Path) -> None:
    me = make_home("me")
    (tmp_path / "a.txt").write_text("a")
    r = gage(me, "bundle", str(tmp_path / "a.txt"), "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["kind"] == "share"


def test_bash_completes_pending_ids_for_accept_and_names_for_to(gage: Gage, homes, tmp_path: Path) -> None:
    import subprocess
    import sys

    me, bob = homes
    bid = _send(bob, me, tmp_path, "tab me")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "gage"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m gage.cli.main "$@"\n')
    shim.chmod(0o755)
    script = tmp_path / "gage.bash"
    script.write_text(gage(None, "completion", "bash").out)
    probe = tmp_path / "probe.sh"
    probe.write_text(
        f"source {script}\n"
        't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _gage; echo "${COMPREPLY[*]}"; }\n'
        f't gage --home {me.root} accept ""\n'
        f't gage --home {me.root} bundle f.txt --to ""\n'
        f't gage --home {me.root} contacts remove ""\n'
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", str(probe)], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert bid in lines[0].split()
    assert lines[1].split() == ["bob"]
    assert "bob" in lines[2].split()


def test_complete_values_print_nothing_a_bundle_claims(gage: Gage, homes, tmp_path: Path, capsys) -> None:
    from gage.cli.main import main

    me, bob = homes
    bid = _send(bob, me, tmp_path, "\x1b[31mred subject")
    capsys.readouterr()
    assert main(["__complete", "ids", str(me.root)]) == 0
    out = capsys.readouterr().out
    assert out.split() == [bid] and "\x1b" not in out
    assert main(["__complete", "ids", str(tmp_path / "no-home")]) == 0


def test_the_readme_install_lines_work_on_a_fresh_home(tmp_path: Path) -> None:
    import re
    import subprocess
    import sys

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    lines = [ln.split("  #")[0].strip() for ln in readme.splitlines() if re.match(r"(mkdir -p \S+ && )?gage (man|completion) ", ln)]
    assert len(lines) == 4, lines
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gage").write_text(f'#!/bin/sh\nexec {sys.executable} -m gage.cli.main "$@"\n')
    (bin_dir / "gage").chmod(0o755)
    home = tmp_path / "fresh"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for line in lines:
        res = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, (line, res.stderr)
    assert (home / ".local/share/man/man1/gage.1").stat().st_size > 0
    assert (home / ".local/share/bash-completion/completions/gage").stat().st_size > 0
    assert (home / ".zfunc/_gage").stat().st_size > 0
    assert (home / ".config/fish/completions/gage.fish").stat().st_size > 0


def test_sizes_read_as_people_read_them() -> None:
    from gage.cli.sizes import human

    assert human(1) == "1 byte" and human(1000) == "1000 bytes"
    assert human(524289892) == "500.0 MiB (524,289,892 bytes)"


def test_bundle_says_its_size_in_a_unit(gage: Gage, make_home, tmp_path: Path) -> None:
    me = make_home("me")
    (tmp_path / "a.bin").write_bytes(b"z" * 3000)
    r = gage(me, "bundle", str(tmp_path / "a.bin"))
    assert "(2.9 KiB (3,000 bytes))" in r.err


def test_key_export_to_standard_output_ends_with_a_newline(gage: Gage, make_home) -> None:
    me = make_home("me")
    r = gage(me, "key", "export")
    assert r.code == 0 and r.out.endswith("}\n")


def test_the_a2a_extra_hint_says_what_works_without_the_index() -> None:
    from gage.cli import extras

    assert "pip install -e '.[a2a]'" in extras.A2A_INSTALL and ".whl[a2a]" in extras.A2A_INSTALL
    assert "gage-bundles[a2a]'" not in extras.A2A_INSTALL.replace("whl[a2a]'", "")


def test_pair_from_a_key_file_that_is_not_there_is_the_missing_path_rule(gage: Gage, make_home, tmp_path: Path) -> None:
    me = make_home("me")
    r = gage(me, "pair", str(tmp_path / "bob.key"), "--name", "bob")
    assert r.code == 7 and "does not exist" in r.err


def test_a_usage_error_in_json_mode_is_the_same_error_object(capsys: pytest.CaptureFixture[str]) -> None:
    from gage.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["list", "--state", "pendin", "--json"])
    assert exc.value.code == 2
    got = capsys.readouterr()
    doc = json.loads(got.out)["error"]
    assert doc["stage"] == "usage" and doc["exit_code"] == 2 and "did you mean pending?" in doc["message"]
    assert got.err == ""
