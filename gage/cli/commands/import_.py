"""`gage import`: copy bundle directories into inbox/pending (the body is gage/cli/import_run.py).

The module is `import_` because `import` is a Python keyword; the command is `gage import`.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="bundle folders (each lands in pending; nothing is accepted)")
    p.add_argument("-v", "--verbose", action="store_true", help="with several PATHs: a line for each one, refused or imported")
    json_option(p, "one result per PATH, as data, instead of the ids")


def run(args: argparse.Namespace) -> int:
    from gage.cli import import_run

    return import_run.run(args)
