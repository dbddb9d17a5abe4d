"""The test pilot's screen wait (tuikit.SettlingPilot): it must not hang on a widget that has
left the app, and it must still fail, naming the widget, on one that is shown and stuck."""

from __future__ import annotations

import asyncio

import pytest
import tuikit
from textual.app import App, ComposeResult
from textual.pilot import WaitForScreenTimeout
from textual.widgets import Static


class Stuck(Static):
    """Handles one message until let go: till then its queue never gets to the pilot's callback."""

    let_go: asyncio.Event

    async def on_click(self) -> None:
        await self.let_go.wait()


class Tiny(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("fine", id="fine")
        yield Stuck("stuck", id="stuck")


async def test_a_shown_widget_that_never_answers_fails_the_wait_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tuikit, "SCREEN_WAIT_CAP", 3.0)
    app = Tiny()
    async with app.run_test() as plain:
        pilot = tuikit.SettlingPilot(plain.app)
        stuck = app.query_one("#stuck", Stuck)
        stuck.let_go = asyncio.Event()
        stuck.post_message(_click(app))
        try:
            with pytest.raises(WaitForScreenTimeout, match="stuck"):
                await pilot._wait_for_screen(timeout=0.1)
        finally:
            stuck.let_go.set()


async def test_only_widgets_still_in_the_app_are_waited_for() -> None:
    """The app and a mounted widget are waited for; one never mounted, or removed, is let go."""
    app = Tiny()
    async with app.run_test() as pilot:
        fine = app.query_one("#fine")
        assert tuikit._still_shown(app, app) and tuikit._still_shown(app, fine)
        assert not tuikit._still_shown(app, Static("never mounted"))
        await fine.remove()
        await pilot.pause()
        assert not tuikit._still_shown(app, fine)


def _click(app: App[None]):  # type: ignore[no-untyped-def]
    from textual.events import Click

    return Click(app.query_one("#stuck"), 0, 0, 0, 0, 1, False, False, False)
