"""Building only the parser of the command being run (issue 28: start-up).

`commands.register` adds every command's parser, fifty-odd argparse objects with their
actions, formatters and help; a command typed by name needs one. `OnlyOne` stands in for
argparse's subparsers object while `register` runs: the named command (and its aliases) get
real parsers, every other `add_parser` returns a `_Nothing`, which accepts whatever
`register` does with a parser (options, groups, nested actions, defaults) and keeps none of
it. So `register` stays one list of commands, written once, and a command added there (or
an option added to one) needs nothing here.

`command_named` finds the command in the arguments without parsing them. Anything it cannot
be sure of (a help flag anywhere, no command, an unknown top-level option) gives None, and
the whole parser is built: help, completion, `gage man` and did-you-mean always see every
command.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

TYPE_CHECKING = False  # importing typing costs start-up time (issue 28)
if TYPE_CHECKING:
    from typing import Any

# The top level's own options (gage/cli/main.py): those taking a value, and the rest.
_TOP_WITH_VALUE = ("--home",)
_HELP = ("-h", "--help")


def command_named(argv: Sequence[str]) -> str | None:
    """The command `argv` runs, when that is plain from the words alone; else None."""
    if any(a in _HELP for a in argv):
        return None
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
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


def registered(parser: argparse.ArgumentParser) -> set[str]:
    """The command names a built parser knows."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


class _Nothing:
    """A parser, group or subparsers object for a command not being run: every call is kept
    nowhere and returns another `_Nothing`, so any use `register` makes of it is fine."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._call

    def _call(self, *args: Any, **kwargs: Any) -> _Nothing:
        return self


class OnlyOne:
    """argparse's subparsers action, passing on only the parser of command `name`."""

    def __init__(self, sub: argparse._SubParsersAction[Any], name: str) -> None:
        self._sub = sub
        self._name = name
        self.only = name  # what gage/cli/commands.py reads to skip whole modules of other commands

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name == self._name or self._name in kwargs.get("aliases", ()):
            return self._sub.add_parser(name, **kwargs)
        return _Nothing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sub, name)
