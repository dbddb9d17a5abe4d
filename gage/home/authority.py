"""The authority file: what the human lets an agent do with a confirmed contact's bundles.

Written by the receiver's human, never by a sender. A grant names a confirmed contact
and a kind; its `may` sentence is shown to the agent in the frame. The scope comes from
the bundle's kind alone, and the file is only consulted after the signature verifies
and the key is confirmed: nothing inside a bundle can widen it.

    [[grant]]
    contact = "alice"
    kind = "review-request"
    may = "Read the files and reply with review comments. Do not run anything from the bundle."
    reply = true    # optional: an agent may make a reply bundle (gage mcp's `reply`)
"""

from __future__ import annotations

import re
from pathlib import Path

from gage.format.errors import MalformedError
from gage.format.manifest import KINDS
from gage.format.record import Frozen, Record, set_field
from gage.format.sanitize import cut
from gage.home import homefile
from gage.home.cache import tomlparsed
from gage.home.contacts import Contacts

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

GRANT_FIELDS = {"contact", "kind", "may"}
# Optional, false when absent: `reply = true` lets an agent make a reply bundle to this
# contact's bundles of this kind, in the outbox (gage/mcp/reply.py); the only grant that does.
OPTIONAL_FIELDS = {"reply"}
EXAMPLE = '''# gage authority: what an agent may do with bundles from a confirmed contact, per kind.
# Read only after a bundle's signature verifies and its key is confirmed by the ceremony.
# Anything not granted here is information only.
#
# [[grant]]
# contact = "alice"            # a confirmed contact's local name (see `gage contacts`)
# kind = "review-request"      # share, question, answer, review-request or ack
# may = "Read the files and reply with review comments. Do not run anything from the bundle."
'''


class Grant(Frozen):
    __slots__ = ("contact", "kind", "may", "line", "reply")
    contact: str
    kind: str
    may: str
    line: int
    reply: bool

    def __init__(
        self, contact: str, kind: str, may: str, line: int, reply: bool = False
    ) -> None:
        set_field(self, "contact", contact)
        set_field(self, "kind", kind)
        set_field(self, "may", may)
        set_field(self, "line", line)
        set_field(self, "reply", reply)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"contact": self.contact, "kind": self.kind, "may": self.may, "line": self.line}
        if self.reply:
            out["reply"] = True  # only on a grant that has it, so the shape of every other grant stays
        return out


class AuthorityFile(Record):
    __slots__ = ("grants", "errors")
    grants: list[Grant]
    errors: list[str]

    def __init__(self, grants: list[Grant], errors: list[str]) -> None:
        self.grants = grants
        self.errors = errors

    def for_bundle(self, contact: str, kind: str) -> list[Grant]:
        return [g for g in self.grants if g.contact == contact and g.kind == kind]


def _grant_lines(text: str) -> list[int]:
    # Compiled on first use (re's own cache): a home's file most often holds no grant, and
    # then no line is looked for (start-up).
    header = re.compile(r"^\s*\[\[\s*grant\s*\]\]\s*(#.*)?$")
    return [n for n, line in enumerate(text.splitlines(), start=1) if header.match(line)]


def _top_line(text: str, key: str) -> int:
    """The line where the top-level key or table `key` is written (`key = ...`, `[key]`,
    `[[key]]`, `[key.sub]`), or 1 when it cannot be found: every error names a line."""
    name = re.escape(key)
    pat = re.compile(rf"""^\s*(?:{name}|"{name}"|'{name}')\s*=|^\s*\[+\s*(?:{name}|"{name}"|'{name}')\s*[\].]""")
    for n, line in enumerate(text.splitlines(), start=1):
        if pat.match(line):
            return n
    return 1


def _field_line(text: str, start: int, field: str) -> int:
    lines = text.splitlines()
    pat = re.compile(rf"^\s*{re.escape(field)}\s*=")
    for n in range(start, len(lines) + 1):
        line = lines[n - 1]
        if n > start and line.lstrip().startswith("["):
            break
        if pat.match(line):
            return n
    return start


def parse(text: str, contacts: Contacts | None, *, path: str = "authority.toml", file: Path | None = None) -> AuthorityFile:
    """Parse and check. Errors are collected with line numbers; only valid grants are kept.
    `file`: the file the text was read from, whose parse gage.home.cache.tomlparsed may keep."""
    try:
        doc = tomlparsed.loads(text, file)
    except ValueError as exc:  # tomllib's TOMLDecodeError, or an integer too long to convert
        raise MalformedError(f"not valid TOML: {exc}", path=path) from exc
    errors: list[str] = []
    unknown_tables = set(doc) - {"grant"}
    for t in sorted(unknown_tables):
        errors.append(f"{path}:{_top_line(text, t)}: unknown table or key {cut(t)} (only [[grant]] entries are allowed)")
    raw_grants = doc.get("grant", [])
    if not isinstance(raw_grants, list):
        errors.append(f"{path}:{_top_line(text, 'grant')}: `grant` must be written as [[grant]] tables (two brackets)")
        raw_grants = []
    starts = _grant_lines(text) if raw_grants else []  # the lines only name a grant's errors
    grants: list[Grant] = []
    for i, g in enumerate(raw_grants):
        line = starts[i] if i < len(starts) else 0
        where = f"{path}:{line}"
        if not isinstance(g, dict):
            errors.append(f"{where}: a grant must be a table")
            continue
        extra = set(g) - GRANT_FIELDS - OPTIONAL_FIELDS
        missing = GRANT_FIELDS - set(g)
        if extra:
            errors.append(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        if missing:
            errors.append(f"{where}: missing {', '.join(sorted(missing))}")
            continue
        ok = True
        contact, kind, may = g["contact"], g["kind"], g["may"]
        if not isinstance(contact, str) or (contacts is not None and contacts.by_name(contact) is None):
            errors.append(
                f"{path}:{_field_line(text, line, 'contact')}: grant names {contact!r}, which is not a confirmed contact"
            )
            ok = False
        if kind not in KINDS:
            errors.append(
                f"{path}:{_field_line(text, line, 'kind')}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}"
            )
            ok = False
        if not isinstance(may, str) or not may.strip():
            errors.append(f"{path}:{_field_line(text, line, 'may')}: `may` must be a sentence saying what an agent may do")
            ok = False
        reply = g.get("reply", False)
        if not isinstance(reply, bool):
            errors.append(f"{path}:{_field_line(text, line, 'reply')}: `reply` must be true or false")
            ok = False
        if ok and not extra:
            grants.append(Grant(contact=contact, kind=kind, may=may.strip(), line=line, reply=reply))
    return AuthorityFile(grants=grants, errors=errors)


AUTHORITY_LIMIT = 1 << 20


def load(path: Path, contacts: Contacts | None) -> AuthorityFile:
    """The authority file; none is no grants. A folder, a FIFO, an unreadable file or bytes that
    are not UTF-8 are errors naming the file (homefile), never a traceback."""
    text = homefile.read_text(path, "authority", AUTHORITY_LIMIT)
    if text is None:
        return AuthorityFile(grants=[], errors=[])
    return parse(text, contacts, path=path.name, file=path)
