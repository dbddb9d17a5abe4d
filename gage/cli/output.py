"""Printing for the CLI. Untrusted text goes through `visible` before any terminal sees it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gage.format.sanitize import visible
from gage.home.layout import Home, default_home
from gage.inbox import opening

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any


def out(line: str = "") -> None:
    print(line, flush=True)


def err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def show(text: str) -> str:
    """A one-line untrusted value, safe to print."""
    return visible(text, oneline=True)


def emit_json(value: Any) -> None:
    # ensure_ascii keeps every control character as a \\u escape: safe on a terminal.
    print(json.dumps(value, indent=2, ensure_ascii=True), flush=True)


def home_path(args: Any) -> Path:
    return Path(args.home) if getattr(args, "home", None) else default_home()


def open_home(args: Any) -> Home:
    from gage.cli.passphrase import asker

    home = opening.open_home(home_path(args))
    home.passphrase_asker = asker(args)  # asked only if a protected key must sign (gage/home/unlock.py)
    return home
