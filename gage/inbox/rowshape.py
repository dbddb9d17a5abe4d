"""The one shape of an inbox row in JSON (`gage list --json`, MCP's `list_bundles`, spec/cli.md).

A module of its own so that a row computed by the read model (gage.inbox.rows) and one kept in
the row index (gage.inbox.listed) print through the same lines, without either importing the other.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any


def row_json(row: Any, sender: dict[str, Any]) -> dict[str, Any]:
    """The one shape of a row of `gage list --json` (spec/cli.md), for a row the read model computed and one
    kept in the row index (gage.inbox.listed) alike; `sender` is the verdict's `Sender.to_json()`."""
    return {
        "id": row.id,
        "state": row.state,
        "kind": row.kind,
        "created": row.created,
        "subject": row.subject,
        "verdict": row.level,
        "accepted_how": row.accepted_how,
        "sender": sender,
    }


def rows_text(rows: list[dict[str, Any]]) -> str:
    """A list of rows as `gage list --json` and MCP's `list_bundles` print it: one JSON document,
    ASCII only (every control and non-ASCII character a \\u escape, spec/cli.md), one row a line.

    One call of the C encoder: the pure-Python encoder an indent needs took 0.7 s of a 10,000-row
    listing, an order more than the rows themselves. A line break before each object that
    starts with its `id` (every row does) only adds whitespace between tokens: `{"` can never
    occur inside a JSON string, where every `"` is escaped as `\\"`, so no string is split."""
    import json

    text = json.dumps(rows, ensure_ascii=True)
    if not rows:
        return text
    return "[\n" + text[1:-1].replace('}, {"id": ', '},\n{"id": ') + "\n]"
