"""The home's TOML files parsed once per content: what tomllib gave for exactly this text, kept.

contacts.toml and authority.toml are read by nearly every command, and importing `tomllib`
(it compiles its regular expressions and imports `typing` at import) was 4 to 6 ms of a small
command's start-up; a large contacts file costs far more to parse than to read as
JSON. So the parsed document is kept beside the home's other caches, in
`cache/<file name>.parsed.json`, with the whole text it was parsed from, and used only when the
text read now is exactly that text (compared in full, not by a hash or a time): it can only
ever give what tomllib gave for these characters. A document holding a value JSON cannot carry
exactly (a TOML date or time) is never kept. A file that does not parse is never kept either,
so its error is tomllib's own, every time.

A cache, like the others (gage.home.homefile.read_derived): opened through no link, bounded,
and anything wrong with it (missing, damaged, foreign, another parser's) costs only the parse.
It is written only into a `cache` folder that already exists beside the file (a home's), never
made: a TOML file outside a home is parsed every time.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from gage.home import homefile

TYPE_CHECKING = False  # typing itself is a start-up cost this module exists to save
if TYPE_CHECKING:
    from typing import Any

FORMAT = "gage-tomlmemo-2"  # 2: sealed
# The parser's version is part of the key: a newer tomllib may read the same text differently.
PARSER = f"tomllib/{sys.version_info[0]}.{sys.version_info[1]}"


def _plain(value: object) -> bool:
    """Whether JSON gives `value` back exactly (TOML's dates and times it does not)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, str | int | float | bool)


_MEMO_KEYS = {"format", "parser", "text", "doc", "seal"}


def _seal(text: str, doc: dict[str, Any]) -> int:
    """What binds a memo's document to its text: a CRC-32 of both, so a document damaged in place
    (emptied, a field added or of another type) is parsed again instead of believed. A checksum
    against damage, not a signature: whoever can write the home can edit the file itself."""
    import zlib

    return zlib.crc32(json.dumps([text, doc], ensure_ascii=True, separators=(",", ":")).encode("ascii"))


def _memo_at(path: Path | None) -> tuple[Path, str] | None:
    """Where the memo of `path` lives: its folder, and the memo relative to it; None for no
    file, or when that folder has no real `cache` folder (not a home: nothing is written)."""
    if path is None:
        return None
    try:
        if not stat.S_ISDIR(os.lstat(path.parent / "cache").st_mode):
            return None
    except OSError:
        return None
    return path.parent, f"cache/{path.name}.parsed.json"


def loads(text: str, path: Path | None, limit: int) -> dict[str, Any]:
    """tomllib.loads(text), remembered for the file at `path` (whose text it is; None: a
    text from no file, parsed and not kept); `limit` bounds the memo as it bounds the file (the
    memo holds the text and the document, so twice it).
    Raises tomllib.TOMLDecodeError (a ValueError) as tomllib does."""
    at = _memo_at(path)
    if at is not None:
        data = homefile.read_derived(*at, 2 * limit + 4096)
        if data is not None:
            try:
                memo = json.loads(data)
            except (ValueError, RecursionError):  # RecursionError: a file nested thousands deep
                memo = None
            if (
                isinstance(memo, dict)
                and memo.keys() == _MEMO_KEYS
                and memo["format"] == FORMAT
                and memo["parser"] == PARSER
                and memo["text"] == text
                and isinstance(memo["doc"], dict)
                and memo["seal"] == _seal(text, memo["doc"])
            ):
                doc: dict[str, Any] = memo["doc"]
                return doc
    import tomllib

    doc = tomllib.loads(text)
    if at is not None and _plain(doc):
        kept = {"format": FORMAT, "parser": PARSER, "text": text, "doc": doc, "seal": _seal(text, doc)}
        homefile.write_derived(*at, json.dumps(kept).encode("ascii"))
    return doc
