"""Commands that hand things to the person's own tools: extract, completion, man.

`extract` is a thin layer over gage.inbox.extract (which the interface calls too); `completion`
prints a shell's completion script and `man` the manual page, both generated from the
parser, so what `pipx install` or `uv tool install` put on the path describes itself
without any file installed beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gage.cli import completion
from gage.cli.output import emit_json, err, open_home, out, show
from gage.format.sanitize import json_text
from gage.home import listing
from gage.inbox.extract import extract


def cmd_extract(args: Any) -> int:
    home = open_home(args)
    stored = listing.resolve(home, args.id)
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
    from gage.cli.main import build_parser

    out(completion.script(args.shell, build_parser()).rstrip("\n"))
    return 0


def cmd_man(args: Any) -> int:
    from gage.cli.main import build_parser
    from gage.cli.reference import man

    out(man(build_parser()).rstrip("\n"))
    return 0
