"""`gage watch`: import bundles from drop folders and this home's mailbox until stopped.

The watching is gage.carriers.watch's, the mailbox's gage.carriers.relay.follow's, the deliveries
waiting for their way gage.carriers.outbox_loop's; this parses, prints (untrusted text only
through the watch log), and turns Ctrl-C into exit 130 and SIGTERM into 0.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, positive, seconds
from gage.cli.passphrase import add_options as add_passphrase_options

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    import threading
    from typing import Any

    from gage.home.layout import Home


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--drop", action="append", default=[], metavar="DIR", help="a drop folder to watch (repeatable)")
    box = p.add_mutually_exclusive_group()
    box.add_argument("--mailbox", action="store_true", help="fetch this home's relay mailbox as envelopes arrive (the default when it has one)")
    box.add_argument("--no-mailbox", action="store_true", help="only the drop folders, even when this home has a mailbox")
    p.add_argument(
        "--unattended",
        action="store_true",
        help="accept verified replies to bundles I sent without asking, within --budget per thread",
    )
    p.add_argument("--budget", type=positive, metavar="N", help="unattended accepts allowed per thread (counted in the journal)")
    p.add_argument("--settle", type=seconds, default=2.0, metavar="SECONDS", help="wait this long for an incomplete bundle to stop changing (default 2)")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="also name each event's kind, bundle id and path")
    loud.add_argument("-q", "--quiet", action="store_true", help="only arrivals, decisions and errors")
    add_passphrase_options(p)  # --mailbox on a protected home: its sealing key opens with the identity
    json_option(p, "one JSON object per line (time, kind, message, id, path)")


def run(args: argparse.Namespace) -> int:
    import signal
    import threading
    from pathlib import Path

    from gage.cli.output import open_home
    from gage.cli.watch_log import (
        WatchLog,  # with the watcher (watchfiles): only `gage watch` loads them
    )
    from gage.format.errors import UsageError

    if args.unattended and args.budget is None:
        raise UsageError("--unattended needs --budget N: the number of unattended accepts allowed per thread")
    if args.budget is not None and not args.unattended:
        raise UsageError("--budget only applies with --unattended")
    home = open_home(args)
    # The mailbox is fetched by default once the home has one: mail arrives with nothing else run.
    with_mailbox = getattr(args, "mailbox", False) or (not getattr(args, "no_mailbox", False) and _has_mailbox(home))
    from gage.home import sendqueue

    if not args.drop and not with_mailbox and not sendqueue.queued_count(home):
        raise UsageError("give at least one --drop DIR to watch (this home has no mailbox: `gage invite` or `gage mailbox create` makes one)")
    stop = threading.Event()
    on_event = WatchLog(verbose=args.verbose, quiet=args.quiet, as_json=args.json)

    from gage.carriers.watch import Watcher

    watcher = Watcher(
        home,
        [Path(d) for d in args.drop],
        budget=args.budget if args.unattended else None,
        settle=args.settle,
        on_event=on_event,
        stop_event=stop,
    )

    caught: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        caught.append(signum)
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    box = _mailbox_thread(home, args, on_event, stop) if with_mailbox else None
    from gage.carriers import (
        outbox_loop,  # the deliveries waiting for their way, sent as it comes back
    )

    sending = outbox_loop.start(home, stop, on_event)
    try:
        if args.drop:
            watcher.run()
        else:
            while not stop.wait(0.5):
                pass
    finally:
        stop.set()
        if box is not None:
            box.join(timeout=30)
        sending.join(timeout=30)
        for s, h in old.items():
            signal.signal(s, h)
    # Ctrl-C is 130, as for every command (spec/cli.md); SIGTERM, a service manager's stop, is 0.
    return 130 if signal.SIGINT in caught else 0


def _has_mailbox(home: Home) -> bool:
    """A sealing key and a relay in settings.toml: what `gage mailbox create` (or `gage invite`) leaves."""
    from gage.home import sealing, settings

    return sealing.load(home.root, home.identity.key, owned=home.identity.owns) is not None and bool(settings.load(home).relay_url)


def _mailbox_thread(home: Home, args: argparse.Namespace, on_event: Any, stop: threading.Event) -> threading.Thread:
    """`--mailbox`: the relay's envelopes, fetched live beside the drop folders (gage.carriers.relay.follow)."""
    import threading

    from gage.cli import relaying
    from gage.cli.extras import relay_extra
    from gage.format.errors import UsageError
    from gage.home import sealing, unlock

    with relay_extra():
        from gage.carriers.relay import follow

    key = unlock.sealing_key(home, opened=True)  # a protected home: the passphrase now, before the watch starts
    if key is None:
        raise UsageError("this home has no mailbox yet: gage mailbox create --relay URL")
    url, creds = relaying.relay_url(home, args), relaying.creds(home, args)
    t = threading.Thread(
        target=follow.follow,
        args=(home, url, sealing.mailbox_address(key.recipient)),
        kwargs={"creds": creds, "budget": args.budget if args.unattended else None, "on_event": on_event, "stop": stop},
        name="gage-mailbox",
        daemon=True,
    )
    t.start()
    return t
