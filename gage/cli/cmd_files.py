"""Commands that hand things to the person's own tools: extract, completion.

`extract` is a thin layer over gage.extract (which the interface calls too); `completion`
prints a shell's completion script, generated from the parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import store
from ..extract import extract
from ..sanitize import json_text
from . import completion
from .output import emit_json, err, open_home, out, show


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="copy an accepted bundle's files into a folder, checking every byte")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix")
    p.add_argument("dir", metavar="DIR", help="the folder to copy the payload into (made if missing)")
    p.add_argument("--pending", action="store_true", help="extract a pending bundle without accepting it")
    p.add_argument("--force", action="store_true", help="replace files that exist in DIR")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("completion", help="print shell completion for bash, zsh or fish")
    p.add_argument("shell", choices=completion.SHELLS)
    p.set_defaults(func=cmd_completion)


def cmd_extract(args: Any) -> int:
    home = open_home(args)
    stored = store.resolve(home, args.id)
    paths = extract(home, stored, Path(args.dir), force=args.force, allow_pending=args.pending)
    if args.json:
        emit_json({"id": stored.id, "state": stored.state, "dir": json_text(args.dir), "files": [json_text(str(p)) for p in paths]})
        return 0
    for p in paths:
        out(show(str(p)))
    n = len(paths)
    note = " (it stays pending: NOT accepted)" if stored.state == "pending" else ""
    err(f"extracted {n} file{'s' if n != 1 else ''} of {stored.id[:12]} into {show(args.dir)}, each checked against the manifest{note}")
    return 0


def cmd_completion(args: Any) -> int:
    from .main import build_parser

    out(completion.script(args.shell, build_parser()).rstrip("\n"))
    return 0
