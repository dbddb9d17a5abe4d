"""`gage outbox`: the deliveries waiting for their way, listed, sent now, or cancelled.

The logic is gage.carriers.outbox's; the files are gage.home.sendqueue's. A delivery file damaged
by hand is named on standard error and skipped: nothing is sent from it.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

OUTBOX_EXAMPLES = """\
examples:
  gage outbox                                                # what waits: age, tries, last error, way
  gage outbox send                                           # try every waiting delivery now
  gage outbox cancel 9c41                                    # do not send that one (journaled)
  gage outbox --all --json                                   # every delivery, done and cancelled too
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = OUTBOX_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("action", nargs="?", choices=("list", "send", "cancel"), default="list")
    p.add_argument("delivery", nargs="?", metavar="ID", help="a delivery's id (a prefix of 4 or more will do): for send (default: all waiting) and cancel")
    p.add_argument("--all", action="store_true", help="with list: also the deliveries done or cancelled")
    json_option(p)


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from gage.carriers import outbox
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format.errors import Exit, UsageError
    from gage.home import sendqueue

    home = open_home(args)
    if args.action == "list":
        if args.delivery:
            raise UsageError("`gage outbox list` takes no ID (send and cancel do)")
        deliveries, damaged = sendqueue.load_all(home)
        for bad in damaged:
            err(f"gage: malformed: {show(str(bad.path))}: {show(bad.problem)} (skipped: nothing is sent from it)")
        now = datetime.now(UTC)
        shown = [outbox.view(d, now) for d in deliveries if args.all or d.waiting]
        if args.json:
            emit_json({"deliveries": shown, "damaged": [{"path": str(b.path), "problem": b.problem} for b in damaged]})
        elif not shown:
            err("the outbox is empty: nothing waits to be delivered" if not args.all else "no delivery was made from this home")
        else:
            for v in shown:
                line = f"{v['id'][:8]}  {v['bundle'][:12]}  to {show(v['to'])}'s {outbox.PLACE[v['route']]}  {v['state']}  "
                line += f"{_age(v['age_seconds'])} old  tries {v['tries']}"
                if v["state"] == "queued" and v["last_error"]:
                    line += f"  last error: {show(v['last_error'])}"
                if v["state"] == "cancelled" and v["why"]:
                    line += f"  why: {show(v['why'])}"
                out(line)
        return int(Exit.MALFORMED) if damaged else 0
    if args.action == "cancel":
        if not args.delivery:
            raise UsageError("give the ID of the delivery to cancel (`gage outbox` lists them)")
        d = sendqueue.resolve(home, args.delivery)
        with sendqueue.held(home, d.id) as mine:
            if not mine:
                raise UsageError(f"delivery {d.id[:8]} is being tried right now; cancel it again in a moment")
            d = sendqueue.read(home, d.id)
            if not d.waiting:
                from gage.format.errors import RefusedError

                raise RefusedError(f"delivery {d.id[:8]} is {d.state}, not waiting: nothing to cancel")
            done = outbox.cancel(home, d, "cancelled by the person (gage outbox cancel)", by="person")
        if args.json:
            emit_json(done.to_json())
        else:
            out(f"{d.bundle[:12]}: the delivery to {show(d.to)} is cancelled; nothing more will be tried")
        return 0
    only = sendqueue.resolve(home, args.delivery).id if args.delivery else None
    damaged_seen: list[Any] = []
    results = outbox.send_waiting(home, only=only, force=True, on_damaged=damaged_seen.append)
    for bad in damaged_seen:
        err(f"gage: malformed: {show(str(bad.path))}: {show(bad.problem)} (skipped: nothing is sent from it)")
    if args.json:
        emit_json({"tried": [o.to_json() for o in results]})
    else:
        if not results:
            err("nothing waits to be delivered" if only is None else f"delivery {only[:8]} is not waiting (or another gage is trying it now)")
        for o in results:
            out(o.summary())
    codes = [o.code for o in results if o.code]
    if damaged_seen and not codes:
        return int(Exit.MALFORMED)
    return max(codes) if codes else 0


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
