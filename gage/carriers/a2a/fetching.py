"""The one way gage talks HTTP to a peer: httpx, a total deadline, a size cap, one redirect policy.

Card discovery for `gage a2a send`, its post, and `gage pair --card URL` all go through
`request`, so a hostile peer meets the same bounds everywhere:

- a **total deadline** on the whole exchange (connect, request, answer head, answer body),
  not only per read: a peer that sends one byte every two seconds is cut off when the
  deadline passes, however steadily it trickles. The exchange runs on an asyncio loop and
  is cancelled there, which stops it wherever it is waiting;
- a **size cap** on the answer, counted as it streams (a `Content-Length` over it is
  refused before a byte of the body is read);
- **one redirect policy**: a GET follows at most MAX_REDIRECTS redirects, and only within
  the origin it asked (same scheme, host and port: never from https to http, never to
  another host); a POST is never redirected (its answer is whatever it is). A redirect
  anywhere else is an error naming where it pointed.

With `server` and `client`, the only modules that import the optional extra (httpx).
"""

from __future__ import annotations

import asyncio
import threading
import urllib.parse
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx

from gage import __version__
from gage.format.sanitize import clip, visible

MAX_REDIRECTS = 3
REDIRECTS = (301, 302, 303, 307, 308)

FetchKind = Literal["network", "timeout", "too-large", "redirect"]
T = TypeVar("T")


class FetchError(Exception):
    """The exchange did not give a whole answer: the network, the deadline, the cap or a redirect."""

    def __init__(self, kind: FetchKind, message: str) -> None:
        super().__init__(message)
        self.kind: FetchKind = kind


@dataclass(frozen=True)
class Fetched:
    """A whole answer: its final URL, status, headers (names lower-cased, the first value of each) and body."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


def origin(url: str) -> tuple[str, str, int | None]:
    p = urllib.parse.urlsplit(url)
    return p.scheme, (p.hostname or "").lower(), p.port or {"http": 80, "https": 443}.get(p.scheme)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end from synchronous code, on a loop of its own (in a thread if this one has a loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    t = threading.Thread(target=target, name="gage-fetch", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


async def _exchange(
    method: str, url: str, headers: Mapping[str, str], content: bytes | None, cap: int, per_read: float
) -> Fetched:
    sent = {"User-Agent": f"gage/{__version__}", **headers}
    async with httpx.AsyncClient(follow_redirects=False, timeout=per_read) as client:
        for hop in range(MAX_REDIRECTS + 1):
            async with client.stream(method, url, headers=sent, content=content) as resp:
                if method == "GET" and resp.status_code in REDIRECTS and "location" in resp.headers:
                    target = urllib.parse.urljoin(url, resp.headers["location"])
                    if origin(target) != origin(url):
                        raise FetchError("redirect", f"refused a redirect to another origin ({visible(clip(target, 300))}): gage follows a redirect only within the origin it asked")
                    if hop == MAX_REDIRECTS:
                        raise FetchError("redirect", f"more than {MAX_REDIRECTS} redirects")
                    url = target
                    continue
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > cap:
                    raise FetchError("too-large", f"the answer is {declared} bytes, over the {cap} gage reads")
                chunks: list[bytes] = []
                total = 0
                async for chunk in resp.aiter_bytes():
                    total += len(chunk)
                    if total > cap:
                        raise FetchError("too-large", f"the answer is over the {cap} bytes gage reads")
                    chunks.append(chunk)
                heads = {k.lower(): v for k, v in reversed(resp.headers.multi_items())}
                return Fetched(url=url, status=resp.status_code, headers=heads, body=b"".join(chunks))
    raise AssertionError("unreachable: the loop returns or raises")


def request(
    method: Literal["GET", "POST"],
    url: str,
    *,
    cap: int,
    deadline: float,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> Fetched:
    """One HTTP exchange under the bounds above. Raises FetchError; never more than `deadline` seconds."""

    async def bounded() -> Fetched:
        try:
            return await asyncio.wait_for(_exchange(method, url, headers or {}, content, cap, deadline), deadline)
        except TimeoutError:
            raise FetchError("timeout", f"no whole answer within {deadline:g} seconds") from None
        except httpx.TimeoutException:
            raise FetchError("timeout", f"no whole answer within {deadline:g} seconds") from None
        except httpx.HTTPError as exc:
            raise FetchError("network", visible(clip(str(exc) or type(exc).__name__, 300))) from exc
        except OSError as exc:
            raise FetchError("network", visible(clip(str(exc), 300))) from exc

    return _run(bounded())
