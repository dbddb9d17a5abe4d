"""`gage list`: list bundles in the home, each with the verdict computed now."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, positive
from gage.format.vocab import KINDS
from gage.format.vocab import PLACES as ALL_STATES

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state", choices=ALL_STATES, help="only the bundles in this place (default: all, pending first)")
    p.add_argument("--sent", action="store_true", help="the bundles made here (--state outbox), each with its delivery's state: queued, delivered, cancelled")
    p.add_argument("--kind", choices=KINDS, help="only bundles of this kind")
    p.add_argument(
        "--from", dest="sender", metavar="NAME",
        help="only bundles a confirmed contact signed (by name; `me` for mine), or a key (its fingerprint, 8+ hex digits)",
    )
    p.add_argument("--limit", type=positive, metavar="N", help="only the first N (after the filters), as `git log -n`")
    json_option(p)


def run(args: argparse.Namespace) -> int:
    """Every bundle with the verdict computed now, from the inbox read model (gage.inbox.rows),
    the rows the interface shows. The sender is the verdict's (`Sender.to_json()`, the shape
    `gage verdict --json` prints): never looked up in the contacts here, so a bundle whose
    signature fails is never listed under a contact's name."""
    from gage.cli.list_filter import filtered
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format.errors import UsageError
    from gage.home.layout import ALL_STATES as EVERY_PLACE
    from gage.inbox.listed import listed_rows

    home = open_home(args)
    if getattr(args, "sent", False):
        if args.state not in (None, "outbox"):
            raise UsageError("--sent is --state outbox: give one or the other")
        args.state = "outbox"
    rows = listed_rows(home, (args.state,) if args.state else EVERY_PLACE)  # from the row index where unchanged
    rows, left_out = filtered(home, rows, kind=getattr(args, "kind", None), sender=getattr(args, "sender", None), limit=getattr(args, "limit", None))
    sent: dict[str, Any] = {}
    if any(r.state == "outbox" for r in rows):  # a sent bundle's row says queued, delivered or cancelled
        from gage.home import sendqueue

        if args.json:
            emit_json(sendqueue.with_delivery(home, [r.to_json() for r in rows]))
            return 0
        sent = sendqueue.states_by_bundle(home)
    if args.json:
        from gage.inbox.rowshape import rows_text

        print(rows_text([r.to_json() for r in rows]), flush=True)  # one row a line (spec/cli.md: `--json`)
        return 0
    if left_out:
        err(f"{left_out} more not listed (--limit {args.limit})")
    if not rows:
        out("no bundles")
        return 0
    for r in rows:
        if r.kind is None:
            out(f"{r.state:<9} {r.id[:12]}  (unreadable manifest)")
            continue
        went = sent.get(r.id) if r.state == "outbox" else None
        if went:
            who = ", ".join(f"{show(d['to'])} {d['state']}" for d in went["deliveries"])
            out(f"{r.state:<9} {r.id[:12]}  {went['state']:<10} {r.kind:<14} to {who:<25} {show(r.subject or '')}")
            continue
        subj = show(r.subject or "")
        if r.accepted_how == "unattended":
            subj = f"[accepted UNATTENDED] {subj}"
        elif r.accepted_how == "human-unverified":
            subj = f"[accepted with sender unverified] {subj}"
        out(f"{r.state:<9} {r.id[:12]}  {r.level:<10} {r.kind:<14} {show(r.sender_label):<28} {subj}")
    return 0
