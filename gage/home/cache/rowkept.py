"""A kept row of the row index (gage.home.cache.rowindex) and the two checks it passes before use.

- Fresh: the bundle folder is still the tree the row was computed from. The check cache's tree
  digest covers the stat values of the folder, its manifest, signature, `payload` and every
  entry the manifest lists (gage.home.cache.checks says why that is enough); the row index keeps
  those values themselves, taken when the row was stored and only if they give the digest the
  check cache remembered, and a listing compares them with one lstat per entry. Comparing the
  numbers proves what comparing their hash proves, without hashing 10,000 trees on every listing.
- Whole: what is read back has a computed row's shape (`kept_of`; `ROW_TYPES`, `SENDER_TYPES`),
  so a row damaged in place or planted costs its recomputation, never an error. Its seal
  (`row_seal`, a keyed hash under the home's cache key, checked by the row index as it reads)
  catches a well-formed value written in place, and a row planted by whoever cannot read that key.
"""

from __future__ import annotations

import os
import struct as _struct
from pathlib import Path

from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.bundle.treestat import tree_digest
from gage.format.record import Frozen, set_field
from gage.home.cache import sealkey

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

_STR, _OPT = (str,), (str, type(None))
# The shape of a kept row (gage.inbox.listed.ListedRow's fields, in its order) and of its sender
# (gage.trust.sender.Sender.to_json): what a row read back must be before it is used.
ROW_TYPES: dict[str, tuple[type, ...]] = {
    "id": _STR, "state": _STR, "level": _STR, "kind": _OPT, "subject": _OPT, "created": _OPT, "arrived": _OPT,
    "size": (int, type(None)), "via": _OPT, "accepted_how": _OPT, "sender_label": _STR, "sender": (dict,),
}
SENDER_TYPES: dict[str, tuple[type, ...]] = {
    "key": _OPT, "fingerprint": _OPT, "name": _OPT, "status": _STR, "claimed_name": _OPT,
    "signature_ok": (bool,), "is_me": (bool,), "scheme": _OPT,
}


class Kept(Frozen):
    """A row with what it was computed from. Given to `save` with the check cache's tree digest;
    read back with `stats` too: the stat values that digest was taken over, in `stats_at`'s
    order, so a listing proves a row fresh by comparing numbers, not by hashing them again."""

    __slots__ = ("digest", "parent", "entries", "warnings", "row", "stats")
    digest: str
    parent: str | None
    entries: list[str]  # the payload's folders and files, as the manifest lists them
    warnings: list[Any]  # the check's warnings (checks.dump_problems)
    row: dict[str, Any]
    stats: bytes | None  # `packed(stats_at(...))`

    def __init__(
        self,
        digest: str,
        parent: str | None,
        entries: list[str],
        warnings: list[Any],
        row: dict[str, Any],
        stats: bytes | None = None,
    ) -> None:
        set_field(self, "digest", digest)
        set_field(self, "parent", parent)
        set_field(self, "entries", entries)
        set_field(self, "warnings", warnings)
        set_field(self, "row", row)
        set_field(self, "stats", stats)

def digest_now(root: Path, entries: list[str]) -> str | None:
    """The folder's tree digest now (as the check cache takes it), or None if it cannot be taken."""
    stats = stats_at(None, os.fspath(root), entries)
    return None if stats is None else digest_of(entries, stats)


def stats_at(dir_fd: int | None, name: str, entries: list[str]) -> list[int] | None:
    """The stat values the tree digest is taken over (mode, size, mtime_ns, ctime_ns, inode,
    device of the folder, the manifest, the signature, `payload` and each listed entry, in that
    order), or None if one cannot be taken. `name` is opened in the open folder `dir_fd` (a
    listing opens each state's folder once) with O_NOFOLLOW, and every entry is taken relative
    to it, so a link put in the folder's place is a miss."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        stat_ = os.stat
        st = os.fstat(fd)
        out = [st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
        add = out.extend
        for rel in _TOP:
            st = stat_(rel, dir_fd=fd, follow_symlinks=False)
            add((st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev))
        for rel in entries:
            st = stat_(_IN_PAYLOAD + rel, dir_fd=fd, follow_symlinks=False)
            add((st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev))
        return out
    except (OSError, ValueError, TypeError):  # ValueError, TypeError: an entry no path can be
        return None
    finally:
        os.close(fd)


def digest_of(entries: list[str], stats: list[int]) -> str:
    """The check cache's tree digest (gage.bundle.treestat.tree_digest) of `stats_at`'s values."""
    names = [".", *_TOP, *(_IN_PAYLOAD + rel for rel in entries)]
    return tree_digest([(n, *stats[6 * i : 6 * i + 6]) for i, n in enumerate(names)])  # type: ignore[misc]


def fresh_at(dir_fd: int | None, name: str, k: Kept) -> bool:
    """Whether the folder is still the tree a kept row was computed from: every stat value the
    check cache's digest covers, compared exactly (what the digest proves, without hashing)."""
    if k.stats is None:
        return False
    now = stats_at(dir_fd, name, k.entries)
    return now is not None and packed(now) == k.stats


