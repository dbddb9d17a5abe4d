"""A failure in `--json` mode: one JSON object on standard output, the same shape for every command.

A script that asked for data should not have to parse `gage: io: ...` off standard error to
learn what went wrong. The object is `{"error": {"stage", "message", "path", "field",
"exit_code"}}`, the stage and exit code as `gage.format.errors` defines them (spec/cli.md).
"""

from __future__ import annotations

from typing import Any

from gage.cli.output import emit_json
from gage.format import relayurl
from gage.format.errors import GageError
from gage.format.sanitize import json_text


def failure(exc: GageError) -> dict[str, Any]:
    return {
        "error": {
            "stage": exc.stage,
            "message": json_text(relayurl.scrub(exc.message)),
            "path": json_text(exc.path) if exc.path is not None else None,
            "field": exc.field,
            "exit_code": int(exc.exit_code),
        }
    }


def emit_failure(exc: GageError) -> None:
    emit_json(failure(exc))
