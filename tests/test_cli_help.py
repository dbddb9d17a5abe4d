"""Help, the generated reference and shell completion: all made from the parser, so none can drift."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gage.cli import completion, help, reference
from gage.cli.main import build_parser, main
from gage.format.errors import Exit

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "cli-reference.md"
MAN = ROOT / "docs" / "gage.1"


def test_every_exit_code_has_a_meaning_and_is_in_the_table() -> None:
    assert set(help.EXIT_MEANING) == set(Exit), "a new Exit code needs a line in gage/cli/help.py"
    table = help.exit_table()
    for code in Exit:
        assert f"{int(code):>3}  {code.name}" in table
    assert "130" in table


def test_every_command_has_an_example_and_the_exit_codes_in_its_help() -> None:
    parser = build_parser()
    paths = [path for path, _p in help.walk(parser)]
    assert {"", "bundle", "key retire", "a2a export", "extract", "completion", "journal show"} <= set(paths)
    missing = [p or "gage" for p in paths if not help.EXAMPLES.get(p)]
    assert not missing, f"no example for {missing}"
    for path, p in help.walk(parser):
        text = p.format_help()
        assert "examples:" in text, path
        assert "exit codes:" in text and "USAGE" in text and "gage man" in text, path
        # Only the codes this command can return (issue 18): no A2A failures in `list --help`.
        for code in Exit:
            assert (f"{int(code):>3}  {code.name} " in text) == (code in help.codes_for(path)), (path, code)


def test_examples_name_commands_that_exist() -> None:
    """An example must run the command it illustrates (a renamed command leaves no stale example)."""
    paths = {path for path, _p in help.walk(build_parser())}
    for path, examples in help.EXAMPLES.items():
        assert path in paths, f"EXAMPLES has {path!r}, which is no command"
        for ex in examples:
            assert f"gage {path}".strip() in ex or "gage --home" in ex, (path, ex)


def test_gage_help_shows_examples_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["extract", "--help"], ["a2a", "send", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        text = capsys.readouterr().out
        assert "examples:\n  gage" in text and "exit codes:" in text and "REFUSED" in text, argv


def test_the_committed_reference_is_current() -> None:
    expected = reference.markdown(build_parser())
    assert REFERENCE.read_text(encoding="utf-8") == expected, (
        "docs/cli-reference.md is stale: run `python -m gage.cli.reference > docs/cli-reference.md`"
    )


def test_the_committed_man_page_is_current_and_renders() -> None:
    assert MAN.read_text(encoding="utf-8") == reference.man(build_parser()), (
        "docs/gage.1 is stale: run `python -m gage.cli.reference --man > docs/gage.1`"
    )
    groff = shutil.which("groff")
    if groff:
        res = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", str(MAN)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and res.stderr == "", res.stderr
    text = MAN.read_text(encoding="utf-8")
    assert text.startswith(".TH GAGE 1 ") and ".SH EXIT STATUS" in text and ".SS gage extract" in text
    # The page is read by someone who installed gage: it points at what they have, not at this repository.
    see_also = text.split(".SH SEE ALSO\n", 1)[1]
    assert "gage COMMAND \\-\\-help" in see_also and "gage completion" in see_also
    assert not any(name in text for name in ("spec/", "docs/", ".md"))


def test_the_reference_names_every_command_and_option() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    for path, p in help.walk(build_parser()):
        assert (f"## `gage {path}`" if path else "## `gage`") in text, path
        for action in p._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help") and not (flag == "--home" and path):
                    assert f"`{flag}`" in text, (path, flag)


# --- completion ------------------------------------------------------------------------------


def _script(gage, shell: str) -> str:
    r = gage(None, "completion", shell)
    assert r.code == 0, r.err
    return r.out


def test_completion_unknown_shell_is_a_usage_error(gage) -> None:
    with pytest.raises(SystemExit) as exc:
        gage(None, "completion", "tcsh")
    assert exc.value.code == 2


def test_bash_completion_parses_and_completes(gage, tmp_path: Path) -> None:
    script = tmp_path / "gage.bash"
    script.write_text(_script(gage, "bash"))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    probe = tmp_path / "probe.sh"
    probe.write_text(
        f"source {script}\n"
        't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _gage; echo "${COMPREPLY[*]}"; }\n'
        "t gage ke\n"
        "t gage --home /tmp key re\n"
        't gage bundle --kind ""\n'
        't gage completion ""\n'
        "t gage extract --pe\n"
        't gage a2a export --protocol ""\n'
    )
    res = subprocess.run(["bash", str(probe)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "key"
    assert lines[1] == "retire"
    assert lines[2].split() == ["share", "question", "answer", "review-request", "ack"]
    assert lines[3].split() == ["bash", "zsh", "fish"]
    assert lines[4] == "--pending"
    assert lines[5].split() == ["1.0", "0.3"]


def test_zsh_completion(gage, tmp_path: Path) -> None:
    text = _script(gage, "zsh")
    assert text.startswith("#compdef gage\n")
    assert "compdef _gage gage" in text and "_describe command subs" in text
    assert '("key retire")' in text and "'extract:copy an accepted bundle" in text
    zsh = shutil.which("zsh")
    if zsh:
        script = tmp_path / "_gage"
        script.write_text(text)
        assert subprocess.run([zsh, "-n", str(script)], capture_output=True).returncode == 0
    else:
        assert text.count("case ") == text.count("esac"), "every case is closed"
        assert text.count("{") == text.count("}")


def test_fish_completion(gage, tmp_path: Path) -> None:
    text = _script(gage, "fish")
    lines = text.splitlines()
    assert "complete -c gage -f" in lines
    assert any(ln.startswith("complete -c gage -n '__gage_at \"\"' -a extract") for ln in lines)
    assert any("__gage_at \"key\"' -a retire" in ln for ln in lines)
    assert any("-l kind -x -a 'share question answer review-request ack'" in ln for ln in lines)
    fish = shutil.which("fish")
    if fish:
        script = tmp_path / "gage.fish"
        script.write_text(text)
        assert subprocess.run([fish, "--no-execute", str(script)], capture_output=True).returncode == 0
    else:
        opens = sum(1 for ln in lines if ln.strip().split(" ")[0] in ("function", "for", "if", "switch"))
        ends = sum(1 for ln in lines if ln.strip() == "end")
        assert opens == ends, "every block is closed"
        for ln in lines:
            if ln.startswith("complete "):
                assert ln.count("'") % 2 == 0 or "\\'" in ln, ln


def test_completion_covers_every_command(gage) -> None:
    parser = build_parser()
    for shell in completion.SHELLS:
        text = completion.script(shell, parser)
        for path, _p in help.walk(parser):
            if path:
                assert path.split()[-1] in text, (shell, path)


def test_gage_help_lists_every_command_once_under_its_task() -> None:
    parser = build_parser()
    commands = list(help.subcommands(parser))
    grouped = [name for _title, names in help.GROUPS for name in names]
    assert sorted(grouped) == sorted(commands), "every command in exactly one group of gage/cli/help.py's GROUPS"
    text = parser.format_help()
    assert "commands, by task:" in text and "\n  more\n" not in text
    at = [text.index(f"\n  {title}\n") for title, _names in help.GROUPS]
    assert at == sorted(at) and [t.split(":")[0] for t, _n in help.GROUPS] == ["start", "exchange", "review", "keys", "relay", "agents"]
    for (title, names), start, end in zip(help.GROUPS, at, [*at[1:], len(text)], strict=True):
        section = text[start:end]
        for name in names:
            assert f"\n    {name} " in section or f"\n    {name}\n" in section, (title, name)


def test_a_command_no_group_names_is_still_listed() -> None:
    import argparse

    from gage.cli.parser import GageParser

    p = GageParser(prog="gage")
    sub = p.add_subparsers(metavar="COMMAND")
    sub.add_parser("list", help="list bundles in the home")
    sub.add_parser("newcomer", help="a command added later")
    p.formatter_class = help.GroupedHelp
    text = p.format_help()
    assert "\n  review: " in text and "\n  more\n    newcomer" in text and isinstance(p, argparse.ArgumentParser)


def test_every_commands_help_opens_with_one_sentence_saying_what_it_does() -> None:
    for path, p in help.walk(build_parser()):
        if not path:
            continue
        opening = p.format_help().split("\n\n")[1]
        assert opening.endswith(".") and opening[:1].isupper() and ". " not in opening, (path, opening)
        assert opening.split()[0].lower() not in ("the", "a", "an", "this", "what"), (path, opening)  # says what it does
