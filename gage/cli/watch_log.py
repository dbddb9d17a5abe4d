"""How `gage watch` and `gage a2a serve` report what they do: timestamped lines, `-v` / `-q`, or JSON lines.

The one printer of the carriers' events (gage.carriers.events): the drop-folder watcher's,
the mailbox follower's, the outbox sender's and the A2A server's. Every line starts with
the local time (ISO 8601, to the second, with its offset); an `error` or `reconciled` goes
to standard error as `gage: KIND: ...`, the rest to standard output. `-q` keeps only what
a person must know about (arrivals, decisions, key statements, errors, reconciling); `-v`
adds each event's kind, bundle id and path. `--json` writes one object per line,
`{"time", "kind", "message", "id", "path"}`, ASCII-only, filtered as the text is. A
message may hold a peer's words or a drop folder's names: it reaches a terminal only
through `show()`, and a JSON line only as escaped ASCII.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gage.carriers.events import WatchEvent
from gage.cli.output import err, out, show
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
    # The carriers report from threads of their own: one whole line at a time.
    _printing: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __call__(self, event: WatchEvent) -> None:
        """Print `event` as its line, or its JSON line; an `on_event` for every carrier."""
        if not self.wanted(event):
            return
        with self._printing:
            if self.as_json:
                out(self.json_line(event))
            elif event.kind in ("error", "reconciled"):
                err(_encodable(f"{self.stamp()} gage: {event.kind}: {self.text(event)}", sys.stderr))
            else:
                out(_encodable(f"{self.stamp()} {self.text(event)}", sys.stdout))

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


def _encodable(line: str, stream: object) -> str:
    """`line` as the stream can encode it: a character it cannot (a drop folder's "ü" on an ASCII
    or Latin-1 terminal) is written as an escape, so printing a name never raises inside a
    carrier's thread."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        line.encode(encoding)
        return line
    except UnicodeEncodeError:
        return line.encode(encoding, errors="backslashreplace").decode(encoding)
    except LookupError:
        return line.encode("ascii", errors="backslashreplace").decode("ascii")
