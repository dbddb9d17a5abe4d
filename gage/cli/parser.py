"""The argument parser's one change from argparse: a mistyped command or choice says what was meant.

`gage lsit` should answer "did you mean list?", as git does, not only list every command.
Python 3.14's argparse has `suggest_on_error`; this does the same on 3.11 and up.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import NoReturn


def help_width() -> int:
    """The width argparse formats help to: `shutil.get_terminal_size().columns - 2`, read the way
    shutil reads it ($COLUMNS, else standard output's terminal, else 80), without importing
    shutil, which loads bz2, lzma and zlib, for every command at start-up: argparse
    asks for a formatter each time an argument is added, though help is rarely printed."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns - 2


class GageParser(argparse.ArgumentParser):
    # Set by main when `--json` is on the command line: a usage error is then the same one
    # JSON object every other failure is (gage/cli/failure_json.py), not argparse's text.
    json_errors = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=help_width())  # type: ignore[call-arg]  # every HelpFormatter takes it

    def error(self, message: str) -> NoReturn:
        # Compiled here, on an error only, not at every start-up.
        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if found:
            import difflib  # an error only

            typed, options = found.group(1), [o.strip().strip("'") for o in found.group(2).split(",")]
            near = difflib.get_close_matches(typed, options, n=2, cutoff=0.6)
            if near:
                message = f"{message}; did you mean {' or '.join(near)}?"
        if GageParser.json_errors:
            from gage.cli.failure_json import emit_failure
            from gage.format.errors import UsageError

            emit_failure(UsageError(f"{self.prog}: {message}"))
            raise SystemExit(2)
        super().error(message)
