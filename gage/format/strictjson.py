"""Strict JSON for signed objects.

Python's json module accepts things two implementations would read differently:
duplicate keys (last one wins here, first one elsewhere), NaN and Infinity, lone
surrogates, a byte-order mark. A signed manifest must mean one thing to every
reader, so each of these is an error here, as is anything over the size cap.
"""

from __future__ import annotations

import functools
import json
import re
from itertools import chain

from gage.format.errors import MalformedError

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 32  # arrays and objects open at once: `[]` is 1 deep, `{"a":[1]}` 2; a scalar alone 0
MAX_INTEGER = (1 << 53) - 1  # every reader (JavaScript's doubles, serde_json, Go) holds it exactly
_MAX_DIGITS = len(str(MAX_INTEGER))  # 16


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise MalformedError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise MalformedError(f"{name} is not allowed")


def _integer(text: str) -> int:
    # "-0" is an integer to Python but a float (negative zero) to other parsers, serde_json
    # among them: a manifest must not be an integer to one reader and a float to another.
    if text == "-0":
        raise MalformedError("-0 is not allowed (other parsers read it as a float)")
    # Beyond 2^53 - 1 a JavaScript reader rounds and serde_json turns to a float; and how
    # many digits Python converts depends on PYTHONINTMAXSTRDIGITS. Refused by length first,
    # so no environment setting can change what is accepted.
    if len(text.lstrip("-")) > _MAX_DIGITS or abs(value := int(text)) > MAX_INTEGER:
        raise MalformedError(f"integer out of range (at most {MAX_INTEGER} either side of 0): {text[:24]}")
    return value


def _check_strings(value: Any, depth: int = 0, *, floats: bool = False) -> None:
    """Lone surrogates, floats and depth; `depth` is the number of arrays and objects around `value`."""
    if isinstance(value, str):
        if value.isascii():
            return  # no surrogate in it; and encoding megabytes of base64 only to find that doubled the memory
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MalformedError("string holds a lone surrogate") from exc
    elif isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            raise MalformedError(f"nested too deeply (more than {MAX_DEPTH} arrays and objects inside each other)")
        children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        for v in children:
            _check_strings(v, depth + 1, floats=floats)
    elif isinstance(value, float) and not floats:
        raise MalformedError("floating-point numbers are not allowed")


# A lone surrogate can only come from a \uD800-style escape (raw ones are invalid UTF-8), so
# text without one of these needs no look at each string. (A conservative match: `\\ud800`,
# an escaped backslash, also matches and takes the full look.)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@functools.cache
def _string() -> re.Pattern[str]:
    """A JSON string's text, compiled on first use: `gage id`, `list` and `verdict` read
    their JSON without the depth rule's look, or not at all (start-up)."""
    return re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


_BRACKETS = {ord(c): None for c in map(chr, range(128)) if c not in "[]{}"}


def _no_floats(text: str) -> Any:
    raise MalformedError("floating-point numbers are not allowed")


def _check_depth(text: str) -> None:
    """The depth rule over the text of a document json already parsed: strings dropped,
    brackets counted. The same verdict as `_check_strings`, without a call per value (a
    manifest of 10,000 files holds 70,000 of them)."""
    depth = 0
    for c in _string().sub("", text).translate(_BRACKETS):
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise MalformedError(f"nested too deeply (more than {MAX_DEPTH} arrays and objects inside each other)")
        else:
            depth -= 1


class _Unsure(Exception):
    """The fast reading found something only the exact reading can judge (or word)."""


def _pairs_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Unsure
    return out


def _not_fast(name: str) -> Any:
    raise _Unsure


# What the fast reading leaves to the exact one: a `\\uD800`-style escape (maybe a lone
# surrogate), and `-0` where a number may start: the text's start, or after `[`, `:`, `,` or
# a space (the same inside a string only costs the exact reading). Integers out of range are
# found among the parsed values. (Each pattern starts with a literal: fast to scan for.)
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_MINUS_ZERO = re.compile(r"-0(?![0-9])")
_NUMBER_AFTER = frozenset("[:, \t\n\r")
_CONTAINERS = {dict, list}


