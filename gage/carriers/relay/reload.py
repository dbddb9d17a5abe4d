"""`gage relay reload CONF`: make a running nats-server take a new configuration, and check that
every person's account answers before saying so.

nats-server 2.15.1 (the version gage pins) adds an account on a reload without its service
imports: a person added that way gets "no responders" for everything until a second reload
(reproduced with two plain accounts and one service export, without gage). So a reload here is
a signal and a probe, repeated until the probe passes: the server's monitoring port (loopback
only, in the generated configuration) says, for each account, how many imports it has and how
many subscriptions; an account whose imports are wired has a subscription for each.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gage.carriers.relay.errors import RelayError
from gage.format.errors import MalformedError, UsageError

TRIES = 5
SETTLE = 10.0  # how long one reload may take to show every account


@dataclass(frozen=True)
class Reloaded:
    reloads: int
    accounts: list[str]


def read_conf(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 26)
    except OSError as exc:
        raise UsageError(f"cannot read the configuration {path}: {exc.strerror}") from None
    try:
        doc = json.loads(raw)
    except ValueError:
        raise MalformedError("is not the JSON `gage relay config` writes", path=path) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("accounts"), dict):
        raise MalformedError("has no accounts: not a configuration `gage relay config` wrote", path=path)
    for k in ("pid_file", "http"):
        if not isinstance(doc.get(k), str):
            raise MalformedError(f"has no {k}: write it again with this gage's `gage relay config` (it names both)", path=path, field=k)
    return doc


def ask(monitor: str, query: str, page: str = "accountz") -> dict[str, Any]:
    """One page of nats-server's monitoring port (`/accountz`, `/varz`), as JSON."""
    try:
        with urllib.request.urlopen(f"http://{monitor}/{page}{query}", timeout=2) as r:  # noqa: S310  (loopback, from the file)
            data: dict[str, Any] = json.loads(r.read(1 << 24))
            return data
    except (OSError, ValueError, urllib.error.URLError) as exc:
        raise RelayError(f"cannot ask nats-server's monitoring port at {monitor}: {exc}") from None


def unwired(monitor: str, accounts: list[str]) -> list[str]:
    """The accounts among `accounts` that the server lacks, or whose imports have no subscriptions yet."""
    listed = set(ask(monitor, "").get("accounts") or [])
    out = []
    for a in accounts:
        if a not in listed:
            out.append(a)
            continue
        detail = ask(monitor, f"?acc={a}").get("account_detail") or {}
        imports = len(detail.get("imports") or [])
        subs = int((detail.get("sublist_stats") or {}).get("num_subscriptions") or 0)
        if subs < imports:
            out.append(a)
    return out


def pid_of(pid_file: str) -> int:
    try:
        with open(pid_file) as f:
            pid = int(f.read(64).strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        raise RelayError(f"nats-server is not running with this configuration (no live process in its pid_file {pid_file})") from None
    return pid


def reload(path: str, *, tries: int = TRIES, say: Callable[[str], None] = lambda _s: None) -> Reloaded:
    """Signal the server to reload `path` until every account in it answers (at most `tries` reloads)."""
    doc = read_conf(path)
    accounts = sorted(doc["accounts"])
    people = [a for a in accounts if a.startswith("P_")]
    pid = pid_of(doc["pid_file"])
    left: list[str] = people
    for n in range(1, tries + 1):
        loaded = ask(doc["http"], "", "varz").get("config_load_time")
        os.kill(pid, signal.SIGHUP)  # nats-server's reload (as `nats-server --signal reload=PID`)
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:  # until the server says it read the file again
            time.sleep(0.2)
            if ask(doc["http"], "", "varz").get("config_load_time") != loaded:
                break
        else:
            raise RelayError(f"nats-server did not reload {path} within {SETTLE:.0f} seconds: its log says why (nats-server -t -c {path} checks the file)")
        time.sleep(0.2)
        left = unwired(doc["http"], people)
        if not left:
            return Reloaded(reloads=n, accounts=people)
        say(f"reload {n}: {', '.join(left[:5])}{' ...' if len(left) > 5 else ''} not answering yet; reloading again")
    raise RelayError(
        f"after {tries} reloads these accounts still do not answer: {', '.join(left[:10])}; restart nats-server "
        f"(nats-server -c {path}) to load them, then check again with `gage relay reload {path}`"
    )
