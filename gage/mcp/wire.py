"""What `gage mcp` answers to a line the SDK cannot read, and how a refusal is worded.

The SDK's reader (pydantic's JSON parser) refuses a JSON string holding a lone surrogate
(`"a\\ud800b"`): JSON allows the escape, and Python's `json` reads it, but it is not text.
The SDK then drops the line without an answer, and the client waits for ever.
Every request gets an answer, so the server reads such a line again here: a tool
call is refused in gage's `usage` stage as any bad argument is, another request gets a
JSON-RPC error, and a line that is no JSON at all a parse error with a null id.

No SDK here (server.py is the one module that imports it): plain dicts in, plain dicts out.
"""

from __future__ import annotations

import json
from typing import Any

from .seams import visible

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def refusal(stage: str, message: str) -> str:
    """The one shape of every refusal (spec/mcp.md section 8): `gage: STAGE: message`, one visible line."""
    return f"gage: {stage}: {visible(message)}"


def lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where in `value` the first string with a lone surrogate is (a dotted path), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "(the value)"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = lone_surrogate(k, where) or lone_surrogate(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = lone_surrogate(v, f"{where}[{i}]")
            if found:
                return found
    return None


def _error(rid: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def answer_unreadable(line: str) -> dict[str, Any] | None:
    """The answer to a line the SDK could not read, or None when it needs none (a notification, a response)."""
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, refusal("usage", "the line is not JSON"))
    if not isinstance(doc, dict):
        return _error(None, INVALID_REQUEST, refusal("usage", "a request is a JSON object (batches are not taken)"))
    rid = doc.get("id")
    if "method" not in doc or rid is None:
        return None  # a notification or a response: JSON-RPC answers neither
    if not isinstance(rid, str | int) or isinstance(rid, bool) or lone_surrogate(rid):
        return _error(None, INVALID_REQUEST, refusal("usage", "a request id is a string or an integer"))
    params = doc.get("params")
    where = lone_surrogate(params)
    if where is None:
        return _error(rid, INVALID_REQUEST, refusal("usage", "not a JSON-RPC request this server reads"))
    if doc.get("method") == "tools/call" and isinstance(params, dict):
        args = params.get("arguments")
        inner = lone_surrogate(args) if isinstance(args, dict) else None
        what = f"argument `{inner}`" if inner else f"`{where}`"
        text = refusal("usage", f"{what} holds a lone surrogate, which is not text; nothing was done")
        return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}], "isError": True}}
    return _error(rid, INVALID_PARAMS, refusal("usage", f"`{where}` holds a lone surrogate, which is not text; nothing was done"))
