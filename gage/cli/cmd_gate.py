"""Commands of the accept gate: accept, reject, watch.

All logic lives in gage.inbox.gate and gage.carriers.watch; this module parses, prints (untrusted text
only through `show()`), and lets typed errors become exit codes in main.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gage.cli.output import emit_json, err, open_home, out, show
from gage.format.errors import NotFoundError, UsageError
from gage.home import listing
from gage.inbox import gate

if TYPE_CHECKING:
    from gage.carriers.watch import (
        WatchEvent,  # the watcher (watchfiles) loads only for `gage watch`
    )


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


def _resolve_all(home: Any, refs: list[str]) -> list[str]:
    """Every id given, found before anything moves: a typo in the third id must not leave
    the first two decided and the person unsure which. Pending bundles are looked at first,
    so a prefix shared with a decided bundle still names the pending one."""
    ids: list[str] = []
    for ref in refs:
        try:
            found = listing.resolve(home, ref, ("pending",)).id
        except NotFoundError:
            found = listing.resolve(home, ref).id
        if found not in ids:
            ids.append(found)
    return ids


def _decide_each(args: Any, one: Callable[[Any, Any], dict[str, Any]], action: Any) -> int:
    """One id: the single decision. Several: one bulk decision (gate.decide_many: one lock, the
    durable writes batched), each line printed as soon as its decision is durable."""
    home = open_home(args)
    _say_reconciled(gate.reconcile(home))
    ids = _resolve_all(home, args.ids)
    try:
        return _decide_ids(home, ids, args, one, action)
    finally:
        if home.journal.head_error is not None:
            # The decisions are journaled; only the head's rewrite after them failed (a full disk).
            err(f"gage: note: {show(str(home.journal.head_error))}; the journal's lines are written, and its next write brings the head up to date")


def _decide_ids(home: Any, ids: list[str], args: Any, one: Callable[[Any, Any], dict[str, Any]], action: Any) -> int:
    if len(ids) == 1:
        try:
            row = one(home, ids[0])
        except KeyboardInterrupt:
            # A Ctrl-C held until the decision was settled: say which way it went.
            done = listing.decisions(home).get(ids[0])
            err(f"gage: interrupted: {ids[0]} " + (f"is {done} (its journal line was written)" if done else f"was not {action}ed"))
            raise
        if getattr(args, "json", False):
            emit_json(row)
        return 0
    rows: dict[str, dict[str, Any]] = {}
    worst = 0

    def said(_done: int, _total: int, d: gate.Decided) -> None:
        nonlocal worst
        if d.error is None:
            rows[d.id] = one(home, d.result)
            return
        exc = d.error
        err(f"gage: {exc.stage}: {d.id[:12]}: {show(str(exc))}")
        rows[d.id] = {"id": d.id, "error": {**exc.to_json(), "exit_code": int(exc.exit_code)}}
        worst = worst or int(exc.exit_code)

    try:
        decided = gate.decide_many(
            home, ids, action, unverified=getattr(args, "unverified", False), why=getattr(args, "why", None), progress=said
        )
    except KeyboardInterrupt:
        # Stopped between batches: what was said above is decided and journaled; the rest is in pending.
        left = [i for i in ids if i not in rows or rows[i].get("error", {}).get("stage") == "io"]
        err(f"gage: interrupted: {len(left)} of {len(ids)} bundles not {action}ed (they are in pending)")
        for i in left:
            err(f"gage: not {action}ed: {i}")
        raise
    not_done = [d for d in decided if isinstance(d.error, gate.NotDecidedError)]
    if not_done:
        # Exit 7 says "not done, do it again", whatever else was refused on the way.
        err(f"gage: {len(not_done)} of {len(ids)} bundles not {action}ed (named above): run the command again for them")
        worst = int(not_done[0].error.exit_code) if not_done[0].error else worst
    if getattr(args, "json", False):
        emit_json([rows[d.id] for d in decided])
    return worst


def cmd_accept(args: Any) -> int:
    def one(home: Any, decided: str | gate.AcceptResult) -> dict[str, Any]:
        result = gate.accept(home, decided, unverified=args.unverified) if isinstance(decided, str) else decided
        v = result.verdict
        if getattr(args, "json", False):
            pass
        elif result.how == "human-unverified":
            out(
                f"accepted {result.id} WITH THE SENDER UNVERIFIED: {show(v.sender.label())} is not a confirmed contact; "
                "the signature is good but nobody has confirmed whose key it is. The journal records this accept as human-unverified."
            )
        else:
            out(f"accepted {result.id} (verified: signed by confirmed contact {show(v.sender.label())})")
        return {"id": result.id, "state": "accepted", "how": result.how, "verdict": v.verdict}

    return _decide_each(args, one, "accept")


def cmd_reject(args: Any) -> int:
    def one(home: Any, decided: str | gate.RejectResult) -> dict[str, Any]:
        result = gate.reject(home, decided, why=args.why) if isinstance(decided, str) else decided
        if not getattr(args, "json", False):
            out(f"rejected {result.id}" + (f" ({show(args.why)})" if args.why else ""))
        return {"id": result.id, "state": "rejected", "why": args.why}

    return _decide_each(args, one, "reject")


def _has_mailbox(home: Any) -> bool:
    """A sealing key and a relay in settings.toml: what `gage mailbox create` (or `gage invite`) leaves."""
    from gage.home import sealing, settings

    return sealing.load(home.root, home.identity.key, owned=home.identity.owns) is not None and bool(settings.load(home).relay_url)


def _mailbox_thread(home: Any, args: Any, on_event: Any, stop: threading.Event) -> threading.Thread:
    """`--mailbox`: the relay's envelopes, fetched live beside the drop folders (gage.carriers.relay.follow)."""
    from gage.cli import cmd_relay

    follow = cmd_relay._relay("follow")
    from gage.home import sealing, unlock

    key = unlock.sealing_key(home, opened=True)  # a protected home: the passphrase now, before the watch starts
    if key is None:
        raise UsageError("this home has no mailbox yet: gage mailbox create --relay URL")
    url, creds = cmd_relay._url(home, args), cmd_relay._creds(home, args)
    t = threading.Thread(
        target=follow.follow,
        args=(home, url, sealing.mailbox_address(key.recipient)),
        kwargs={"creds": creds, "budget": args.budget if args.unattended else None, "on_event": on_event, "stop": stop},
        name="gage-mailbox",
        daemon=True,
    )
    t.start()
    return t


