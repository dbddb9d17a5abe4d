"""Typed messages between the watcher, the screens and the app.

The screens never reach into each other: whatever changes the home posts one of these
to the app, and the app tells every screen that shows something affected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass
class InboxChanged(Message):
    """Something appeared, vanished or moved under the home's inbox or outbox (from the watcher)."""

    paths: int = 0  # how many changed paths were reported, for the log
    changed: frozenset[str] = frozenset()  # the changed paths (absolute), when the watcher knows them


@dataclass
class BundleDecided(Message):
    """A bundle was accepted or rejected from this interface."""

    bundle_id: str
    state: str


@dataclass
class ContactsChanged(Message):
    """A contact was confirmed or removed: every verdict may have changed."""

    name: str


@dataclass
class RowsArrived(Message):
    """Rows from cheap facts, from the inbox's sync worker (gage.tui.inbox_sync).

    `replace`: the first chunk of a full load (the table starts over); otherwise `rows`
    are added where they sort and the `removed` ids leave. `run` says which sync sent it.
    """

    state: str
    run: int
    rows: list[Any] = field(default_factory=list)  # list[gage.tui.rows.Row]
    counts: dict[str, int] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    replace: bool = False


@dataclass
class VerdictsReady(Message):
    """Verdicts for rows already shown (None: the bundle vanished while it was checked)."""

    state: str
    run: int
    verdicts: dict[str, Any] = field(default_factory=dict)  # id -> gage.trust.verdict.Verdict | None


@dataclass
class SyncDone(Message):
    """The sync worker finished (`error` set, already visible, when the home could not be read)."""

    state: str
    run: int
    error: str | None = None


@dataclass
class ArtifactExported(Message):
    """A thread worker finished writing a bundle as an A2A artifact file (gage.tui.export).

    `error` is the reason, already made visible, when nothing was written.
    """

    bundle_id: str
    path: str
    protocol: str
    error: str | None = None
