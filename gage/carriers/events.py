"""What a carrier reports while it runs: one event type for everything `gage watch` and `gage a2a serve` run.

The drop-folder watcher (`watch`), the mailbox follower (`relay/follow`) and the outbox's
sender (`outbox_loop`) run side by side under `gage watch` and the interface, and the A2A
server (`a2a/reports`) under `gage a2a serve`; whoever prints their events (the command
line's watch log, its JSON lines, the interface) reads one type, so one outcome is one line
whichever way the bundle came. It lives here, below every carrier, so no carrier imports
another to report what it did (the independence contract in pyproject.toml).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gage.format.vocab import WatchKind
from gage.inbox import gate


@dataclass
class WatchEvent:
    """One thing a carrier did or saw. `message` may contain drop-folder names or a peer's
    words: print it through `show()`."""

    kind: WatchKind
    message: str
    id: str | None = None
    path: Path | None = None
    unattended: gate.UnattendedResult | None = None
