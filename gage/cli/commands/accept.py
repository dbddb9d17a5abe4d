"""`gage accept`: accept pending bundles, verifying the exact bytes as they move (gage.inbox.gate)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

    from gage.inbox import gate


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="+", metavar="ID", help="bundle id or unique prefix (several: each is found before any is moved)")
    p.add_argument(
        "--unverified", action="store_true", help="accept even though the sender is not a confirmed contact (journaled as such)"
    )
    json_option(p, 'print {"id", "state", "how", "verdict"} (a list of them for several ids)')


def run(args: argparse.Namespace) -> int:
    from gage.cli.deciding import decide_each
    from gage.cli.output import out, show
    from gage.inbox import gate

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

    return decide_each(args, one, "accept")
