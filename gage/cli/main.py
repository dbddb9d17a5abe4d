"""Entry point: argument parsing, the home, and the mapping from typed errors to exit codes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import Exit, GageError
from . import cmd_a2a, cmd_core, cmd_gate, cmd_trust
from .output import err, show


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gage",
        description="Signed, content-addressed bundles, and what you hold before you act on them.",
    )
    parser.add_argument("--version", action="version", version=f"gage {__version__}")
    parser.add_argument("--home", metavar="DIR", help="the gage home (default: $GAGE_HOME, else ~/.local/share/gage)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (cmd_core, cmd_trust, cmd_gate, cmd_a2a):
        module.register(sub)
    _home_anywhere(parser)
    return parser


def _home_anywhere(parser: argparse.ArgumentParser) -> None:
    """Accept `--home DIR` after the subcommand too (`gage list --home DIR`), as people type it.

    Each subcommand gets the option with a suppressed default, so it only sets `home` when
    given there, and never hides a `--home` given before the subcommand.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if not any("--home" in a.option_strings for a in sub._actions):
                    sub.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS, help="the gage home (as before the command)")
                _home_anywhere(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            # No terminal: starting the interface would write escape codes into a pipe.
            parser.print_help(sys.stderr)
            err("gage: usage: no command given, and no terminal to open the interface on")
            return int(Exit.USAGE)
        args.command = "tui"
        args.func = cmd_core.cmd_tui
    try:
        code = args.func(args)
    except GageError as exc:
        # Messages can quote file names and fields from a hostile bundle: never raw.
        err(f"gage: {exc.stage}: {show(str(exc))}")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        err("gage: interrupted")
        return 130
    except BrokenPipeError:
        return int(Exit.OK)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
