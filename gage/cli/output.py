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


class JsonList:
    """`emit_json` of a document one list of which (`field`, at its top) grows while a command
    works, printed byte for byte as `emit_json` prints it, without holding the list: each item
    is written out as it comes, into an unnamed spool file in `spool` (the home's tmp folder:
    nothing outside the home, and nothing left if the process dies), and the document printed
    whole at the end. Printed at the end, not as it comes, so a failure part way still prints
    only its own JSON (gage.cli.failure_json). What the spool cannot take (a full disk) is kept
    in memory instead, never lost."""

    def __init__(self, field: str, spool: Path) -> None:
        import tempfile

        self.field, self.count = field, 0
        self._held: list[bytes] = []
        self._file: Any = None
        try:
            spool.mkdir(parents=True, exist_ok=True)
            self._file = tempfile.TemporaryFile(dir=spool, buffering=0)
        except OSError:
            pass  # no spool: the items are held

    def add(self, item: Any) -> None:
        # The item as emit_json nests it: two levels down (the document, then the list).
        text = json.dumps(item, indent=2, ensure_ascii=True).replace("\n", "\n    ")
        data = f"{',' if self.count else ''}\n    {text}".encode("ascii")
        self.count += 1
        if self._file is not None and not self._held:
            at = self._file.tell()
            try:
                view = memoryview(data)
                while view:
                    view = view[self._file.write(view) :]
                return
            except OSError:
                self._file.truncate(at)  # back to the last whole item; the rest is held
                self._file.seek(at)
        self._held.append(data)

    def emit(self, head: dict[str, Any], tail: dict[str, Any]) -> None:
        """Print `head`, the list, then `tail` (their fields in that order), as emit_json would."""
        whole = json.dumps({**head, self.field: [], **tail}, indent=2, ensure_ascii=True)
        at = whole.index(f"\n  {json.dumps(self.field)}: []") + len(json.dumps(self.field)) + 6
        sys.stdout.write(whole[:at])
        if self._file is not None:
            self._file.seek(0)
            while chunk := self._file.read(1 << 16):
                sys.stdout.write(chunk.decode("ascii"))
            self._file.close()
        for data in self._held:
            sys.stdout.write(data.decode("ascii"))
        sys.stdout.write(("\n  " if self.count else "") + whole[at:] + "\n")
        sys.stdout.flush()