def packed(stats: list[int]) -> bytes | None:
    """Stat values as stored: 64-bit integers, so a listing compares bytes (no JSON of 90,000 numbers to parse)."""
    try:
        return _struct.pack(f"<{len(stats)}q", *stats)
    except _struct.error:  # a value past 64 bits: never kept
        return None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_TOP = (MANIFEST, SIGNATURE, PAYLOAD)
_IN_PAYLOAD = PAYLOAD + "/"


def _row_text(generation: str, state: str, bundle_id: str, parent: str | None, data: str, stats: bytes) -> bytes:
    return f"{generation}\0{state}\0{bundle_id}\0{parent or ''}\0{data}\0".encode("utf-8", "surrogatepass") + stats


def row_seal(key: bytes, generation: str, state: str, bundle_id: str, parent: str | None, data: str, stats: bytes) -> bytes:
    """A row's seal under the home's cache key (gage.home.cache.sealkey): a keyed hash of everything
    read back from it but its arrival (which the interface reads alone, and corrects from the
    journal's tail), and of the trust generation it was computed under, so a row this home sealed
    under other contacts is not taken for one of these. Whoever cannot read the key cannot seal a
    row (threat-model.md, "A cache damaged in place or planted")."""
    return sealkey.seal(key, _row_text(generation, state, bundle_id, parent, data, stats))


def row_holds(key: bytes, seal: Any, generation: str, state: str, bundle_id: str, parent: str | None, data: str, stats: bytes) -> bool:
    """Whether `seal` is the row's seal under `key`."""
    return sealkey.holds(key, seal, _row_text(generation, state, bundle_id, parent, data, stats))


def kept_of(state: str, bundle_id: str, column_parent: str | None, stats: bytes, got: Any) -> Kept | None:
    """A row as read back (its JSON already decoded), if it has a computed row's shape; else None.
    The one check of what the file gives: every reader of rows goes through it. Each row's and
    sender's fields are compared as one tuple of names and one of types (a listing reads 10,000)."""
    if type(got) is not list or len(got) != 5:
        return None
    digest, parent, entries, warnings, row = got
    if (
        type(digest) is not str
        or parent != column_parent
        or type(entries) is not list
        or type(warnings) is not list
        or type(row) is not dict
        or len(stats) != 8 * 6 * (4 + len(entries))
        or tuple(row) != _ROW_NAMES
        or tuple(map(type, row.values())) not in _ROW_SHAPES
        or row["id"] != bundle_id
        or row["state"] != state
    ):
        return None
    for e in entries:
        if type(e) is not str:
            return None
    sender = row["sender"]
    names = tuple(sender)
    if names == _SENDER_NAMES:
        if tuple(map(type, sender.values())) not in _SENDER_SHAPES:
            return None
    elif names != _SENDER_RETIRED_NAMES or tuple(map(type, sender.values())) not in _SENDER_RETIRED_SHAPES:
        return None
    if warnings:
        from gage.home.cache.checks import problems_of

        try:
            problems_of(warnings)
        except (ValueError, TypeError):
            return None
    return Kept(digest, parent, entries, warnings, row, stats)


def _shapes(types: dict[str, tuple[type, ...]]) -> frozenset[tuple[type, ...]]:
    """Every tuple of value types a record of these fields may have."""
    shapes: list[tuple[type, ...]] = [()]
    for allowed in types.values():
        shapes = [(*t, a) for t in shapes for a in allowed]
    return frozenset(shapes)


_ROW_NAMES = tuple(ROW_TYPES)
_ROW_SHAPES = _shapes(ROW_TYPES)
_SENDER_NAMES = tuple(SENDER_TYPES)
_SENDER_SHAPES = _shapes(SENDER_TYPES)
_SENDER_RETIRED_NAMES = (*SENDER_TYPES, "retired")
_SENDER_RETIRED_SHAPES = _shapes({**SENDER_TYPES, "retired": (dict,)})
