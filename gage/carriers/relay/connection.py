"""A connection to the relay: fails fast and once, presents this home's credential (a file), and
finds the relay's JetStream API where a person's account on a shared relay reaches it.

Split from mailbox.py; everything that talks to the relay opens its connection here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import nats
import nats.errors
from nats.aio.client import Client

from gage.carriers.relay.creds import Creds, as_credentials, check_url
from gage.carriers.relay.errors import (
    AUTHORIZATION,
    PERMISSIONS,
    REFUSED_MSG,
    RelayError,
    RelayUnreachable,
    refusal_text,
    refused_login,
)

CONNECT_TIMEOUT = 1.0  # a relay that does not answer within this is down: said within 2 s, not after a hang
PROBE = "$JS.API.INFO"
PROBE_TIMEOUT = 1.0


@contextlib.asynccontextmanager
async def connected(url: str, creds: Creds = None) -> AsyncIterator[Client]:
    """A connection that fails fast and once: a relay that is down is an error now, not a hang.

    `url` never carries a user or password (refused: it would leak wherever the URL goes);
    `creds` is a credential kept in a file (gage.carriers.relay.creds), checked before anything is sent.

    A relay that does not let this user do something (per-user permissions, spec/relay.md
    section 8) says so only in an error message on the side, while the request itself would
    wait for its timeout: so a permissions violation stops the operation at once and is the
    error raised, naming what was refused.
    """
    check_url(url)
    options = as_credentials(creds).nats_options()
    refused: list[str] = []
    task = asyncio.current_task()

    async def on_error(exc: Exception) -> None:
        """nats-py reports every failed attempt here; the error raised below says it once."""
        text = str(exc).lower()
        if PROBE.lower() in text:
            return  # a relay with per-user permissions may refuse the probe (_api_prefix): no matter
        if PERMISSIONS in text and not refused:
            refused.append(str(exc))
            if task is not None and not task.done():
                task.cancel(REFUSED_MSG)

    # max_reconnect_attempts=0 would mean "try this server forever" to nats-py's first connect.
    kwargs: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "allow_reconnect": False,
        "max_reconnect_attempts": 1,
        "reconnect_time_wait": 0.2,
        "error_cb": on_error,
    }
    kwargs.update(options)
    # A cluster is given as its nodes' URLs, comma-separated: any node that answers will do.
    servers = [u.strip() for u in url.split(",") if u.strip()]
    try:
        nc = await nats.connect(servers=servers, **kwargs)
    except (TimeoutError, OSError, nats.errors.Error) as exc:
        if AUTHORIZATION in str(exc).lower():  # reached, and it said no to who we are
            raise RelayError(refused_login(url, as_credentials(creds))) from None
        raise RelayUnreachable(f"cannot reach the relay at {url}: {exc or type(exc).__name__}") from None
    try:
        await _api_prefix(nc)
        yield nc
    except BaseException:
        if not refused:
            raise
        if task is not None and task.cancelling():
            task.uncancel()  # the cancel was ours: what stops the operation is the refusal below
        raise RelayError(refusal_text(refused[0])) from None
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


# Where a person's account on a shared relay finds the relay's JetStream API (gage.carriers.relay.relayconf).
SHARED_API_PREFIX = "JS.MAIL.API"


async def _api_prefix(nc: Client) -> None:
    """On a shared relay a person's account has no JetStream of its own and reaches the relay's
    under SHARED_API_PREFIX: every JetStream context made from `nc` then uses it, whoever makes it."""
    try:
        # Short: where it matters, the connected server answers at once itself; a relay that refuses
        # the probe (per-user permissions) answers nothing, and costs this wait.
        reply = await nc.request(PROBE, b"", timeout=PROBE_TIMEOUT)
        code = (json.loads(reply.data or b"{}").get("error") or {}).get("err_code")
    except (nats.errors.Error, TimeoutError, ValueError, AttributeError):
        return
    if code == 10039:  # JetStream not enabled for this account
        plain = nc.jetstream

        def jetstream(**opts: Any) -> Any:
            return plain(**{"prefix": SHARED_API_PREFIX, **opts})

        setattr(nc, "jetstream", jetstream)  # noqa: B010  (an instance attribute over the method)
        setattr(nc, _PREFIX_ATTR, SHARED_API_PREFIX)  # noqa: B010


_PREFIX_ATTR = "_gage_api_prefix"


def api_subject(nc: Client, rest: str) -> str:
    """A JetStream API subject as this connection reaches it, for a raw request (`STREAM.MSG.GET.<stream>`
    gives `$JS.API.STREAM.MSG.GET.<stream>`, or `JS.MAIL.API.STREAM.MSG.GET.<stream>` on a shared relay)."""
    prefix: str = getattr(nc, _PREFIX_ATTR, "$JS.API")
    return f"{prefix}.{rest}"
