"""Where two homes meet on a relay for `gage invite` / `gage join`: the code, and the wire under it.

An invite code is `N-even-odd` (`7-tiger-guitarist`): N, a number, is the nameplate, and the two
words (one from each PGP list) are the secret. Only the number reaches the relay, as the
subject token hashed from it: a hash of the words would not hide them (two list words are
65,536 guesses, ground in a second), so the words never travel in any form and are the
password of the PAKE (gage.carriers.relay.invite). The relay holds what is said in the stream
`GAGE_RV` (spec/relay.md section 10), read back by sequence with `STREAM.MSG.GET` only, as
the relay's permissions allow any person (RELAY-CONTRACT: publish `gage.rv.*` with an ack,
read `GAGE_RV` by message).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import api

from gage.carriers.relay.errors import RelayError
from gage.format import strictjson
from gage.format.errors import MalformedError, UsageError
from gage.format.wordlist import EVEN, ODD

STREAM = "GAGE_RV"
SUBJECT_PREFIX = "gage.rv."
CONTEXT = b"gage/rendezvous/v1\x00"
MAX_EXPIRES = 3600.0  # the longest an invite may wait; the stream's max age
DEFAULT_EXPIRES = 600.0
MAX_MESSAGE = 64 * 1024  # a hybrid key file and its binding are about 20 KB
MAX_NAMEPLATE = 9999
POLL = 0.2
_EVEN = {w: i for i, w in enumerate(EVEN)}
_ODD = {w: i for i, w in enumerate(ODD)}
_CODE = re.compile(r"^([1-9][0-9]{0,3})-([a-z]+)-([a-z]+)$")


@dataclass(frozen=True)
class Code:
    """A parsed invite code. `text` is the whole code (the PAKE password); `nameplate` is public."""

    nameplate: int
    words: tuple[str, str]

    @property
    def text(self) -> str:
        return f"{self.nameplate}-{self.words[0]}-{self.words[1]}"

    def subject(self, side: str) -> str:
        """`gage.rv.<token>` for one side ("i", the inviter; "j", the joiner), from the number only."""
        digest = hashlib.sha256(CONTEXT + side.encode() + b"\x00" + str(self.nameplate).encode()).hexdigest()
        return SUBJECT_PREFIX + digest[:32]


def parse_code(text: str) -> Code:
    """A code as people type it: case and the space around it do not matter, nothing else is guessed."""
    m = _CODE.match(text.strip().lower())
    if m is None:
        raise UsageError(f"{text!r} is not an invite code: a number and two words, like 7-tiger-guitarist")
    n, a, b = int(m.group(1)), m.group(2), m.group(3)
    if a not in _EVEN or b not in _ODD:
        bad = a if a not in _EVEN else b
        raise UsageError(f"{bad!r} is not a word an invite code uses (check the code as they read it)")
    if n > MAX_NAMEPLATE:
        raise UsageError(f"the number of an invite code is 1 to {MAX_NAMEPLATE}")
    return Code(n, (a, b))


def new_code(nameplate: int | None = None) -> Code:
    """Two words from the OS's randomness (16 bits: one online guess per code, and the code is one use)."""
    n = nameplate if nameplate is not None else secrets.randbelow(99) + 1
    return Code(n, (EVEN[secrets.randbelow(256)], ODD[secrets.randbelow(256)]))


def parse_duration(text: str) -> float:
    """`90s`, `10m`, `1h` or plain seconds; at most MAX_EXPIRES."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)\s*", text)
    if m is None:
        raise UsageError(f"{text!r} is not a duration: seconds, or a number and s, m or h (10m)")
    secs = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 1 <= secs <= MAX_EXPIRES:
        raise UsageError(f"an invite expires after 1 second to {int(MAX_EXPIRES // 60)} minutes; {text!r} is outside that")
    return secs


# --- the wire ------------------------------------------------------------------------------


class Waited(Exception):
    """Nothing wanted came before the deadline (not the relay failing: that is nats-py's own errors)."""


@dataclass(frozen=True)
class Said:
    """One message read back from the stream: its sequence, its time (the relay's) and its JSON."""

    seq: int
    time: float
    body: dict[str, Any]


async def ensure_stream(nc: Client) -> None:
    """`GAGE_RV` must be there: made here when missing (on `gage relay dev`; elsewhere the operator makes it)."""
    js = nc.jetstream(timeout=5.0)
    try:
        await js.stream_info(STREAM)
        return
    except nats.js.errors.NotFoundError:
        pass
    config = api.StreamConfig(
        name=STREAM,
        subjects=[SUBJECT_PREFIX + "*"],
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        discard=api.DiscardPolicy.NEW,
        max_age=MAX_EXPIRES,
        max_msg_size=MAX_MESSAGE,
        max_bytes=256 << 20,
        allow_rollup_hdrs=False,
        deny_delete=True,
        deny_purge=True,
    )
    try:
        await js.add_stream(config)
    except nats.js.errors.BadRequestError as exc:
        if "already in use" not in str(exc).lower():
            raise RelayError(f"the relay has no rendezvous stream {STREAM} and would not make one: {exc}") from None
    except (nats.errors.NoRespondersError, nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError):
        # On a shared relay (accounts, spec/relay.md section 8) nothing answers a person's create.
        raise RelayError(
            f"the relay refused: it has no rendezvous stream {STREAM}, and this user may not make one: "
            "its operator makes it (spec/relay.md section 10); nothing was confirmed"
        ) from None


async def say(nc: Client, subject: str, body: dict[str, Any]) -> int:
    """Publish one message, acknowledged by the stream; its sequence number."""
    data = strictjson.dumps(body)
    if len(data) > MAX_MESSAGE:
        raise RelayError("the invite message is too big for the rendezvous stream")
    ack = await nc.jetstream(timeout=5.0).publish(subject, data, stream=STREAM)
    return int(ack.seq)


def _said(raw: Any) -> Said | None:
    try:
        body = strictjson.loads(bytes(raw.data or b""), limit=MAX_MESSAGE, what="rendezvous message")
    except MalformedError:
        return None  # anyone may publish here: what is not ours is not read
    if not isinstance(body, dict):
        return None
    stamp = raw.time.timestamp() if getattr(raw, "time", None) is not None else 0.0
    return Said(int(raw.seq or 0), stamp, body)


async def last(nc: Client, subject: str) -> Said | None:
    """The newest message on `subject`, if any (and if it is JSON)."""
    try:
        raw = await nc.jetstream(timeout=5.0).get_msg(STREAM, subject=subject)
    except nats.js.errors.NotFoundError:
        return None
    return _said(raw)


async def after(nc: Client, subject: str, seq: int) -> list[Said]:
    """Every message on `subject` after sequence `seq`, oldest first."""
    js = nc.jetstream(timeout=5.0)
    got: list[Said] = []
    while True:
        try:
            raw = await js.get_msg(STREAM, seq=seq + 1, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return got
        seq = int(raw.seq or 0)
        s = _said(raw)
        if s is not None:
            got.append(s)


async def wait_for(
    nc: Client, subject: str, seq: int, want: Callable[[Said], Awaitable[bool] | bool], *, until: float, what: str
) -> Said:
    """Poll `subject` past `seq` for the first message `want` takes, until the loop time `until`."""
    loop = asyncio.get_running_loop()
    while True:
        for s in await after(nc, subject, seq):
            seq = s.seq
            ok = want(s)
            if not isinstance(ok, bool):
                ok = await ok
            if ok:
                return s
        if loop.time() >= until:
            raise Waited(what)
        if nc.is_closed:
            raise nats.errors.ConnectionClosedError
        await asyncio.sleep(POLL)
