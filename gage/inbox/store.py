"""Bundles held in a home: finding them by id prefix, listing them, bringing them in.

Importing copies into the home's staging area first and renames the finished copy into
`inbox/pending/<id>` in one step, so a half-copied bundle never appears under its final
name. Importing is not consent: nothing here writes to `inbox/accepted`.
"""

from __future__ import annotations

from pathlib import Path

from gage.format.errors import GageError
from gage.format.vocab import ArrivalEvent
from gage.home.layout import Home
from gage.inbox.landmany import ImportResult, Incoming, import_many

__all__ = ["ImportResult", "import_bundle"]


def import_bundle(
    home: Home,
    src: Path,
    *,
    event: ArrivalEvent = "imported",
    via: str | None = None,
    transport: dict[str, str] | None = None,
    lock_timeout: float | None = None,
) -> ImportResult:
    """Copy the bundle at `src` into `inbox/pending`. Bundles that fail checks still arrive
    (the verdict will say invalid); a folder that is not a bundle at all is refused.

    A batch of one (gage.inbox.landmany, where every rule of an import is): the receiver's
    limits and pending budgets (spec/settings.md) before anything is written and again under
    the lock; the copy checked before it lands, so only the journal line follows the rename;
    the same bundle again journaled as a replay; an invalid copy held in pending replaced
    whole by one that checks out.

    `transport`: what a carrier says about where the bundle came from (an A2A peer, the
    agent it names). Journaled with the arrival; the verdict shows it as a claim only.
    `lock_timeout`: give up (LockBusy, nothing imported) if the home lock is not free within
    that many seconds; `serve` sets it, so a held lock cannot pile requests up.
    """
    [outcome] = import_many(home, [Incoming(Path(src), event, via, transport)], lock_timeout=lock_timeout)
    if isinstance(outcome, GageError):
        cause = outcome.__cause__
        if type(outcome) is GageError and isinstance(cause, Exception) and not isinstance(cause, GageError):
            raise cause  # an error nobody foresaw: one import raises it as it always has
        raise outcome
    return outcome
