"""The files list of a manifest: payload paths, entries, and the rules across them.

Split from `manifest` (which re-exports these names): a manifest may list 10,000 files, so
the list is judged in whole-list passes in C when it is plainly valid (`plain_files`), and
entry by entry, with every rule worded, when it is not (`parse_files`). The two agree on every
input (tests/test_fast_paths_agree.py); see spec/bundle.md for the rules.
"""

from __future__ import annotations

import functools
import operator
import re
import unicodedata
from collections import namedtuple
from itertools import repeat

from gage.format.errors import MalformedError
from gage.format.sanitize import UNICODE_VERSION, first_not_plain

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any, NamedTuple

MAX_FILES = 10_000
MAX_PATH = 1024  # bytes of UTF-8: with a home's own prefix, well under Linux's PATH_MAX of 4096
MAX_COMPONENT = 255  # bytes of UTF-8 (NAME_MAX)
MAX_SIZE = (1 << 53) - 1
FILE_FIELDS = {"path", "size", "sha256"}

HEX64 = re.compile(r"[0-9a-f]{64}\Z")
# A path of printable ASCII that `check_path` accepts: components of at most MAX_COMPONENT
# characters, none empty, none ending in a space or a dot (so never "." or ".."), and no
# "/" at either end, no backslash, no colon. Anything else takes the rule-by-rule way.
_COMPONENT = rf"[ -.0-9;-\[\]-~]{{0,{MAX_COMPONENT - 1}}}[!-\-0-9;-\[\]-~]"


# Compiled on first use, not at import: `gage verdict` and `gage list` read manifests through
# the check cache and never ask, and each pattern is a fraction of a millisecond at start-up.
@functools.cache
def _plain_ascii_path() -> re.Pattern[str]:
    return re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")


@functools.cache
def _plain_ascii_paths_pattern() -> re.Pattern[str]:
    return re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*(?:\n{_COMPONENT}(?:/{_COMPONENT})*)*")  # one a line


if TYPE_CHECKING:

    class _Fields(NamedTuple):
        path: str
        size: int
        sha256: str

else:  # the same fields without typing.NamedTuple (tests/test_manifest_files_entry.py holds them equal)
    _Fields = namedtuple("FileEntry", ("path", "size", "sha256"))


