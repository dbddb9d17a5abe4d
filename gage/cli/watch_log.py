"""How `gage watch` reports what it does: timestamped lines, `-v` / `-q`, or JSON lines.

Every line starts with the local time (ISO 8601, to the second, with its offset). `-q`
keeps only what a person must know about (arrivals, decisions, key statements, errors,
reconciling); `-v` adds each event's kind, bundle id and path. `--json` writes one object
per line, `{"time", "kind", "message", "id", "path"}`, ASCII-only, filtered as the text is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gage.carriers.events import WatchEvent
from gage.cli.output import show
from gage.format import relayurl
from gage.format.sanitize import json_text

# What `-q` keeps: the events that change what the home holds, or need a person.
QUIET_KINDS = frozenset(
    {"imported", "accepted", "pending", "budget-spent", "key-statement", "error", "reconciled", "delivered", "cancelled", "reconnected"}
)


def _now() -> datetime:
    return datetime.now().astimezone()


@dataclass
class WatchLog:
    verbose: bool = False
    quiet: bool = False
    as_json: bool = False
    clock: Callable[[], datetime] = field(default=_now)

    def stamp(self) -> str:
        return self.clock().isoformat(timespec="seconds")

    def wanted(self, event: WatchEvent) -> bool:
        return not self.quiet or event.kind in QUIET_KINDS

    def text(self, event: WatchEvent) -> str:
        line = show(relayurl.scrub(event.message))
        if not self.verbose:
            return line
        details = [f"kind={event.kind}"]
        if event.id:
            details.append(f"id={event.id}")
        if event.path is not None:
            details.append(f"path={show(str(event.path))}")
        return f"{line} [{' '.join(details)}]"

    def json_line(self, event: WatchEvent) -> str:
        value = {
            "time": self.stamp(),
            "kind": event.kind,
            "message": json_text(relayurl.scrub(event.message)),
            "id": event.id,
            "path": json_text(str(event.path)) if event.path is not None else None,
        }
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
