"""The gage application: screens, the live inbox watcher, and the command palette.

The app owns the home and the clock (injected, so tests and snapshots can freeze ages)
and routes the typed messages of gage.tui.messages to whichever screens they affect.
It starts pairings and opens bundles on behalf of the screens so that no screen needs
to know about another.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from textual import work
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from gage.format.errors import GageError
from gage.format.words import WordPairs
from gage.home.health import check_files
from gage.home.layout import Home
from gage.home.listing import find
from gage.trust.verdict import Verdict
from gage.tui import export, invite, mailbox_fetch, pairing, safe, sending
from gage.tui import outbox as tui_outbox
from gage.tui.bindings import GLOBAL, INVITE, bindings_for, palette_entries
from gage.tui.bundle_view import BundleScreen
from gage.tui.ceremony import CeremonyScreen
from gage.tui.contacts import ContactsScreen
from gage.tui.help import HelpScreen
from gage.tui.inbox import InboxScreen
from gage.tui.messages import (
    ArtifactExported,
    BundleDecided,
    ContactsChanged,
    InboxChanged,
)
from gage.tui.mutual import MutualScreen

Clock = Callable[[], datetime]


class GageApp(App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses (tests) live elsewhere
    TITLE = "gage"
    BINDINGS = bindings_for("everywhere") + bindings_for("invite")

    def __init__(
        self,
        home: Home,
        *,
        now: Clock | None = None,
        watch: bool = True,
        demo_people: dict[str, tuple[bytes, WordPairs]] | None = None,
    ) -> None:
        super().__init__()
        self.home = home
        # Only `gage demo` passes these (gage.cli.demo.other_side): the words the demo's people would
        # read on a call, shown in its ceremonies since the demo plays both sides. Any other home: none.
        self.demo_people = demo_people or {}
        self._clock: Clock = now or (lambda: datetime.now(UTC))
        self._watch = watch
        self.inbox = InboxScreen()
        self.changes_seen = 0  # InboxChanged messages handled: shows the watcher is alive

    def now(self) -> datetime:
        return self._clock()

    def notify(  # type: ignore[override]
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """As Textual's, with markup always off, and a screen that keeps a status line (the bundle view, where a toast
        would cover the payload) shows the message there instead of a toast."""
        del markup  # never markup: a message may quote a file name or a subject (gage.tui.safe)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)
        status = getattr(self.screen, "status", None)
        if callable(status) and threading.get_ident() == self._thread_id:
            status(message, title, severity, timeout)

    def _refresh_notifications(self) -> None:
        """Textual draws the notifications as toasts on the screen shown; not on a screen with a
        status line (notify, above), where they would cover the payload."""
        try:
            on_status_line = callable(getattr(self.screen, "status", None))
        except Exception:  # noqa: BLE001 - no screen yet
            on_status_line = False
        if not on_status_line:
            super()._refresh_notifications()

    def on_mount(self) -> None:
        # A damaged home file (hand-edited contacts.toml, an authority.toml that is a folder,
        # an unreadable journal) is shown, file and fault, instead of crashing a screen later.
        problems = check_files(self.home)
        if problems:
            self.push_screen(HomeProblemsScreen(problems))
            return
        self.show_queued()
        self.push_screen(self.inbox)
        if self._watch:
            self.watch_inbox()
            # The mailbox too, as `gage watch` does: mail lands and shows with nothing else run.
            self._mail_stop = mailbox_fetch.start(self, self.home)
            # And what waits in the outbox goes when its way is back, as with `gage watch`.
            self._outbox_stop = tui_outbox.start(self, self.home)

    def show_queued(self, waiting: int | None = None) -> None:
        """The header: my name, how many deliveries wait for their way (counted now unless given), this home's mailbox, the relay."""
        self._waiting = tui_outbox.queued(self.home) if waiting is None else waiting
        if waiting is None or not hasattr(self, "_mailbox"):  # read again when the counts are (an invite may have made one)
            self._mailbox = tui_outbox.mailbox_line(self.home)
        self.sub_title = tui_outbox.header(self.home.identity.name, self._waiting, relay_up=getattr(self, "_relay_up", None),
                                           mailbox=self._mailbox)

    def mailbox_made(self) -> None:
        """An invite or a join made this home's mailbox: the header names it, and the interface fetches it from now on."""
        self.show_queued()
        if self._watch and getattr(self, "_mail_stop", None) is None:
            self._mail_stop = mailbox_fetch.start(self, self.home)

    def relay_state(self, up: bool) -> None:
        """The mailbox's relay went away (False) or answers again (True): said in the header."""
        self._relay_up = up
        self.show_queued(getattr(self, "_waiting", None))

    def on_unmount(self) -> None:
        if getattr(self, "_mail_stop", None) is not None:
            self._mail_stop.set()
        if getattr(self, "_outbox_stop", None) is not None:
            self._outbox_stop.set()

    # --- live inbox ---------------------------------------------------------------------

    @work(exclusive=True, group="watch")
    async def watch_inbox(self) -> None:
        """Post InboxChanged whenever anything under inbox/ or outbox/ changes.

        The outbox is watched too, so a bundle made with `gage bundle` in another
        terminal shows in the outbox tab at once, ready to export.

        A bundle written in place, or under a temporary name and then renamed, produces
        events for paths that are half-written or already gone; the handler recomputes
        from what is on disk, so such paths are harmless. If the inbox itself vanishes
        the watcher waits and tries again instead of dying.

        The watch runs in a child process (gage.tui.watcher: setting it up holds the
        interpreter's lock for 0.8 s at 10,000 bundles). Once it is set, the views are
        brought up to date (an empty change), since what changed before was never seen.
        """
        from gage.tui import watcher

        wait = 0.5
        while True:
            # Only folders that exist: an older home without an outbox still has a live inbox.
            roots = [p for p in (self.home.root / "inbox", self.home.state_dir("outbox")) if p.is_dir()]
            try:
                if not roots:
                    raise FileNotFoundError(self.home.root / "inbox")
                async for changed in watcher.changes(roots):
                    wait = 0.5
                    self.post_message(InboxChanged(len(changed), changed))
            except (OSError, RuntimeError):
                pass
            # The inbox vanished or the watch failed: look again soon, then less often while it
            # keeps failing before it is set (the user's inotify watches used up), not 2 a second.
            await asyncio.sleep(wait)
            wait = min(wait * 2, 30.0)

    def on_inbox_changed(self, message: InboxChanged) -> None:
        self.changes_seen += 1
        self.refresh_views(bundle_state_only=True, changed=message.changed)

    def on_artifact_exported(self, message: ArtifactExported) -> None:
        export.report(self, message)

    def on_bundle_decided(self, message: BundleDecided) -> None:
        self.refresh_views(bundle_state_only=True)

    def on_contacts_changed(self, message: ContactsChanged) -> None:
        self.refresh_views(bundle_state_only=False)

    def refresh_views(self, *, bundle_state_only: bool, changed: frozenset[str] = frozenset()) -> None:
        """Recompute what every open screen shows from the home as it is now.

        The inbox looks again only at what changed (`changed`: the watcher's paths); a
        change of contacts recomputes every verdict it shows.
        """
        if bundle_state_only:
            self.inbox.changed(changed)
        else:
            self.inbox.contacts_changed()
        for screen in self.screen_stack:
            if isinstance(screen, ContactsScreen):
                screen.reload()
            elif isinstance(screen, BundleScreen):
                stored = find(self.home, screen.bundle_id)
                shown = screen.verdict.state if screen.verdict else None
                if not bundle_state_only or (stored.state if stored else None) != shown:
                    screen.run_worker(screen.reload, exclusive=True, group="reload")

    # --- navigation used by the screens -------------------------------------------------

    def open_bundle(self, bundle_id: str) -> None:
        self.push_screen(BundleScreen(bundle_id))

    def start_ceremony(self, key: bytes, claimed_name: str, source: str, *, mutual: bool = False) -> None:
        pairing.start_ceremony(self, key, claimed_name, source, mutual=mutual)

    def pair_with_sender(self, v: Verdict | None) -> None:
        """`p`: pair with an unconfirmed sender's key, or ask for a key file (gage.tui.pairing)."""
        pairing.pair_with_sender(self, v)

    def pair_from_file(self, *, mutual: bool = False) -> None:
        pairing.pair_from_file(self, mutual=mutual)

    # --- global actions -----------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that make no sense where the person is (Contacts while on Contacts)."""
        if action == "contacts" and isinstance(self.screen, ContactsScreen | CeremonyScreen | MutualScreen):
            return False
        if action == "me" and isinstance(self.screen, CeremonyScreen | MutualScreen):
            return False
        return True

    def action_contacts(self) -> None:
        if isinstance(self.screen, ModalScreen | ContactsScreen | CeremonyScreen | MutualScreen):
            return
        self.push_screen(ContactsScreen())

    def action_me(self) -> None:
        if isinstance(self.screen, ModalScreen | CeremonyScreen | MutualScreen):
            return  # the ceremony shows my words itself
        from gage.tui.files import _cwd
        from gage.tui.me import MeDialog

        self.push_screen(MeDialog(_cwd()))

    def action_help(self) -> None:
        if isinstance(self.screen, ModalScreen):
            return
        self.push_screen(HelpScreen())

    # --- sending (gage.tui.sending): make, deliver, reply ---------------------------------

    def _mine_shown(self) -> str | None:
        """The bundle I made that is open, or highlighted in the Outbox tab."""
        screen = self.screen
        if isinstance(screen, BundleScreen):
            return screen.bundle_id if screen.verdict is not None and screen.verdict.state == "outbox" else None
        if screen is self.inbox and self.inbox.state == "outbox":
            return self.inbox.current_id()
        return None

    def action_new_bundle(self) -> None:
        if isinstance(self.screen, ModalScreen | CeremonyScreen | MutualScreen):
            return
        fields = [("files", "Files (paths, separated by commas)", ""), ("subject", "Subject (optional)", ""),
                  ("to", "To (a confirmed contact's name; empty: only make it, in your outbox)", "")]
        self.push_screen(
            sending.SendDialog("New bundle", "Signed by you, made in your outbox, then delivered where they are.", fields),
            lambda got: sending.run(self, lambda: sending.new_bundle_work(self.home, got)) if got else None,
        )

    def action_deliver(self) -> None:
        bundle_id = self._mine_shown()
        if bundle_id is None:
            self.notify("D delivers a bundle you made: open one from the Outbox (4), or make one with B", title="send", markup=False)
            return
        fields = [("to", "To (a confirmed contact's name)", "")]
        intro = f"Deliver {bundle_id[:12]} to their mailbox, agent or drop folder; if the way is not there, it waits in the outbox."
        self.push_screen(
            sending.SendDialog("Deliver", intro, fields),
            lambda got: sending.run(self, lambda: sending.deliver_work(self.home, bundle_id, got)) if got else None,
        )

    def action_reply(self) -> None:
        screen = self.screen
        v = screen.verdict if isinstance(screen, BundleScreen) else None
        if v is None or v.state == "outbox" or v.verdict != "verified" or not v.sender.name:
            self.notify("R replies to the open bundle of a confirmed contact (open one with Enter)", title="send", markup=False)
            return
        to, bundle_id = v.sender.name, screen.bundle_id  # type: ignore[union-attr]
        fields = [("text", "Your reply (reply.txt)", ""), ("subject", "Subject (optional)", "")]
        intro = safe.one_line(f"A reply to {bundle_id[:12]}, signed by you, delivered to {to} (their confirmed key).", limit=300)
        self.push_screen(
            sending.SendDialog("Reply", intro, fields),
            lambda got: sending.run(self, lambda: sending.reply_work(self.home, bundle_id, to, got)) if got else None,
        )

    # --- invite and join (gage.tui.invite): the relay's rendezvous, then the mutual ceremony ----

    def action_invite(self) -> None:
        if isinstance(self.screen, ModalScreen | CeremonyScreen | MutualScreen | invite.InviteScreen):
            return
        invite.start_invite(self)

    def action_join(self) -> None:
        if isinstance(self.screen, ModalScreen | CeremonyScreen | MutualScreen | invite.InviteScreen):
            return
        invite.start_join(self)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette offers the same commands as the keys (from gage.tui.bindings)."""
        for k in GLOBAL + INVITE:
            if k.palette:
                yield SystemCommand(f"{k.label} ({k.display or k.key})", k.help, partial(self.run_action, k.action))
        yield SystemCommand("Pair from a key file", "Start the word-pair ceremony from a public key file.", self.pair_from_file)
        yield SystemCommand(
            "Pair both ways from a key file",
            "The mutual ceremony, for two people on one call: read your pair, type theirs, pair by pair.",
            partial(self.pair_from_file, mutual=True),
        )
        group = getattr(screen, "GROUP", None)
        if group:
            for k in palette_entries(group):
                # The same question the footer asks: only what applies to the selected bundle.
                _, name, params = parse_action(k.action)
                if screen.check_action(name, params):
                    yield SystemCommand(f"{k.label} ({k.key.split(',')[0]})", k.help, partial(screen.run_action, k.action))
        for command in super().get_system_commands(screen):
            if command.title not in ("Quit", "Keys"):
                yield command


class HomeProblemsScreen(Screen[None]):
    """Shown at start instead of the inbox when a home file is damaged: what and where, then quit."""

    BINDINGS = [("q,escape,enter", "quit_app", "Quit")]

    def __init__(self, problems: list[GageError]) -> None:
        super().__init__()
        self.problems = problems

    def compose(self) -> ComposeResult:
        lines = ["gage cannot open this home: a file in it is damaged.", ""]
        for p in self.problems:
            lines.append(f"  {p.stage}: " + safe.one_line(str(p), limit=300))
        lines += ["", "Fix or move the file (the same error shows on the command line), then start gage again.", "", "q: quit"]
        yield Static("\n".join(lines), markup=False, id="home-problems")

    def action_quit_app(self) -> None:
        code = int(self.problems[0].exit_code)
        self.app.exit(code, return_code=code)


def run(home: Home, *, demo_people: dict[str, tuple[bytes, WordPairs]] | None = None) -> int:
    """Open the interface on `home`; the exit code for `gage`, `gage tui` and `gage demo`."""
    result = GageApp(home, demo_people=demo_people).run()
    return int(result or 0)