class FileEntry(_Fields):
    """One listed file. A named tuple, not a dataclass: a manifest may list 10,000, and these
    are made in one pass in C (`plain_files`) rather than an `__init__` call each."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


def fail(message: str, field: str) -> MalformedError:
    return MalformedError(message, path="manifest.json", field=field)


def exact_fields(obj: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise fail("must be an object", where)
    if obj.keys() == allowed:
        return obj  # the usual case, without building two sets (10,000 file entries)
    missing = allowed - set(obj)
    if missing:
        raise fail(f"missing {', '.join(sorted(missing))}", where)
    extra = set(obj) - allowed
    if extra:
        raise fail(f"unknown field(s) {', '.join(sorted(repr(e) for e in extra))}", where)
    return obj


def check_path(path: Any, where: str) -> str:
    """A payload path that cannot leave the bundle on any common file system.

    Characters are judged by Unicode 14.0 (`sanitize.is_plain`), never by the running
    Python's tables, so a path is valid or not the same way on every Python. Once every
    character is assigned in 14.0, NFC and case folding give the same result on every later
    version (Unicode's normalization and case-folding stability policies).
    """
    if isinstance(path, str) and len(path) <= MAX_PATH and _plain_ascii_path().fullmatch(path):
        return path  # the common case, passing every rule below (a manifest may list 10,000)
    if not isinstance(path, str) or not path:
        raise fail("must be a non-empty string", where)
    if len(path) > MAX_PATH:
        raise fail(f"longer than {MAX_PATH} bytes", where)  # every character is at least one byte
    if path.startswith("/") or path.endswith("/"):
        raise fail(f"path {path!r} must be relative and name a file", where)
    if "\\" in path:
        raise fail(f"path {path!r} contains a backslash", where)
    ch = first_not_plain(path)
    if ch is not None:
        raise fail(
            f"path {path!r} contains U+{ord(ch):04X}: a control or format character, or one that is "
            f"private-use or unassigned in Unicode {UNICODE_VERSION[:-2]}",
            where,
        )
    if len(path.encode("utf-8")) > MAX_PATH:
        raise fail(f"path {path!r} is longer than {MAX_PATH} bytes in UTF-8", where)
    if unicodedata.normalize("NFC", path) != path:
        raise fail(f"path {path!r} is not in Unicode NFC form", where)
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise fail(f"path {path!r} has an empty, '.' or '..' component", where)
        if len(part.encode("utf-8")) > MAX_COMPONENT:
            raise fail(f"path {path!r} has a component over {MAX_COMPONENT} bytes", where)
        if part.endswith((" ", ".")) or ":" in part:
            raise fail(f"path {path!r} has a component that is unsafe on some file systems", where)
    return path


def fold_path(path: str) -> str:
    """The key two paths collide on: Unicode canonical caseless matching, NFD(casefold(NFD(p))).

    Plain `casefold` misses pairs such as "\u017f\u0301" (long s, combining acute) and
    "\u015b" (s with acute): both NFC, different when case-folded, yet the same name on a
    file system that folds case and normalisation (ext4 casefold, APFS).
    """
    if path.isascii():
        return path.lower()  # the same for ASCII: NFD changes nothing, and casefold is lower
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", path).casefold())


_PATHS_OF = operator.itemgetter("path")
_SIZES_OF = operator.itemgetter("size")
_DIGESTS_OF = operator.itemgetter("sha256")
_FIRST = operator.itemgetter(0)
# Each byte of joined paths as its class: "a" a character a component may end with, "." one
# it may hold but not end with (a space, a dot), "/" a separator ("/", and the newline that
# joins paths), "!" anything a plain path never holds (what `_COMPONENT` excludes).
_END_ANY = {c for c in range(0x21, 0x7F) if chr(c) not in "./:\\"}
_CLASS = bytes(
    ord("a") if c in _END_ANY else ord(".") if c in b" ." else ord("/") if c in b"/\n" else ord("!") for c in range(256)
)


def _plain_ascii_paths(joined: str, longest: int) -> bool:
    """`_plain_ascii_paths_pattern().fullmatch(joined)` (paths one a line), most often without the
    regex: when every path is at most MAX_COMPONENT long (so is every component), the rule is
    plain characters, no empty component and none ending in a space or a dot, which the
    bytes' classes tell in three searches at memory speed. Anything else, the regex decides."""
    if longest <= MAX_COMPONENT and joined and joined.isascii():
        classes = joined.encode("ascii").translate(_CLASS)
        if (
            b"!" not in classes
            and b"//" not in classes  # an empty component (or path)
            and b"./" not in classes  # a component ending in a space or a dot
            and classes[0] != ord("/")
            and classes[-1] == ord("a")
        ):
            return True
    return _plain_ascii_paths_pattern().fullmatch(joined) is not None


def plain_files(value: list[Any]) -> tuple[FileEntry, ...] | None:
    """The entries of a list that passes every rule of `parse_files` the common way (plain ASCII
    paths, nothing repeated or nested), judged in whole-list passes rather than entry by
    entry; None for anything else, which `parse_files` then judges (and words) one by one."""
    if not value or set(map(type, value)) != {dict} or set(map(len, value)) != {3}:
        return None
    try:  # three keys, all of them present: exactly FILE_FIELDS
        paths = list(map(_PATHS_OF, value))
        sizes = list(map(_SIZES_OF, value))
        digests = list(map(_DIGESTS_OF, value))
    except KeyError:
        return None
    if set(map(type, paths)) != {str} or set(map(type, sizes)) != {int} or set(map(type, digests)) != {str}:
        return None  # `type`, not isinstance: a bool is no size
    longest = max(map(len, paths))
    if min(sizes) < 0 or max(sizes) > MAX_SIZE or longest > MAX_PATH or set(map(len, digests)) != {64}:
        return None
    joined = "\n".join(paths)
    # A path holding a newline would pass as two: the count of newlines says it does not.
    if joined.count("\n") != len(paths) - 1 or not _plain_ascii_paths(joined, longest):
        return None
    hexes = "\n".join(digests)  # each 64 long, so all hex digits if only `len - 1` newlines
    if hexes.count("\n") != len(digests) - 1 or not (
        hexes.isascii() and not hexes.encode("ascii").translate(None, b"0123456789abcdef\n")
    ):
        return None
    folded = joined.lower()  # `fold_path` of a plain ASCII path
    keys = folded.split("\n")
    names = set(keys)
    if len(names) != len(keys):
        return None  # two paths the same but for case
    folders: set[str] = set()
    for folder in set(map(_FIRST, map(str.rpartition, keys, repeat("/")))):
        while folder and folder not in folders:  # every folder on the way (a few hundred, not 10,000)
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    if not names.isdisjoint(folders):
        return None  # a path below another listed file
    return tuple(map(tuple.__new__, repeat(FileEntry), zip(paths, sizes, digests, strict=True)))


def parse_files(value: Any) -> tuple[FileEntry, ...]:
    if not isinstance(value, list):
        raise fail("must be a list", "files")
    if len(value) > MAX_FILES:
        raise fail(f"more than {MAX_FILES} files", "files")
    quick = plain_files(value)
    if quick is not None:
        return quick
    entries: list[FileEntry] = []
    folded: dict[str, str] = {}
    order: list[tuple[int, str, str]] = []
    plain = _plain_ascii_path().fullmatch
    for i, item in enumerate(value):
        # The field names (`files[i].size`) are only made for an error: 10,000 entries.
        obj = item if type(item) is dict and item.keys() == FILE_FIELDS else exact_fields(item, FILE_FIELDS, f"files[{i}]")
        path = obj["path"]
        if not (type(path) is str and len(path) <= MAX_PATH and plain(path)):
            path = check_path(path, f"files[{i}].path")
        size = obj["size"]
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or size > MAX_SIZE:
            raise fail("must be a whole number of bytes", f"files[{i}].size")
        digest = obj["sha256"]
        if not isinstance(digest, str) or not HEX64.match(digest):
            raise fail("must be 64 lower-case hex digits", f"files[{i}].sha256")
        key = fold_path(path)
        if key in folded:
            raise fail(f"path {path!r} repeats {folded[key]!r} (paths must differ in more than case)", f"files[{i}].path")
        folded[key] = path
        order.append((i, key, path))
        entries.append(FileEntry(path=path, size=size, sha256=digest))
    names = set(folded)
    # In list order, so the error names the first entry (by index) whose path lies below
    # another listed path: `files[i].path`, as a collision names its later entry.
    for i, key, path in order:
        # Slices at each "/" rather than re-joining the components: a 1 MiB manifest of
        # deep paths would otherwise cost seconds to parse.
        pos = key.find("/")
        while pos != -1:
            if key[:pos] in names:
                raise fail(f"path {path!r} lies inside another listed file {folded[key[:pos]]!r}", f"files[{i}].path")
            pos = key.find("/", pos + 1)
    return tuple(entries)
