"""Commands of the accept gate: accept, reject, watch.

All logic lives in gage.gate and gage.watch; this module parses, prints (untrusted text
only through `show()`), and lets typed errors become exit codes in main.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from .. import gate
from ..errors import UsageError
from ..watch import Watcher, WatchEvent
from .output import emit_json, err, open_home, out, show
from .watch_log import WatchLog


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError("the budget must be at least 1")
    return n


def _seconds(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= n <= 3600:
        raise argparse.ArgumentTypeError("give between 0 and 3600 seconds")
    return n


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("accept", help="accept a pending bundle (verifies the exact bytes as it moves them)")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix")
    p.add_argument(
        "--unverified", action="store_true", help="accept even though the sender is not a confirmed contact (journaled as such)"
    )
    p.add_argument("--json", action="store_true", help='print {"id", "state", "how", "verdict"}')
    p.set_defaults(func=cmd_accept)

    p = sub.add_parser("reject", help="reject a pending bundle")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix")
    p.add_argument("--why", metavar="TEXT", help="the reason, kept in the journal")
    p.add_argument("--json", action="store_true", help='print {"id", "state", "why"}')
    p.set_defaults(func=cmd_reject)

    p = sub.add_parser("watch", help="import bundles from drop folders until stopped")
    p.add_argument("--drop", action="append", default=[], metavar="DIR", help="a drop folder to watch (repeatable)")
    p.add_argument(
        "--unattended",
        action="store_true",
        help="accept verified replies to bundles I sent without asking, within --budget per thread",
    )
    p.add_argument("--budget", type=_positive, metavar="N", help="unattended accepts allowed per thread (counted in the journal)")
    p.add_argument("--settle", type=_seconds, default=2.0, metavar="SECONDS", help="wait this long for an incomplete bundle to stop changing (default 2)")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="also name each event's kind, bundle id and path")
    loud.add_argument("-q", "--quiet", action="store_true", help="only arrivals, decisions and errors")
    p.add_argument("--json", action="store_true", help="one JSON object per line (time, kind, message, id, path)")
    p.set_defaults(func=cmd_watch)


def _encodable(line: str, stream: Any) -> str:
    """`line` as the stream can encode it: a character it cannot (a drop folder's "ü" on an ASCII
    or Latin-1 terminal) is written as an escape, so printing a name never raises inside the
    watcher."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        line.encode(encoding)
        return line
    except UnicodeEncodeError:
        return line.encode(encoding, errors="backslashreplace").decode(encoding)
    except LookupError:
        return line.encode("ascii", errors="backslashreplace").decode("ascii")


def _say_reconciled(notes: list[str]) -> None:
    for note in notes:
        err(f"gage: reconciled: {note}")


def cmd_accept(args: Any) -> int:
    home = open_home(args)
    _say_reconciled(gate.reconcile(home))
    result = gate.accept(home, args.id, unverified=args.unverified)
    v = result.verdict
    if getattr(args, "json", False):
        emit_json({"id": result.id, "state": "accepted", "how": result.how, "verdict": v.verdict})
        return 0
    if result.how == "human-unverified":
        out(
            f"accepted {result.id} WITH THE SENDER UNVERIFIED: {show(v.sender.label())} is not a confirmed contact; "
            "the signature is good but nobody has confirmed whose key it is. The journal records this accept as human-unverified."
        )
    else:
        out(f"accepted {result.id} (verified: signed by confirmed contact {show(v.sender.label())})")
    return 0


def cmd_reject(args: Any) -> int:
    home = open_home(args)
    _say_reconciled(gate.reconcile(home))
    result = gate.reject(home, args.id, why=args.why)
    if getattr(args, "json", False):
        emit_json({"id": result.id, "state": "rejected", "why": args.why})
        return 0
    out(f"rejected {result.id}" + (f" ({show(args.why)})" if args.why else ""))
    return 0


def cmd_watch(args: Any) -> int:
    if args.unattended and args.budget is None:
        raise UsageError("--unattended needs --budget N: the number of unattended accepts allowed per thread")
    if args.budget is not None and not args.unattended:
        raise UsageError("--budget only applies with --unattended")
    if not args.drop:
        raise UsageError("give at least one --drop DIR to watch")
    home = open_home(args)
    stop = threading.Event()
    log = WatchLog(verbose=args.verbose, quiet=args.quiet, as_json=args.json)

    def on_event(event: WatchEvent) -> None:
        if not log.wanted(event):
            return
        if args.json:
            out(log.json_line(event))
            return
        line = log.text(event)
        if event.kind in ("error", "reconciled"):
            err(_encodable(f"{log.stamp()} gage: {event.kind}: {line}", sys.stderr))
        else:
            out(_encodable(f"{log.stamp()} {line}", sys.stdout))

    watcher = Watcher(
        home,
        [Path(d) for d in args.drop],
        budget=args.budget if args.unattended else None,
        settle=args.settle,
        on_event=on_event,
        stop_event=stop,
    )

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.run()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 0
