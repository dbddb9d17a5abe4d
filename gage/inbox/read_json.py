"""`gage read ID --json`: the frame's fields and a description of each payload file, as data.

The frame's values are the same strings `gage read` prints (already made visible). The
payload is described, never included: for each listed file its path, size and SHA-256 (the
manifest's), and, when the payload may be shown, whether it is text or binary by the rule
of spec/frame.md. Its bytes are `gage extract`'s job, checked against the manifest.
"""

from __future__ import annotations

import os
from typing import Any

from gage.bundle import PAYLOAD
from gage.bundle.safeopen import open_regular_beneath
from gage.format.sanitize import TEXT_SAMPLE, json_text, looks_binary
from gage.trust import frame
from gage.trust.verdict import Verdict


def _kind(v: Verdict, rel: str, size: int) -> str:
    try:
        fd, _st = open_regular_beneath(v.path, f"{PAYLOAD}/{rel}")
    except OSError:
        return "unreadable"
    try:
        sample = os.read(fd, TEXT_SAMPLE + 4)
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    return "binary" if looks_binary(sample[:TEXT_SAMPLE], more=size > TEXT_SAMPLE) else "text"


def read_json(v: Verdict, *, show_pending: bool, ask: str = frame.ASK_PENDING) -> dict[str, Any]:
    shown, why = frame.payload_status(v, show_pending=show_pending, ask=ask)
    files = []
    for entry in v.manifest.files if v.manifest is not None else []:
        row: dict[str, Any] = {"path": entry.path, "size": entry.size, "sha256": entry.sha256}
        if shown:
            row["type"] = _kind(v, entry.path, entry.size)
        files.append(row)
    return {
        "id": v.id,
        "state": v.state,
        "verdict": v.verdict,
        "frame": [{"label": f.label, "value": json_text(f.value), "severity": f.severity} for f in frame.fields(v)],
        "payload": {"shown": shown, "why": why or None, "files": files},
    }
