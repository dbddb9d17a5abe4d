"""Entry point: argument parsing, the home, and the mapping from typed errors to exit codes.

Start-up matters for a command typed many times a day: this module and the table of commands
(gage/cli/commands/__init__.py) import nothing heavy; a command's own module is imported when
that command runs, and what its body needs (the signing library, the watcher, the interface)
when its `run` does.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from gage import __version__
from gage.cli import commands
from gage.cli.help import attach as attach_help
from gage.cli.parser import GageParser
from gage.format.errors import Exit, GageError

# Commands whose work can be long (hashing and copying large payloads): a progress line on a
# terminal's standard error, nothing when it is piped. `a2a serve` and `watch` log instead.
PROGRESS = {"bundle", "verify", "import", "accept", "forward", "extract", "a2a export", "a2a import"}


def build_parser(only: str | None = None, *, table_only: bool = False) -> argparse.ArgumentParser:
    """The whole parser, or (`only`, a name in the table) the top level with one command's parser under it.

    Building all fifty-odd parsers costs more than most commands' own work, so a command run by
    name (or its `--help`) gets only its own; completion and `gage man` need every parser and get
    them, as does anything `main` cannot name. `table_only`: every command by its name and one
    line, from the table alone, no command's module imported: all that `gage --help`,
    `gage --version` and a mistyped command (did you mean?) read.
    """
    parser = GageParser(
        prog="gage",
        description="Signed, content-addressed bundles, and what you hold before you act on them.",
    )
    parser.add_argument("--version", action="version", version=f"gage {__version__}")
    parser.add_argument("--home", metavar="DIR", help="the gage home (default: $GAGE_HOME, else ~/.local/share/gage)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only is not None else commands.COMMANDS:
        p = sub.add_parser(name, help=commands.COMMANDS[name][1])
        if not table_only:
            module = commands.load(name)
            module.add_arguments(p)
            p.set_defaults(func=module.run)
    _home_anywhere(parser)
    attach_help(parser)  # an example and the exit codes in every command's --help
    return parser


# The top level's own options (above): those taking a value, and the help flags.
_TOP_WITH_VALUE = ("--home",)
_HELP = ("-h", "--help")
_TOP_ALONE = ("--version", *_HELP)


def _top_level_only(argv: Sequence[str]) -> bool:
    """Whether `argv` holds only the top level's own options (`gage`, `gage --help`, `gage --version`,
    with `--home DIR` or not): then no command's parser is needed to answer."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _TOP_WITH_VALUE:
            i += 2
        elif word in _TOP_ALONE or any(word.startswith(f"{o}=") for o in _TOP_WITH_VALUE):
            i += 1
        else:
            return False
    return True


def command_named(argv: Sequence[str]) -> str | None:
    """The command `argv` runs (or shows the help of), when that is plain from the words alone; else None.

    Anything it cannot be sure of (a help flag before the command, no command, an unknown
    top-level option) gives None, and `main` builds what answers it: the table alone, or
    every parser."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--" or word in _HELP:
            return None
        if word in _TOP_WITH_VALUE:
            i += 2
            continue
        if any(word.startswith(f"{o}=") for o in _TOP_WITH_VALUE):
            i += 1
            continue
        if word.startswith("-"):
            return None  # --version, or an option argparse should judge with every command known
        return word
    return None


def _command_path(args: argparse.Namespace) -> str:
    sub = getattr(args, "a2a_command", None) if args.command == "a2a" else None
    return f"{args.command} {sub}" if sub else str(args.command)


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


def err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["__complete"]:  # for the completion scripts, not a command (gage/cli/complete_values.py)
        from gage.cli.complete_values import main as complete_main

        return complete_main(given[1:])
    named = command_named(given)
    if named in commands.COMMANDS:
        parser = build_parser(named)
    else:
        # No command (the top level's own options), or a word that is none (a typo): the table
        # answers. Anything else (an option argparse must judge before the command): every parser.
        parser = build_parser(table_only=named is not None or _top_level_only(given))
    GageParser.json_errors = "--json" in given
    try:
        args = parser.parse_args(argv)
        if args.command is not None and not hasattr(args, "func"):
            args = build_parser(args.command).parse_args(argv)  # named in a way command_named did not read
    finally:
        GageParser.json_errors = False
    if args.command is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            # No terminal: starting the interface would write escape codes into a pipe.
            parser.print_help(sys.stderr)
            err("gage: usage: no command given, and no terminal to open the interface on")
            return int(Exit.USAGE)
        args.command = "tui"
        args.func = commands.load("tui").run  # as the table runs every command
    try:
        if _command_path(args) in PROGRESS:
            from gage.cli.progress import progress_line

            with progress_line(args.command):
                code = args.func(args)
        else:
            code = args.func(args)
    except GageError as exc:
        from gage.cli.output import show
        from gage.format import (
            relayurl,  # a relay URL in an error never shows its password
        )
        from gage.format.sanitize import SHOWN_NAME, shown_name

        # Messages can quote file names and fields from a hostile bundle: never raw.
        if exc.path is not None and len(exc.path) > SHOWN_NAME:
            exc.path = shown_name(exc.path)
        try:
            if getattr(args, "json", False):
                from gage.cli.failure_json import emit_failure

                emit_failure(exc)  # a script reading --json gets data, not a sentence (spec/cli.md)
            else:
                err(f"gage: {exc.stage}: {show(relayurl.scrub(str(exc)))}")
        except BrokenPipeError:
            _stdout_gone()  # the reader left (`| head`): the code still says what happened
        return int(exc.exit_code)
    except KeyboardInterrupt:
        err("gage: interrupted")
        return 130
    except BrokenPipeError:
        _stdout_gone()
        return int(Exit.OK)
    except OSError as exc:
        # The file system failed where no stage caught it (a folder that cannot be read, a
        # path longer than the system allows, a full disk): an I/O error, never a traceback.
        from gage.format.sanitize import os_error_text

        err(f"gage: io: {os_error_text(exc)}")
        return int(Exit.IO)
    return int(code or 0)


def _stdout_gone() -> None:
    """The reader of standard output closed it (`gage list | head -1`): stop quietly, as git
    does. Standard output now points at /dev/null, so the interpreter's last flush of what
    is still buffered cannot print a traceback on the way out."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())


def run(argv: Sequence[str] | None = None) -> int:
    """The `gage` program itself (the console script, `python -m gage`): `main`, then an exit
    without the interpreter's last collections.

    At exit the interpreter looks for reference cycles among every object the command loaded:
    4 to 6 ms of a small command's 50 to 60 (bench/bench_startup.py). `gc.freeze()`
    moves every object to the permanent generation, so those collections have nothing to walk.
    Objects are still freed by reference counting as the modules are cleared, atexit handlers
    (logging's, weakref.finalize's) still run and the standard streams are still flushed; what
    is skipped is finalizing objects left in unreachable cycles, and gage closes every file,
    database and lock it opens itself, so none holds anything unwritten then. Only here, never
    in `main`: a process that calls `main` many times (the tests) must keep collecting.
    """
    code = main(argv)
    gc.freeze()
    return code
