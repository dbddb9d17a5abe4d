"""`gage import PATH...`: every PATH through the batched import (gage.inbox.landmany), one outcome each.

The paths land in batches (one lock, the copies synced together, one journal write a batch),
and each is reported as its batch ends: one bad folder is refused alone and the rest still
come in. On a terminal a progress line counts bundles, bytes and the rate; many PATHs end with
one summary line (gage/cli/import_report.py), and `--json` gives every PATH's id or error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gage.cli import import_json, keyreport
from gage.cli.import_report import Tally
from gage.cli.output import emit_json, err, open_home, out, show
from gage.cli.progress import CountLine
from gage.format.errors import GageError
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import landmany
from gage.inbox.store import ImportResult
from gage.trust import ceremony


def run(args: Any) -> int:
    home = open_home(args)
    paths = [str(p) for p in args.paths]
    worst = 0
    arrived: list[str] = []
    rows: list[dict[str, Any] | None] = [None] * len(paths)  # for --json (gage/cli/import_json.py)
    # Many PATHs: refusals are summed by cause at the end, each one told only with -v.
    bulk, verbose = len(paths) > 1, bool(getattr(args, "verbose", False))
    tally = Tally()
    line = CountLine("import", total=len(paths)) if bulk else None
    batch: list[ImportResult] = []

    def done(i: int, o: landmany.Outcome) -> None:
        if line is None:
            said(i, o)
            return
        line.add(1, o.check.manifest.total_size if isinstance(o, ImportResult) and o.check is not None and o.check.manifest else 0)
        with line.aside():  # what is printed is never drawn over
            said(i, o)

    def said(i: int, o: landmany.Outcome) -> None:
        nonlocal worst
        p = paths[i]
        if isinstance(o, GageError):
            if not bulk:
                err(f"gage: {o.stage}: {show(str(o))}")
            elif verbose:  # which PATH, when the error does not say
                err(f"gage: {o.stage}: {show(str(o) if o.path else f'{p}: {o}')}")
            worst = worst or int(o.exit_code)
            rows[i] = import_json.failed(p, o)
            tally.refuse(p, o)
            return
        batch.append(o)
        rows[i] = import_json.result(home, p, o, _held_check(home, o) if args.json else None)
        if not o.new:
            tally.already += 1
            if not bulk or verbose:
                err(f"{o.id[:12]}: already there ({o.state})")
        else:
            tally.imported += 1
            for name in o.left_behind:
                err(f"{o.id[:12]}: left behind {show(name)}: not part of the bundle")
            if o.check is not None and not o.check.ok:
                first = o.check.first_error()
                err(f"{o.id[:12]}: imported to pending, but it does NOT verify: {show(str(first))}")
            elif not bulk or verbose:
                err(f"{o.id[:12]}: imported to pending (unread; nothing is accepted until you say so)")
            arrived.append(o.id)
        if not args.json:
            out(o.id)

    try:
        landmany.import_many(
            home,
            [landmany.Incoming(Path(p)) for p in paths],
            on_outcome=done,
            after_batch=lambda _outcomes: _remember(home, batch),
        )
    finally:
        ceremony.remember_signers(home, batch)  # the key layer records the candidates, not the store
        if line is not None:
            line.clear()
    # A key statement that arrived is applied now (or refused, and why): spec/keys.md.
    if args.json:
        doc = import_json.document([r for r in rows if r is not None], import_json.statements(home, arrived))
        emit_json(doc | ({"summary": tally.to_json()} if bulk else {}))
    else:
        keyreport.report_arrivals(home, arrived)
    if bulk:
        for text in tally.cause_lines():
            err(show(text))
        err(tally.last_line())
    return worst


def _remember(home: Home, batch: list[ImportResult]) -> None:
    """Once a batch, before its rows are kept under the contacts: contacts read and written once."""
    ceremony.remember_signers(home, batch)
    batch.clear()


def _held_check(home: Home, res: ImportResult) -> Any:
    """For a bundle already there, the check of the copy held, so `ok` is true or false, never null."""
    if res.check is not None:
        return None
    from gage.home.cache.checks import CheckCache

    try:
        cache = CheckCache.of(home)
        found = cache.check(listing.resolve(home, res.id))
        cache.save()
    except GageError:
        return None
    return found
