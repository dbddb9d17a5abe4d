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
class RowsLoaded(Message):
    """A thread worker finished computing one tab's rows (gage.tui.rows); the inbox shows them.

    `error` is set, and `rows` empty, when the home could not be read at all.
    """

    state: str
    rows: list[Any] = field(default_factory=list)  # list[gage.tui.rows.Row]
    counts: dict[str, int] = field(default_factory=dict)
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