def _unsure_text(text: str) -> bool:
    if _ESCAPED_SURROGATE.search(text):
        return True
    return any(m.start() == 0 or text[m.start() - 1] in _NUMBER_AFTER for m in _MINUS_ZERO.finditer(text))


def _plain_values(value: Any) -> bool:
    """At most MAX_DEPTH arrays and objects deep, every integer within MAX_INTEGER: one level
    at a time, in passes in C rather than a call per value (a manifest of 10,000 files holds
    70,000 of them)."""
    if type(value) is int:
        return abs(value) <= MAX_INTEGER
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return False
        dicts = [c for c in level if type(c) is dict]
        values = [*chain.from_iterable(map(dict.values, dicts))]
        if len(dicts) != len(level):
            values += chain.from_iterable(c for c in level if type(c) is list)
        types = set(map(type, values))
        if int in types:
            ints = [v for v in values if type(v) is int]
            if max(ints) > MAX_INTEGER or min(ints) < -MAX_INTEGER:
                return False
        level = [v for v in values if type(v) in _CONTAINERS] if not _CONTAINERS.isdisjoint(types) else []
    return True


# One decoder for every fast reading: `json.loads` with hooks makes a decoder per call, and a
# decoder and its scanner refer to each other, so each is garbage only the cyclic collector
# frees (a fetch of thousands of manifests piled them up between collections). json's own
# `loads` shares one decoder the same way.
_FAST = json.JSONDecoder(object_pairs_hook=_pairs_once, parse_constant=_not_fast, parse_float=_not_fast)


def _fast(text: str) -> Any:
    """The common document read at C speed: json's own dicts and integers, then one look at
    the values. Raises _Unsure for anything `loads` might refuse, so the exact reading
    decides (and words) every refusal; what this returns is what the exact reading would."""
    if _unsure_text(text):
        raise _Unsure
    try:
        value = _FAST.decode(text)
    except (ValueError, RecursionError) as exc:
        raise _Unsure from exc
    if not _plain_values(value):
        raise _Unsure
    return value


def utf8_text(data: bytes | bytearray, *, limit: int, what: str = "JSON") -> str:
    """`data` as the text `loads` parses: at most `limit` bytes of UTF-8, no byte-order mark.

    Apart from `loads` so a caller holding a large body can let go of the bytes before the
    text is parsed (`gage a2a serve`: a large body is not held twice), and hand `loads` the text."""
    if len(data) > limit:
        raise MalformedError(f"{what} is {len(data)} bytes, over the limit of {limit}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise MalformedError(f"{what} starts with a byte-order mark")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedError(f"{what} is not valid UTF-8 (byte {exc.start})") from exc


def loads(data: bytes | str, *, limit: int, what: str = "JSON", floats: bool = False) -> Any:
    """Parse `data` as strict UTF-8 JSON no larger than `limit` bytes (a str: text that `utf8_text` gave).

    `floats`: allow fractional numbers, for envelopes written by others (an A2A message
    whose other extensions carry numbers, which protobuf writes as doubles). Never for a
    manifest or anything gage signs.
    """
    text = data if isinstance(data, str) else utf8_text(data, limit=limit, what=what)
    if not floats:
        try:
            return _fast(text)
        except _Unsure:
            pass  # the exact reading below judges it
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
            parse_int=_integer,
            parse_float=None if floats else _no_floats,
        )
    except MalformedError as exc:
        raise MalformedError(f"{what}: {exc.message}") from exc
    except RecursionError as exc:
        raise MalformedError(f"{what} is nested too deeply") from exc
    except ValueError as exc:
        raise MalformedError(f"{what} is not valid JSON: {exc}") from exc
    try:
        if floats or _SURROGATE_ESCAPE.search(text):
            _check_strings(value, floats=floats)
        else:
            _check_depth(text)
    except MalformedError as exc:
        raise MalformedError(f"{what}: {exc.message}") from exc
    return value


def dumps(value: Any) -> bytes:
    """The one serialisation gage writes: sorted keys, no spaces, UTF-8, newline-free.

    Readers never re-serialise what they verify; this is only how new objects are made.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
