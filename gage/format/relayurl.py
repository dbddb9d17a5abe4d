"""A relay URL as it may be shown or recorded: never with a user or a password in it.

Relay credentials live in files this home points at (spec/relay.md section 8), never in a
URL. A home made before that rule may still hold `nats://bob:pw@host` in its settings, and
a card, key file or directory record may name one; so every place a relay URL leaves the
process (a directory record, an agent card, a journal line, a verdict, an MCP answer, a
printed or logged line) passes it through `public` first, and `same_relay` says whether two
URLs name the same relay when deciding whom this home's credentials may be shown to.

The userinfo is what lies between `scheme://` and the last `@` of the authority (up to the
first `/`, `?` or `#`), as URL parsers (and nats-py) read it; a path's `@` is left alone.
"""

from __future__ import annotations

import functools
import re

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

DEFAULT_PORT = 4222


# Compiled on first use, not at import: the journal's reader imports this module on every
# command's path, and most never hold a relay URL (start-up).
@functools.cache
def _in_text() -> re.Pattern[str]:
    """scheme://userinfo@ anywhere in free text (an error message, a watch line)."""
    return re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://)[^\s/?#@\"'<>]*@")


@functools.cache
def _authority_end() -> re.Pattern[str]:
    return re.compile(r"[/?#]")


def _split(part: str) -> tuple[str, str]:
    """(scheme with `://` or "", the rest) of one server URL."""
    i = part.find("://")
    return (part[: i + 3], part[i + 3 :]) if i >= 0 else ("", part)


def _authority(rest: str) -> str:
    m = _authority_end().search(rest)
    return rest[: m.start()] if m else rest


def _one(part: str) -> str:
    scheme, rest = _split(part)
    at = _authority(rest).rfind("@")
    return scheme + rest[at + 1 :] if at >= 0 else part


def has_userinfo(url: str) -> bool:
    """Whether any server of `url` (comma-separated for a cluster) names a user or a password."""
    return any("@" in _authority(_split(p)[1]) for p in url.split(","))


def public(url: str) -> str:
    """`url` with every server's user and password removed (a cluster's comma-separated list kept)."""
    if "@" not in url:
        return url
    return ",".join(_one(p) for p in url.split(","))


def scrub(text: str) -> str:
    """Free text with the userinfo of every `scheme://user:pw@` in it removed."""
    return _in_text().sub(r"\1", text) if "@" in text else text


def servers(url: str) -> frozenset[tuple[str, str, int]]:
    """The servers `url` names, as (scheme, host, port), without userinfo: what `same_relay` compares."""
    out = set()
    for part in public(url).split(","):
        part = part.strip()
        if not part:
            continue
        scheme, rest = _split(part)
        host = re.split(r"[/?#]", rest, maxsplit=1)[0].lower()
        port = DEFAULT_PORT
        m = re.fullmatch(r"(.*):(\d{1,5})", host)
        if m is not None and not host.endswith("]"):
            host, port = m.group(1), int(m.group(2))
        out.add(((scheme[:-3] or "nats").lower(), host, port))
    return frozenset(out)


def same_relay(a: str | None, b: str | None) -> bool:
    """Whether `a` and `b` name the same relay: the same servers, userinfo aside (a cluster given
    as the same nodes in another order is the same; a node more or less is not)."""
    if not a or not b:
        return False
    sa, sb = servers(a), servers(b)
    return bool(sa) and sa == sb


def clean_transport(fields: dict[str, Any]) -> dict[str, Any]:
    """A carrier's transport fields (a journal line's `transport`) with no credential in any URL:
    `relay` as `public` makes it, every other text scrubbed."""
    return {k: (public(v) if k == "relay" else scrub(v)) if isinstance(v, str) else v for k, v in fields.items()}
