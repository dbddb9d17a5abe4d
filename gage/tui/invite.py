"""`gage invite` and `gage join` from the interface: the code shown large, then the mutual ceremony.

The relay's steps are the carrier's (gage.carriers.relay.invite: Inviter, Joiner) and the sequence
around them is gage.carriers.relay.meet's, the same the command line runs; they run in a thread
worker, so the screen stays live while the relay is waited on. Esc while waiting withdraws the
code, as Ctrl-C does at a terminal: a join is told at once. The code is gage's own text; a name,
a relay's words or a reason from the other side is shown literally (gage.tui.safe). Once their
claims open, the name is asked and checked before any word (gage.tui.pair_name, both ways only),
and the ceremony is the same dialog `pair --mutual` uses (gage.tui.invite_mutual).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Digits, Footer, Header, Static

from gage.format import relayurl
from gage.format.errors import GageError, UsageError
from gage.format.keys import short_fingerprint
from gage.tui import safe, sending
from gage.tui.pair_name import PairChoice, PairNameDialog

DEFAULT_EXPIRES = "10m"


def _relay_of(home: Any) -> tuple[str | None, Any]:
    """This home's relay and, for it only, its credential (None, None without the relay extra)."""
    try:
        from gage.carriers.relay import config
    except ImportError:
        return None, None
    return config.relay_url(home), config.relay_creds(home)


def _checked(home: Any, url: str) -> tuple[str, Any]:
    """The relay typed, checked; this home's credential only if it is this home's own relay."""
    from gage.home.settings import relay_url_problem

    if not url:
        raise UsageError("no relay is known: type a relay both of you reach (e.g. `gage relay dev`'s)")
    problem = relay_url_problem(url)
    if problem is not None:
        raise UsageError(problem)
    own, creds = _relay_of(home)
    return url, (creds if own and relayurl.same_relay(url, own) else None)


def start_invite(app: App[Any]) -> None:
    """Ask the relay (this home's, filled in) and how long the code lasts, then wait for a join."""
    own, _ = _relay_of(app.home)  # type: ignore[attr-defined]
    fields = [("relay", "Relay (one both of you reach)", own or ""), ("expires", "The code lasts (e.g. 10m, 1m30s)", DEFAULT_EXPIRES)]
    intro = "A one-time code to read to them on a call; they join it (J, or `gage join`), then you both read word pairs."
    app.push_screen(sending.SendDialog("Invite", intro, fields, send="Make a code"),
                    lambda got: _open(app, "invite", got) if got else None)


def start_join(app: App[Any]) -> None:
    """Ask the code they read (and the relay), then join it."""
    own, _ = _relay_of(app.home)  # type: ignore[attr-defined]
    fields = [("code", "The code they read you (like 7-tiger-guitarist)", ""), ("relay", "Relay (theirs: the one they named)", own or "")]
    app.push_screen(sending.SendDialog("Join", "Join the invite they made, then read word pairs with them.", fields, send="Join"),
                    lambda got: _open(app, "join", got) if got else None)


def _open(app: App[Any], role: str, got: dict[str, str]) -> None:
    try:
        from gage.carriers.relay import rendezvous
    except ImportError:
        app.notify("invite and join need the optional relay extra: pip install 'gage-bundles[relay]'", severity="error", markup=False)
        return
    try:
        url, creds = _checked(app.home, got.get("relay", ""))  # type: ignore[attr-defined]
        code = rendezvous.parse_code(got["code"]) if role == "join" else None
        expires = rendezvous.parse_duration(got.get("expires") or DEFAULT_EXPIRES) if role == "invite" else 0.0
    except GageError as exc:
        app.notify(safe.error_text(exc), title=role, severity="error", timeout=10, markup=False)
        return
    app.push_screen(InviteScreen(role, url, creds, code, expires))


