"""The command reference (docs/cli-reference.md) and man page (docs/gage.1), generated from the parser.

Built from the parser's own structure rather than argparse's formatted help, whose layout
changes between Python versions, so the committed file is the same wherever it is made. A
test checks the committed file is current. Regenerate with:

    python -m gage.cli.reference > docs/cli-reference.md
    python -m gage.cli.reference --man > docs/gage.1
"""

from __future__ import annotations

import argparse
import sys

from gage.cli.help import EXAMPLES, EXIT_MEANING, INTERRUPTED, walk
from gage.format.errors import Exit

HEADER = """\
# gage command reference

Generated from the parser by `python -m gage.cli.reference > docs/cli-reference.md`; do not edit by hand (a test
checks it is current). What each command guarantees is in `spec/cli.md` and the specs it names; `gage COMMAND --help`
shows the same as this page for one command.

Every command takes `--home DIR` (before or after the command; else `$GAGE_HOME`, else `~/.local/share/gage`).
"""


def _metavar(action: argparse.Action) -> str:
    if action.choices and not action.metavar:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    if action.metavar:
        return str(action.metavar)
    return str(action.dest).upper()


def _option(action: argparse.Action) -> str:
    flags = ", ".join(f"`{f}`" for f in action.option_strings)
    if action.nargs != 0:
        flags += f" `{_metavar(action)}`"
    return flags


def _positional(action: argparse.Action) -> str:
    name = _metavar(action)
    if action.nargs in ("+", "*"):
        name += "..."
    return f"[{name}]" if action.nargs in ("?", "*") else name


def _clean(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _synopsis(path: str, parser: argparse.ArgumentParser) -> str:
    parts = ["gage", *path.split()] if path else ["gage"]
    has_sub = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            has_sub = True
        elif not action.option_strings:
            parts.append(_positional(action))
    if any(a.option_strings for a in parser._actions):
        parts.insert(len(path.split()) + 1, "[options]")
    if has_sub:
        parts.append("COMMAND" if not path else "ACTION")
    return " ".join(parts)


def _help_of(parent: argparse.ArgumentParser | None, name: str) -> str:
    if parent is None:
        return ""
    for action in parent._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def markdown(parser: argparse.ArgumentParser) -> str:
    out = [HEADER]
    parents: dict[str, argparse.ArgumentParser] = {}
    for path, p in walk(parser):
        parents[path] = p
        title = f"gage {path}" if path else "gage"
        out.append(f"## `{title}`\n")
        parent = parents.get(" ".join(path.split()[:-1])) if path else None
        summary = _help_of(parent, path.split()[-1]) if path else (parser.description or "")
        text = _clean(summary)
        if text:
            out.append(text[0].upper() + text[1:] + ("" if text.endswith(".") else ".") + "\n")
        out.append(f"    {_synopsis(path, p)}\n")
        subs = [(a, a.choices) for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if subs:
            out.append("| command | what it does |\n|---|---|")
            for _a, choices in subs:
                for name in choices:
                    out.append(f"| `{name}` | {_clean(_help_of(p, name))} |")
            out.append("")
        rows = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            if action.option_strings and "--help" in action.option_strings:
                continue
            if action.option_strings and action.dest == "home" and path:
                continue  # said once, above
            name = _option(action) if action.option_strings else f"`{_positional(action)}`"
            meaning = action.help or ("print JSON instead of text" if action.dest == "json" else "")
            rows.append(f"| {name} | {_clean(meaning)} |")
        if rows:
            out.append("| argument | meaning |\n|---|---|")
            out += rows
            out.append("")
        if EXAMPLES.get(path):
            out.append("Examples:\n\n```sh")
            out += EXAMPLES[path]
            out.append("```\n")
    out.append("## Exit codes\n")
    out.append("Generated from `gage.format.errors.Exit`; the same for every command.\n")
    out.append("| code | name | meaning |\n|---:|---|---|")
    for code in Exit:
        out.append(f"| {int(code)} | {code.name} | {_clean(EXIT_MEANING[code])} |")
    out.append(f"| {INTERRUPTED} | INTERRUPTED | stopped by Ctrl-C |")
    return "\n".join(out) + "\n"


def _roff(text: str) -> str:
    """Text safe in a roff line: backslashes and hyphens escaped, no line starting with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man(parser: argparse.ArgumentParser) -> str:
    from gage import __version__

    out = [
        '.TH GAGE 1 "" "gage ' + __version__ + '" "User Commands"',
        ".SH NAME",
        "gage \\- " + _roff(parser.description or ""),
        ".SH SYNOPSIS",
        ".B gage",
        "[\\-\\-home DIR] COMMAND [options]",
        ".SH DESCRIPTION",
        _roff("Every command takes --home DIR (before or after the command; else $GAGE_HOME, else ~/.local/share/gage)."),
        _roff("gage COMMAND --help shows one command with its examples and the exit codes it can return."),
        ".SH COMMANDS",
    ]
    parents: dict[str, argparse.ArgumentParser] = {}
    for path, p in walk(parser):
        parents[path] = p
        if not path:
            continue
        parent = parents.get(" ".join(path.split()[:-1]))
        out.append(".SS " + _roff(_synopsis(path, p)))
        summary = _help_of(parent, path.split()[-1])
        if summary:
            out.append(_roff(summary))
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            if "--help" in action.option_strings or (action.dest == "home" and action.option_strings):
                continue
            name = _option(action) if action.option_strings else _positional(action)
            meaning = action.help or ("print JSON instead of text" if action.dest == "json" else "")
            out += [".TP", ".B " + _roff(name.replace("`", "")), _roff(meaning.replace("\n", " "))]
        if EXAMPLES.get(path):
            out += [".PP", "Examples:", ".nf", ".RS 4", *(_roff(e) for e in EXAMPLES[path]), ".RE", ".fi"]
    out.append(".SH EXIT STATUS")
    for code in Exit:
        out += [".TP", f".B {int(code)}", _roff(f"{code.name}: {EXIT_MEANING[code]}")]
    out += [".TP", f".B {INTERRUPTED}", "INTERRUPTED: stopped by Ctrl\\-C"]
    out += [".SH EXAMPLES", ".nf", ".RS 4", *(_roff(e) for e in EXAMPLES[""]), ".RE", ".fi"]
    # What someone who installed gage has (with pipx, uv or pip): the command's own help, not a repository file.
    out += [".SH SEE ALSO", _roff("gage --help, gage COMMAND --help, gage completion bash|zsh|fish, gage demo (a throwaway home to try gage on)")]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    from gage.cli.main import build_parser

    args = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    sys.stdout.write(man(parser) if args == ["--man"] else markdown(parser))
    return 0


if __name__ == "__main__":
    sys.exit(main())
