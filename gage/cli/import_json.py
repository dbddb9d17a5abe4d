"""`gage import --json`: one result per PATH given, in order, and any key statements applied.

`{"imported": [R...], "statements": [O...]}`, each R `{"path", "id", "state", "new", "ok",
"problem", "left_behind", "error"}`: `error` (a problem P as `verify --json` gives it) only
for a PATH that was not imported, `id` null then; `ok` is whether the copy now held checks
out, and `problem` its first problem. Each O as `gage key apply --json` gives it.
"""

from __future__ import annotations

from typing import Any

from gage.bundle import Problem
from gage.cli.keyreport import report_outcomes
from gage.cli.signer import signer_json
from gage.format.errors import GageError
from gage.format.sanitize import json_text
from gage.home.layout import Home
from gage.inbox.store import ImportResult
from gage.trust import retirement


def result(home: Home, path: str, res: ImportResult, held: Any = None) -> dict[str, Any]:
    """`held`: for a bundle already there, the check of the copy this home holds."""
    check = res.check if res.check is not None else held
    first = check.first_error() if check is not None else None
    return {
        "path": json_text(path),
        "id": res.id,
        "state": res.state,
        "new": res.new,
        "ok": check.ok if check is not None else None,
        "problem": Problem.of(first).to_json() if first is not None else None,
        "left_behind": [json_text(n) for n in res.left_behind],
        "error": None,
        # Who signed it, as `gage verify --json` names them: fingerprint beside key.
        "signer": signer_json(home, check.manifest, check.signature_ok) if check is not None else None,
    }


def failed(path: str, exc: GageError) -> dict[str, Any]:
    return {
        "path": json_text(path),
        "id": None,
        "state": None,
        "new": False,
        "ok": False,
        "problem": None,
        "left_behind": [],
        "error": Problem.of(exc).to_json(),
        "signer": None,
    }


def document(rows: list[dict[str, Any]], statements: list[dict[str, Any]]) -> dict[str, Any]:
    return {"imported": rows, "statements": statements}


def statements(home: Home, ids: list[str]) -> list[dict[str, Any]]:
    """As `keyreport.report_arrivals`: the messages still go to standard error, and are returned too."""
    outcomes = retirement.apply_arrivals(home, ids)
    report_outcomes(outcomes)
    return [o.to_json() for o in outcomes]
