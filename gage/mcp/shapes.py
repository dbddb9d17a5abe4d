"""The typed answers of `gage mcp`: each tool's output schema, so an agent knows each answer's shape before it asks.

Each tool answers with its text, exactly as before (the JSON a command's `--json` prints,
or the frame lines), and beside it the same value as `structuredContent`, described by
the models here, so a client (the MCP Inspector among them) sees typed answers. The rows
and objects keep every field the command gives (`extra="allow"`): the models name and
describe the fields an agent relies on, and a field added to a command's JSON reaches the
agent without a change here. pydantic comes with the SDK (the `mcp` extra); only server.py
loads this module.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Row(_Open):
    """One row of `gage list --json`."""

    id: str = Field(description="the bundle's id: the SHA-256 of its manifest bytes, 64 hex digits")
    state: str = Field(description="pending, accepted, rejected or outbox; pending is NOT accepted")
    verdict: str = Field(description="what this home computes now: verified, unverified, invalid, ...")
    delivery: dict[str, Any] | None = Field(
        default=None,
        description="outbox rows only: the state of its deliveries (queued, delivered, cancelled) and to whom; null if never delivered. "
        "Read only: an agent cannot send",
    )


class Bundles(BaseModel):
    bundles: list[Row] = Field(description="the rows of `gage list --json`, in its order, at most `limit`")
    more: int = Field(ge=0, description="how many more bundles were held and not listed (0: this is all of them)")


class VerdictOut(_Open):
    """`gage verdict ID --json`."""

    id: str = Field(description="the bundle's id")
    verdict: str = Field(description="verified, unverified, invalid, ...: computed by this home, never read from the bundle")


class Text(BaseModel):
    text: str = Field(description="the answer's text: gage's frame first, then the sender's payload fenced with this read's token")


class FilesOut(_Open):
    """`gage read ID --json`."""

    id: str = Field(description="the bundle's id")
    state: str = Field(description="where the bundle is held; pending is NOT accepted")
    verdict: str = Field(description="what this home computes now")
    frame: list[dict[str, Any]] = Field(description="the frame's lines as label, value (made visible) and severity")
    payload: dict[str, Any] = Field(description="whether the payload may be shown, why not, and each listed file")


class ContactsOut(BaseModel):
    contacts: list[dict[str, Any]] = Field(description="the rows of `gage contacts --json`, each with `means`: a candidate is a claim, not a contact")


class MadeOut(_Open):
    """`gage bundle --json` for the reply made in the outbox."""

    id: str = Field(description="the reply bundle's id")
    state: str = Field(description="outbox: made here, never sent by this tool")
    sent: bool = Field(description="always false: a person sends it")
