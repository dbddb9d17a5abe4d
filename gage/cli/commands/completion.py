"""`gage completion SHELL`: print a shell's completion script, generated from the parser (gage/cli/completion.py),
so what `pipx install` or `uv tool install` put on the path describes itself without any file beside it."""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS, help="the shell to print the script for")


def run(args: argparse.Namespace) -> int:
    from gage.cli import completion
    from gage.cli.main import build_parser
    from gage.cli.output import out

    out(completion.script(args.shell, build_parser()).rstrip("\n"))
    return 0