class InviteScreen(Screen[None]):
    """Waiting on the relay: the code, large, for the inviter; 'waiting for the inviter' for the joiner."""

    BINDINGS = [Binding("escape", "withdraw", "Withdraw")]

    def __init__(self, role: str, url: str, creds: Any, code: Any, expires: float) -> None:
        super().__init__(id="invite")
        self.role, self.url, self.creds, self.code, self.expires = role, url, creds, code, expires
        self.cancel = threading.Event()  # Esc: the worker withdraws the code (or leaves the join)
        self.side: Any = None

    def compose(self) -> ComposeResult:
        yield Header()
        title = "Invite: read this code to them" if self.role == "invite" else "Join"
        yield Static(title, markup=False, classes="step", id="invite-title")
        yield Digits("", id="invite-number")
        yield Static("", markup=False, id="invite-code")
        yield Static("", markup=False, id="invite-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#invite-number", Digits).display = False
        public = relayurl.public(self.url)
        if self.role == "invite":
            self.show_status(f"Making a code on {public}…")
        else:
            self.show_status(f"Joining {self.code.text} on {public}: waiting for the inviter…")
        self.app.run_worker(self._meet, thread=True, group="invite", exit_on_error=False)

    def on_unmount(self) -> None:
        """Closed while waiting (the interface quit): the code is withdrawn, as with Esc."""
        if not getattr(self, "_handed_over", False):
            self.cancel.set()

    def show_status(self, text: str, style: str = "") -> None:
        self.query_one("#invite-status", Static).update(safe.literal(text, style, limit=600))

    def _meet(self) -> None:
        """Off the UI thread: this home's claims, the code, the wait; theirs handed back to the screen."""
        from gage.carriers.relay import invite, meet

        app = self.app

        def say(fn: Any, *args: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the interface closed meanwhile
                app.call_from_thread(fn, *args)

        try:
            mine = meet.own_claims(app.home, self.url, self.creds,  # type: ignore[attr-defined]
                                   made=lambda a: (say(app.notify, f"Made this home's mailbox {a} (recorded in settings.toml)"),
                                                   say(getattr(app, "mailbox_made", lambda: None))))
            if self.role == "invite":
                side = self.side = invite.Inviter(self.url, self.creds, None, self.expires)
                code = side.open()
                say(self.show_code, code)
                theirs = side.wait_join(mine, lambda n: say(self.show_status, f"A join came with a wrong code ({n} of {invite.MAX_TRIES}); still waiting…"),
                                        cancelled=self.cancel.is_set)
                came_from = meet.source("invite", self.url)
            else:
                side = self.side = invite.Joiner(self.url, self.creds, self.code)
                theirs = side.meet(mine, cancelled=self.cancel.is_set)
                came_from = meet.source("join", self.url)
        except GageError as exc:
            say(self.failed, safe.error_text(exc))
            return
        except Exception as exc:  # noqa: BLE001 - the relay's library failing: said, never a crash
            say(self.failed, safe.error_text(exc))
            return
        if self.cancel.is_set():  # left in the moment it arrived: the other side hears it
            meet.tell(side, "withdrawn")
            say(self.failed, "The code is withdrawn; nothing was swapped.")
            return
        self._handed_over = True  # from here the ceremony's screen speaks for this side
        say(self.arrived, side, theirs, came_from)

    def show_code(self, code: Any) -> None:
        """The code, large: its number in big digits, its words bold beneath (gage's own text)."""
        from gage.carriers.relay import rendezvous

        digits = self.query_one("#invite-number", Digits)
        digits.update(str(code.nameplate))
        digits.display = True
        self.query_one("#invite-code", Static).update(Content.styled(f"  {code.text}  ", "bold reverse"))
        public = relayurl.public(self.url)
        self.show_status(f"Read this code to them; they join it (J in gage, or: gage join {code.text} --relay {public}). It works once,"
                    f" for {rendezvous.say_duration(self.expires)}. Waiting for them to join… (Esc withdraws it)")

    def failed(self, message: str) -> None:
        title = "Invite" if self.role == "invite" else "Join"
        self.app.notify(message, title=title, severity="information" if self.cancel.is_set() else "error", timeout=12, markup=False)
        if self.is_attached and self.app.screen is self:
            self.dismiss(None)

    def action_withdraw(self) -> None:
        """As Ctrl-C at a terminal: the worker sees it within a poll and closes the code, so a join is told at once."""
        self.cancel.set()
        self.show_status("Withdrawing the code…" if self.role == "invite" else "Leaving the join…")

    def arrived(self, side: Any, theirs: Any, came_from: str) -> None:
        """Their claims opened: refused before any word if they cannot be confirmed here; else their name, then the words."""
        from gage.carriers.relay import meet

        key = theirs.keyfile.key
        try:
            meet.refuse_before_words(self.app.home, theirs)  # type: ignore[attr-defined]
        except GageError as exc:
            self.app.run_worker(lambda: meet.tell(side, "refused before the ceremony"), thread=True, exit_on_error=False)
            self.failed(safe.error_text(exc))
            return
        self.show_status(f"Their key {short_fingerprint(key)} came, claiming the name \"{theirs.keyfile.name}\" (a claim), with a mailbox on "
                    f"{relayurl.public(theirs.relay)}: kept only if the words confirm it.")

        def chosen(choice: PairChoice | None) -> None:
            if choice is None:
                self.app.run_worker(lambda: meet.tell(side, "stopped before the ceremony"), thread=True, exit_on_error=False)
                self.dismiss(None)
                return
            from gage.tui.invite_mutual import InviteMutualScreen

            self.app.switch_screen(InviteMutualScreen(key, theirs.keyfile.name, came_from, choice.name,
                                                      side=side, theirs=theirs, came_from=came_from))

        self.app.push_screen(PairNameDialog(key, theirs.keyfile.name, came_from, mutual=True, both_only=True), chosen)
