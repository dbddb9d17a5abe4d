"""A failure in `--json` mode: one JSON object on standard output, the same shape for every command.

A script that asked for data should not have to parse `gage: io: ...` off standard error to
learn what went wrong. The object is `{"error": {"stage", "message", "path", "field",
"exit_code"}}`, the stage and exit code as `gage.errors` defines them (spec/cli.md).
"""

from __future__ import annotations

from typing import Any

from ..errors import GageError
from ..sanitize import json_text
from .output import emit_json


def failure(exc: GageError) -> dict[str, Any]:
    return {
        "error": {
            "stage": exc.stage,
            "message": json_text(exc.message),
            "path": json_text(exc.path) if exc.path is not None else None,
            "field": exc.field,
            "exit_code": int(exc.exit_code),
        }
    }


def emit_failure(exc: GageError) -> None:
    emit_json(failure(exc))
