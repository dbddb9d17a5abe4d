"""Everything gage/mcp takes from the rest of gage, in this one module.

The tools must answer from the core, as the CLI does, while the core is being cut into
layer packages. So every name gage/mcp uses from outside itself is imported
here, and each answer that must agree with a command (the rows of `gage list --json`, the
verdict, the frame of `gage read`, `gage read --json`, `gage contacts --json`, `gage bundle
--json`) is one function. Moving a module, or swapping in the core inbox read model, changes
this file only; answers.py, reply.py and server.py import nothing of gage but this.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gage import __version__
from gage.bundle import PAYLOAD, safeopen
from gage.format import sanitize
from gage.format.errors import (
    GageError,
    GageIOError,
    MalformedError,
    NotFoundError,
    RefusedError,
    UsageError,
)
from gage.format.manifest_files import check_path, fold_path
from gage.format.sanitize import (
    TEXT_SAMPLE,
    looks_binary,
    payload_lines,
    quoted,
    visible,
)
from gage.format.vocab import Kind, Place
from gage.home import sendqueue
from gage.home.authority import AuthorityFile
from gage.home.authority import load as load_authority_file
from gage.home.contacts import Contacts
from gage.home.layout import ALL_STATES, Home
from gage.home.listing import resolve
from gage.inbox import opening, send
from gage.inbox.listed import listed_rows
from gage.inbox.made_json import made
from gage.inbox.read_json import read_json as inbox_read_json
from gage.inbox.rowshape import rows_text
from gage.trust import frame
from gage.trust import verdict as verdict_mod
from gage.trust.verdict import Verdict

__all__ = [
    "ALL_STATES",
    "LINE_PREFIX",
    "TEXT_SAMPLE",
    "GageError",
    "GageIOError",
    "Home",
    "Kind",
    "MalformedError",
    "NotFoundError",
    "Place",
    "RefusedError",
    "UsageError",
    "Verdict",
    "__version__",
    "authority_file",
    "bundle_rows",
    "first_rows",
    "rows_text",
    "check_path",
    "contact_rows",
    "fold_path",
    "frame_lines",
    "looks_binary",
    "make_bundle",
    "new_token",
    "open_home",
    "open_payload_file",
    "os_error_text",
    "payload_lines",
    "payload_status",
    "quoted",
    "read_json",
    "verdict_of",
    "visible",
]

LINE_PREFIX = frame.LINE_PREFIX


# The server opens its home once, not once per call (opening is most of a small call's time): each call reconciles it again
# (which costs a few stats while nothing changed, gage/home/cache/reconcilemark.py) and reopens it only
# when its identity file is not the one read (a key retired or upgraded meanwhile).
_opened: dict[str, tuple[tuple[int, int, int, int], Home]] = {}


def open_home(root: Path) -> Home:
    """The home as every command opens it (finishing what a killed process left half done)."""
    where = os.path.abspath(root)
    try:
        st = os.stat(os.path.join(where, "identity.json"))
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        _opened.pop(where, None)
        return opening.open_home(root)
    kept = _opened.get(where)
    if kept is not None and kept[0] == stamp:
        opening.recover(kept[1])
        return kept[1]
    home = opening.open_home(root)
    _opened[where] = (stamp, home)
    return home


def first_rows(home: Home, states: tuple[Place, ...], limit: int) -> tuple[list[dict[str, Any]], int]:
    """`bundle_rows` cut to its first `limit`, and how many there are in all: only the rows given
    are made into JSON (200 of 10,000, not all of them)."""
    rows = listed_rows(home, states)
    return sendqueue.with_delivery(home, [r.to_json() for r in rows[:limit]]), len(rows)


def bundle_rows(home: Home, states: tuple[Place, ...]) -> list[dict[str, Any]]:
    """The rows `gage list --json` prints: the core inbox read model's (gage.inbox.rows), each
    from the row index where nothing it was computed from changed."""
    return sendqueue.with_delivery(home, [r.to_json() for r in listed_rows(home, states)])


def lean_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `list_bundles` row: `gage list --json`'s, the sender named by its fingerprint without its key text
    (and a retirement's replacement by its fingerprint only). A hybrid key is 3,984 characters: 200 rows
    would put 800 KB of keys in an agent's context. `verdict` still gives the whole key."""
    sender = row.get("sender")
    if not isinstance(sender, dict):
        return row
    lean = {k: v for k, v in sender.items() if k != "key"}
    retired = lean.get("retired")
    if isinstance(retired, dict):
        lean["retired"] = {k: v for k, v in retired.items() if k != "replacement"}
    return {**row, "sender": lean}


def verdict_of(home: Home, ref: str) -> Verdict:
    """The verdict `gage verdict` and `gage read` compute for an id or unique prefix, now."""
    return verdict_mod.compute(home, resolve(home, ref))


# How an agent asks for a pending bundle's payload: the tools' argument, not the command line's flag.
ASK_PENDING = "the same tool with pending=true"


def frame_lines(v: Verdict, *, show_pending: bool, token: str | None = None) -> Iterator[str]:
    """What `gage read` prints: the frame, then the fenced payload (in the agent's terms)."""
    return frame.render(v, show_pending=show_pending, token=token, ask=ASK_PENDING)


def new_token() -> str:
    return frame.new_token()


def payload_status(v: Verdict, *, show_pending: bool) -> tuple[bool, str]:
    """Whether `gage read` shows the payload, and why not."""
    return frame.payload_status(v, show_pending=show_pending, ask=ASK_PENDING)


def open_payload_file(v: Verdict, rel: str) -> tuple[int, os.stat_result]:
    """A listed payload file opened as `gage read` opens it: beneath the bundle, no link followed."""
    return safeopen.open_regular_beneath(v.path, f"{PAYLOAD}/{rel}")


def read_json(v: Verdict, *, show_pending: bool) -> dict[str, Any]:
    """What `gage read --json` prints (gage.inbox.read_json, below both interfaces)."""
    return inbox_read_json(v, show_pending=show_pending, ask=ASK_PENDING)


def contact_rows(home: Home) -> list[dict[str, Any]]:
    """The rows `gage contacts --json` prints: confirmed contacts by name, then candidates as seen."""
    c = Contacts.load(home.contacts_path)
    rows = [x.to_json() for x in sorted(c.confirmed.values(), key=lambda x: x.name.casefold())]
    rows += [x.to_json() for x in sorted(c.candidates.values(), key=lambda x: x.seen_at)]
    return rows


def authority_file(home: Home) -> AuthorityFile:
    return load_authority_file(home.authority_path, Contacts.load(home.contacts_path))


def make_bundle(home: Home, paths: list[Path], *, kind: Kind, to: str, parent: str, subject: str | None) -> dict[str, Any]:
    """`gage bundle PATHS --kind KIND --to TO --parent PARENT`, and what its `--json` prints; never copied anywhere."""
    manifest, dest = send.create(home, paths, kind=kind, to=[to], parent=parent, subject=subject)
    return made(home, manifest, dest, None)


def os_error_text(exc: OSError) -> str:
    """An OS error as the CLI prints it: the file shown safely, then what failed."""
    return sanitize.os_error_text(exc)
