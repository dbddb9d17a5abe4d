"""`gage tui`: open the interface (also what `gage` with no command does, on a terminal)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No options: the home is the top level's `--home`."""


def run(args: argparse.Namespace) -> int:
    import sys

    from gage.cli.output import err, open_home
    from gage.format.errors import Exit, UsageError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the interface needs a terminal on standard input and output; use the commands (`gage --help`)")
    try:
        from gage.tui.app import run as run_tui
    except ImportError:
        err("gage: the interface is not available in this build; see `gage --help`")
        return int(Exit.USAGE)
    home = open_home(args)
    home.identity.key  # noqa: B018 - the interface shows it: held to its seed first, so a damaged file is an error here
    return run_tui(home)
