"""`gage man`: print the manual page (roff), generated from the parser (gage/cli/reference.py)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No options: the page is the whole parser's."""


def run(args: argparse.Namespace) -> int:
    from gage.cli.main import build_parser
    from gage.cli.output import out
    from gage.cli.reference import man

    out(man(build_parser()).rstrip("\n"))
    return 0
