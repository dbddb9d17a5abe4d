"""The relay a home uses, kept in its `settings.toml` under `[relay]` (spec/settings.md).

Written by `gage mailbox create`. The file is the person's: a `[relay]` table is appended
when there is none, so their comments and layout stay as they wrote them; one that is
there already is changed in place only for its `url` and `creds` lines.
"""

from __future__ import annotations

import json
import re

from gage.bundle import atomic
from gage.home import homefile, settings
from gage.home.layout import Home

_TABLE = re.compile(r"^\[relay\][ \t]*(#.*)?$", re.M)
_NEXT = re.compile(r"^\[", re.M)


def relay_url(home: Home) -> str | None:
    return settings.load(home).relay_url


def relay_creds(home: Home) -> str | None:
    return settings.load(home).relay_creds


def _line(name: str, value: str) -> str:
    return f"{name} = {json.dumps(value, ensure_ascii=True)}\n"  # a JSON string is a TOML basic string


def record(home: Home, url: str, creds: str | None) -> None:
    """Set `[relay] url` (and `creds`), keeping everything else in the file byte for byte."""
    p = settings.path_of(home)
    with home.lock():
        raw = homefile.read_bytes(p, "settings", settings.SETTINGS_LIMIT) or b""
        text = raw.decode("utf-8")
        settings.parse(raw, p)  # a damaged file is an error naming it, never overwritten
        body = _line("url", url) + (_line("creds", creds) if creds else "")
        m = _TABLE.search(text)
        if m is None:
            sep = "" if not text or text.endswith("\n") else "\n"
            text = text + sep + ("\n" if text else "") + "[relay]\n" + body
        else:
            start = m.end() + 1
            nxt = _NEXT.search(text, start)
            end = nxt.start() if nxt else len(text)
            kept = [ln for ln in text[start:end].splitlines(keepends=True) if not re.match(r"\s*(url|creds)\s*=", ln)]
            text = text[:start] + body + "".join(kept) + text[end:]
        new = text.encode("utf-8")
        settings.parse(new, p)
        atomic.write_bytes(p, new, mode=0o644)