def cmd_watch(args: Any) -> int:
    from gage.cli.watch_log import (
        WatchLog,  # with the watcher (watchfiles): only `gage watch` loads them
    )

    if args.unattended and args.budget is None:
        raise UsageError("--unattended needs --budget N: the number of unattended accepts allowed per thread")
    if args.budget is not None and not args.unattended:
        raise UsageError("--budget only applies with --unattended")
    home = open_home(args)
    # The mailbox is fetched by default once the home has one (issue 30): mail arrives with nothing else run.
    with_mailbox = getattr(args, "mailbox", False) or (not getattr(args, "no_mailbox", False) and _has_mailbox(home))
    from gage.home import sendqueue

    if not args.drop and not with_mailbox and not sendqueue.queued_count(home):
        raise UsageError("give at least one --drop DIR to watch (this home has no mailbox: `gage invite` or `gage mailbox create` makes one)")
    stop = threading.Event()
    log = WatchLog(verbose=args.verbose, quiet=args.quiet, as_json=args.json)

    printing = threading.Lock()  # --mailbox reports from its own thread: one whole line at a time

    def on_event(event: WatchEvent) -> None:
        if not log.wanted(event):
            return
        with printing:
            if args.json:
                out(log.json_line(event))
                return
            line = log.text(event)
            if event.kind in ("error", "reconciled"):
                err(_encodable(f"{log.stamp()} gage: {event.kind}: {line}", sys.stderr))
            else:
                out(_encodable(f"{log.stamp()} {line}", sys.stdout))

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
