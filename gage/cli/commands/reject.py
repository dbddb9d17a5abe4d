"""`gage reject`: reject pending bundles, the reason kept in the journal (gage.inbox.gate)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

    from gage.inbox import gate


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="+", metavar="ID", help="bundle id or unique prefix (several: each is found before any is moved)")
    p.add_argument("--why", metavar="TEXT", help="the reason, kept in the journal")
    json_option(p, 'print {"id", "state", "why"} (a list of them for several ids)')


def run(args: argparse.Namespace) -> int:
    from gage.cli.deciding import decide_each
    from gage.cli.output import out, show
    from gage.inbox import gate

    def one(home: Any, decided: str | gate.RejectResult) -> dict[str, Any]:
        result = gate.reject(home, decided, why=args.why) if isinstance(decided, str) else decided
        if not getattr(args, "json", False):
            out(f"rejected {result.id}" + (f" ({show(args.why)})" if args.why else ""))
        return {"id": result.id, "state": "rejected", "why": args.why}

    return decide_each(args, one, "reject")
