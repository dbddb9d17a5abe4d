"""`gage demo`: open gage on a throwaway demo home (made by gage/cli/demo.py)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-tui", action="store_true", help="make the demo home and print its path")
    p.add_argument("--dir", metavar="DIR", help="make the demo home here instead of a temporary folder")
    json_option(p, 'with --no-tui: print {"home"}')


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from gage.cli.demo import is_temporary, make_demo, other_side
    from gage.cli.output import emit_json, err, out
    from gage.format.sanitize import json_text
    from gage.inbox import opening

    root = make_demo(Path(args.dir) if args.dir else None)
    base = root.parent
    if args.no_tui or args.json:
        if args.json:
            emit_json({"home": json_text(str(root))})
        else:
            out(str(root))
        _demo_notes(root, base, other_side(root))
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        err("gage: no terminal to open the interface on; the demo home is made:")
        out(str(root))
        _demo_notes(root, base, other_side(root))
        return 0
    try:
        from gage.tui.app import run as run_tui
    except ImportError:
        out(f"demo home: {root}")
        _demo_notes(root, base, other_side(root))
        return 0
    temporary = is_temporary(root)
    try:
        # The demo plays both people: its ceremonies show the other side's words.
        return run_tui(opening.open_home(root), demo_people=other_side(root))
    finally:
        if temporary:
            # A demo in a fresh temporary folder is removed on quit, so runs leave nothing behind.
            import shutil

            shutil.rmtree(base, ignore_errors=True)
            err(f"gage: removed the demo home ({base}); `gage demo --dir DIR` keeps one")
        else:
            err(f"gage: the demo home is kept at {base}; remove it with: rm -rf {base}")


def _demo_notes(root: Path, base: Path, people: dict[str, Any]) -> None:
    """Where the demo is, how to try it and remove it, and the words the demo's people would read."""
    from gage.cli.output import err
    from gage.format.words import format_pairs

    err(f"try: GAGE_HOME={root} gage list")
    err("the demo plays the other people too; the words each would read to you on a call:")
    for who, (_key, words) in people.items():
        err(f"  {who}: {format_pairs(words)}")
    err(f"remove the demo when done: rm -rf {base}")
