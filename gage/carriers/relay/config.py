"""The relay a home uses, kept in its `settings.toml` under `[relay]` (spec/settings.md).

Written by `gage mailbox create`. The file is the person's: a `[relay]` table is appended
when there is none, so their comments and layout stay as they wrote them; one that is
there already is changed in place only for its `url` and credential lines (`creds`, `nkey`,
`user`, `password_file`: paths and a name, never a secret; gage.carriers.relay.creds).
"""

from __future__ import annotations

import json
import re

from gage.bundle import atomic
from gage.carriers.relay.creds import Credentials, as_credentials, check_url
from gage.home import homefile, settings
from gage.home.layout import Home

_TABLE = re.compile(r"^\[relay\][ \t]*(#.*)?$", re.M)
_NEXT = re.compile(r"^\[", re.M)


def relay_url(home: Home) -> str | None:
    return settings.load(home).relay_url  # one with a user or password in it is refused by settings.parse


def relay_creds(home: Home) -> Credentials | None:
    """This home's credential for its own relay, as settings.toml names it (paths, checked when
    used), or None. Only ever presented to the relay settings.toml names."""
    s = settings.load(home)
    cred = Credentials(creds=s.relay_creds, nkey=s.relay_nkey, user=s.relay_user, password_file=s.relay_password_file)
    return cred or None


def _line(name: str, value: str) -> str:
    return f"{name} = {json.dumps(value, ensure_ascii=True)}\n"  # a JSON string is a TOML basic string


def record(home: Home, url: str, creds: Credentials | str | None) -> None:
    """Set `[relay] url` and its credential (paths, made absolute), keeping everything else in the file byte for byte."""
    check_url(url)
    cred = as_credentials(creds).check().absolute()
    p = settings.path_of(home)
    with home.lock():
        raw = homefile.read_bytes(p, "settings", settings.SETTINGS_LIMIT) or b""
        text = raw.decode("utf-8")
        settings.parse(raw, p)  # a damaged file is an error naming it, never overwritten
        named = {"creds": cred.creds, "nkey": cred.nkey, "user": cred.user, "password_file": cred.password_file}
        body = _line("url", url) + "".join(_line(k, v) for k, v in named.items() if v is not None)
        m = _TABLE.search(text)
        if m is None:
            sep = "" if not text or text.endswith("\n") else "\n"
            text = text + sep + ("\n" if text else "") + "[relay]\n" + body
        else:
            start = m.end() + 1
            nxt = _NEXT.search(text, start)
            end = nxt.start() if nxt else len(text)
            kept = [ln for ln in text[start:end].splitlines(keepends=True) if not re.match(r"\s*(url|creds|nkey|user|password_file)\s*=", ln)]
            text = text[:start] + body + "".join(kept) + text[end:]
        new = text.encode("utf-8")
        settings.parse(new, p)
        atomic.write_bytes(p, new, mode=0o644)
