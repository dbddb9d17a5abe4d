"""What `gage accept` and `gage reject` share: every id found before anything moves, one decision
or one bulk decision (gage.inbox.gate), and each line printed as soon as its decision is durable.

All the logic is gage.inbox.gate's; this prints (untrusted text only through `show()`) and lets
typed errors become exit codes in main.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gage.cli.output import emit_json, err, open_home, show
from gage.format.errors import NotFoundError
from gage.home import listing
from gage.inbox import gate


def say_reconciled(notes: list[str]) -> None:
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


def decide_each(args: Any, one: Callable[[Any, Any], dict[str, Any]], action: Any) -> int:
    """One id: the single decision. Several: one bulk decision (gate.decide_many: one lock, the
    durable writes batched), each line printed as soon as its decision is durable."""
    home = open_home(args)
    say_reconciled(gate.reconcile(home))
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
