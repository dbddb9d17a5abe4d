"""Decisions on several bundles at once: the gate per bundle off the UI thread, with a progress bar.

Fifty rejects took twenty seconds with nothing on screen but tab counts changing.
Now the inbox shows a bar under the table while a bulk decision runs ("Rejecting 50
bundles", done of total), and the interface answers keys meanwhile: the work runs in a
thread worker (gage.tui.background, holding the home lock) and notes how far it got in a
`Progress`, which the bar reads every PROGRESS_EVERY seconds; the worker never waits for the UI.

`accept_each` and `reject_each` are the one place the interface asks the gate to decide
several bundles: through the gate's batch decision (gage.inbox.gate.decide_many: one lock,
one journal write), which reports each bundle once it is durable.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

from gage.home.layout import Home
from gage.inbox import gate
from gage.tui import safe

PROGRESS_EVERY = 0.05  # seconds between redraws of the bar while the work runs
Step = Callable[[int], None]  # called with how many bundles are done so far


class Progress:
    """How far a bulk decision got: written by the worker after each bundle, read by the bar's
    timer. The worker never waits for the UI, and the bar is never more than a redraw behind."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def step(self, done: int) -> None:
        self.done = done


def accept_each(home: Home, wanted: list[tuple[str, bool]], step: Step) -> tuple[list[tuple[str, bool]], list[str]]:
    """Accept each (id, unverified) through the gate; (moved, failure lines). Runs in a worker.

    One batch decision per kind of consent (gate.decide_many: one lock, the durable writes
    batched); `step` hears of each bundle once it is durable."""
    moved: list[tuple[str, bool]] = []
    failures: list[str] = []
    done = 0

    def one(_n: int, _total: int, _d: gate.Decided) -> None:
        nonlocal done
        done += 1
        step(done)

    for unverified in (False, True):
        ids = [bundle_id for bundle_id, u in wanted if u is unverified]
        for d in gate.decide_many(home, ids, "accept", unverified=unverified, progress=one) if ids else []:
            if d.error is not None:
                failures.append(f"{d.id[:12]}: {safe.error_text(d.error)}")
            else:
                moved.append((d.id, unverified))
    return moved, failures


def reject_each(home: Home, ids: list[str], why: str | None, step: Step) -> tuple[list[str], list[str]]:
    """Reject each id through the gate with one reason; (moved, failure lines). Runs in a worker,
    as one batch decision (gate.decide_many); `step` hears of each bundle once it is durable."""
    moved: list[str] = []
    failures: list[str] = []
    for d in gate.decide_many(home, ids, "reject", why=why, progress=lambda n, _total, _d: step(n)):
        if d.error is not None:
            failures.append(f"{d.id[:12]}: {safe.error_text(d.error)}")
        else:
            moved.append(d.id)
    return moved, failures


class BulkBar(Horizontal):
    """Under the table while a bulk decision runs: what it does, and a bar of done of total."""

    DEFAULT_CSS = """
    BulkBar { height: 1; padding: 0 1; background: $boost; display: none; }
    BulkBar > Static { width: auto; margin-right: 2; }
    BulkBar > ProgressBar { width: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", markup=False, id="bulk-what")
        yield ProgressBar(total=1, show_eta=False, id="bulk-bar")

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.ids: frozenset[str] = frozenset()  # the bundles of the last bulk decision
        self.progress = Progress(0)
        self._timer: Timer | None = None

    @property
    def running(self) -> bool:
        return bool(self.display)

    def start(self, what: str, ids: list[str]) -> Progress:
        """Show the bar for a decision on `ids`; the worker reports to the Progress returned."""
        self.ids = frozenset(ids)
        self.progress = Progress(len(ids))
        self.query_one("#bulk-what", Static).update(what)
        self.query_one(ProgressBar).update(total=len(ids), progress=0)
        self.display = True
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(PROGRESS_EVERY, self._redraw, name="bulk progress")
        return self.progress

    def _redraw(self) -> None:
        self.query_one(ProgressBar).update(progress=self.progress.done)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._redraw()
        self.display = False
