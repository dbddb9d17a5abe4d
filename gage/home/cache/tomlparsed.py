"""The home's trust files parsed once per content: what tomllib gave for exactly this text, kept in
the row index's file.

contacts.toml and authority.toml are read by nearly every command, and importing `tomllib`
(it compiles its regular expressions and imports `typing` at import) was 4 to 6 ms of a small
command's start-up; a large contacts file costs far more to parse than to read as JSON. So the
parsed document is kept in the row index's file (`cache/rows.sqlite`, table `parsed`, one row a
file; gage.home.cache.rowfile), beside the rows whose trust generation hashes these same files:
keyed on the SHA-256 of the whole text it was parsed from (the generation is a SHA-256 of the
same bytes), and used only when the text read now has that hash: it can only ever give what
tomllib gave for these characters. A document holding a value JSON cannot carry exactly (a TOML
date or time) is never kept. A file that does not parse is never kept either, so its error is
tomllib's own, every time.

A cache, like the others: each parse is sealed under the home's cache key (gage.home.cache.sealkey)
with its file's name, text hash and parser, so one damaged in place, or planted by whoever cannot
read that key (crafted, or copied from another home), is parsed again instead of believed, and
anything wrong with the file (missing, damaged, foreign, another layout) costs only the parse. It
is written only into a `cache` folder that already exists beside the file (a home's), never made:
a TOML file outside a home is parsed every time. The memo files of earlier versions
(`cache/<name>.parsed.json`) are never read, and removed when a parse is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing itself is a start-up cost this module exists to save
if TYPE_CHECKING:
    from typing import Any

# The parser's version is part of the key: a newer tomllib may read the same text differently.
PARSER = f"tomllib/{sys.version_info[0]}.{sys.version_info[1]}"


def _plain(value: object) -> bool:
    """Whether JSON gives `value` back exactly (TOML's dates and times it does not)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, str | int | float | bool)


def sealed_text(name: str, text_sha: str, parser: str, doc: str) -> bytes:
    """What a kept parse's seal is taken over."""
    return f"{name}\0{text_sha}\0{parser}\0{doc}".encode("utf-8", "surrogatepass")


def _home_of(path: Path | None) -> Path | None:
    """The home `path` sits in (its folder), when that folder has a real `cache` folder; None for no
    file, or not a home (nothing is kept)."""
    if path is None:
        return None
    try:
        if not stat.S_ISDIR(os.lstat(path.parent / "cache").st_mode):
            return None
    except OSError:
        return None
    return path.parent


def _kept(home: Path, name: str, text_sha: str, key: bytes) -> dict[str, Any] | None:
    """The parse kept for the file `name` of text `text_sha`, if one is and its seal holds."""
    import sqlite3

    from gage.home.cache import rowfile, sealkey

    try:
        db = rowfile.read_rows(home / "cache" / rowfile.FILE_NAME)
    except (sqlite3.Error, OSError):
        return None
    if db is None:
        return None
    try:
        got = db.execute("SELECT text_sha, parser, doc, seal FROM parsed WHERE name = ?", (name,)).fetchone()
    except sqlite3.Error:  # not a database, another layout, busy past the timeout: a miss
        return None
    finally:
        db.close()
    if got is None or got[0] != text_sha or got[1] != PARSER or type(got[2]) is not str:
        return None
    if not sealkey.holds(key, got[3], sealed_text(name, text_sha, PARSER, got[2])):
        return None
    try:
        doc = json.loads(got[2])
    except (ValueError, RecursionError):  # RecursionError: a document nested thousands deep
        return None
    return doc if isinstance(doc, dict) else None


def _keep(home: Path, row: tuple[str, str, str, str, bytes]) -> None:
    import sqlite3

    from gage.home.cache import rowfile

    with contextlib.suppress(sqlite3.Error, OSError):  # a busy, read-only or unusable cache: parsed again next time
        db = rowfile.open_rows(home / "cache" / rowfile.FILE_NAME)
        try:
            db.execute("PRAGMA busy_timeout = 200")  # a listing writing its rows: not worth waiting 5 s for
            db.execute("INSERT OR REPLACE INTO parsed (name, text_sha, parser, doc, seal) VALUES (?, ?, ?, ?, ?)", row)
        finally:
            db.close()
    with contextlib.suppress(OSError):
        os.unlink(home / "cache" / f"{row[0]}.parsed.json")  # an earlier version's memo: never read again


def loads(text: str, path: Path | None) -> dict[str, Any]:
    """tomllib.loads(text), remembered for the file at `path` (whose text it is; None: a text
    from no file, parsed and not kept).
    Raises tomllib.TOMLDecodeError (a ValueError) as tomllib does."""
    home = _home_of(path)
    if home is None or path is None:
        import tomllib

        return tomllib.loads(text)
    from gage.format import sha256
    from gage.home.cache import sealkey

    key = sealkey.home_key(home)
    text_sha = sha256.hexdigest(text.encode("utf-8", "surrogatepass"))
    doc = _kept(home, path.name, text_sha, key)
    if doc is not None:
        return doc
    import tomllib

    parsed: dict[str, Any] = tomllib.loads(text)
    if _plain(parsed):
        kept = json.dumps(parsed, ensure_ascii=True, separators=(",", ":"))
        _keep(home, (path.name, text_sha, PARSER, kept, sealkey.seal(key, sealed_text(path.name, text_sha, PARSER, kept))))
    return parsed
