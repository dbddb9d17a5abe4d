"""`gage journal verify | show`: check or print the append-only journal (gage.home.journal)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, positive

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    jsub = p.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    j = jsub.add_parser("verify", help="check the chain, the head, torn lines, and each decision against the inbox folders")
    json_option(j)
    j = jsub.add_parser("show", help="print the journal entries")
    j.add_argument("-n", type=positive, metavar="N", help="only the last N entries (the newest)")
    json_option(j)


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.journal_command](args)


def verify(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format.errors import Exit
    from gage.home.journal.verify import verify as verify_journal

    home = open_home(args)
    report = verify_journal(home.journal, inbox=home.root / "inbox")
    if args.json:
        emit_json(report.to_json())
    else:
        # Notes and problems quote values read from the journal and its head: never raw.
        for n in report.notes:
            out(f"note: {show(n)}")
        for p in report.problems:
            err(f"problem: {show(p)}")
        out(f"{'ok' if report.ok else 'NOT ok'}: {report.entries} entries")
    return 0 if report.ok else int(Exit.FAILED)


def show_entries(args: argparse.Namespace) -> int:
    import collections

    from gage.cli.output import open_home, out, show
    from gage.format.keys.asjson import with_fingerprints

    home = open_home(args)
    # Streamed: a long journal is never held whole. A transport an older gage journaled may name a
    # relay with its password: shown without it (the line on disk is as it was written).
    entries: Any = (_clean(e) for e in home.journal.iter_entries())
    if args.n is not None:
        entries = collections.deque(entries, maxlen=args.n)  # the last N, as `git log -n` shows the newest
    if args.json:
        # Each entry as written, with a fingerprint beside every key it names.
        _emit_json_stream(with_fingerprints(e) for e in entries)
        return 0
    for e in entries:
        rest = {k: v for k, v in e.items() if k not in ("seq", "time", "event", "prev")}
        # Values as JSON writes them (null, true, a list), strings bare: never Python's None/True.
        detail = " ".join(f"{show(k)}={show(_journal_value(v))}" for k, v in rest.items())
        out(f"{show(str(e.get('seq'))):>5} {show(str(e.get('time'))):<20} {show(str(e.get('event'))):<10} {detail}")
    return 0


def _clean(e: dict[str, Any]) -> dict[str, Any]:
    from gage.format import relayurl

    t = e.get("transport")
    return {**e, "transport": relayurl.clean_transport(t)} if isinstance(t, dict) else e


def _journal_value(v: Any) -> str:
    """A journal value for a person: strings bare, anything else as JSON writes it (null, true,
    a list), never Python's None/True; a key by its fingerprint, as every screen names it
    (a hybrid key's 3968 hex digits would fill the screen; `journal show --json` has every byte)."""
    if isinstance(v, list) and v and all(isinstance(x, str) and x.startswith(("ed25519:", "ed25519+mldsa65:")) for x in v):
        return ",".join(_journal_value(x) for x in v)  # `to=`: the recipients' keys, each by its fingerprint
    import json

    from gage.format.errors import GageError
    from gage.format.keys import parse_key, short_fingerprint

    if not isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    if v.startswith(("ed25519:", "ed25519+mldsa65:")):
        try:
            return f"key {short_fingerprint(parse_key(v))}"
        except GageError:
            return v[:80] + "..."
    return v


def _emit_json_stream(items: Any) -> None:
    """What `emit_json(list(items))` prints, byte for byte, written as the items are read."""
    import json
    import sys

    first = True
    for item in items:
        body = json.dumps(item, indent=2, ensure_ascii=True).replace("\n", "\n  ")
        sys.stdout.write(("[\n  " if first else ",\n  ") + body)
        first = False
    sys.stdout.write("[]\n" if first else "\n]\n")
    sys.stdout.flush()


# Each action's function, by the name `gage journal ACTION` gives it.
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {"verify": verify, "show": show_entries}
