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
import contextlib
import hashlib
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Container
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import api

from gage.carriers.relay.errors import RelayError
from gage.format import strictjson
from gage.format.errors import MalformedError, UsageError
from gage.format.words.wordlist import EVEN, ODD

STREAM = "GAGE_RV"
SUBJECT_PREFIX = "gage.rv."
CONTEXT = b"gage/rendezvous/v1\x00"
MAX_EXPIRES = 3600  # the longest an invite may wait; the stream's max age
DEFAULT_EXPIRES = 600
MAX_MESSAGE = 64 * 1024  # a hybrid key file and its binding are about 20 KB
MAX_BYTES = 256 << 20
# A subject holds at most this many (one invite says at most 7 there); the stream refuses the
# next, so a flood of one subject costs bounded reads and cannot push out an offer.
PER_SUBJECT = 64
MAX_NAMEPLATE = 9999
VERSION = 1
POLL = 0.2
_EVEN = {w: i for i, w in enumerate(EVEN)}
_ODD = {w: i for i, w in enumerate(ODD)}
_CODE = re.compile(r"^([1-9][0-9]{0,3})-([a-z]+)-([a-z]+)$")


class Cancelled(Exception):
    """A wait ended by the person (the interface's Esc), not by the relay or the clock."""


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
    """A code as people type it: case and the space around it do not matter, nothing else is guessed.

    A word that is not the list's gets the nearest list words (as the ceremony does), never a
    correction made on the person's behalf."""
    m = _CODE.match(text.strip().lower())
    if m is None:
        raise UsageError(f"{text!r} is not an invite code: a number and two words, like 7-tiger-guitarist")
    n, a, b = int(m.group(1)), m.group(2), m.group(3)
    for position, (word, known) in enumerate(((a, _EVEN), (b, _ODD))):
        if word in known:
            continue
        from gage.format.words import hearing  # difflib: only for a code typed wrong

        near = hearing.nearest(word, position=position)
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        raise UsageError(f"{word!r} is not a word an invite code uses{hint} (check the code as they read it)")
    if n > MAX_NAMEPLATE:
        raise UsageError(f"the number of an invite code is 1 to {MAX_NAMEPLATE}")
    return Code(n, (a, b))


def new_code(nameplate: int | None = None) -> Code:
    """Two words from the OS's randomness (16 bits: an online guess per try, and the code is one use)."""
    n = nameplate if nameplate is not None else secrets.randbelow(99) + 1
    return Code(n, (EVEN[secrets.randbelow(256)], ODD[secrets.randbelow(256)]))


_UNITS = (("h", 3600, "hour"), ("m", 60, "minute"), ("s", 1, "second"))


def parse_duration(text: str) -> int:
    """`90s`, `10m`, `1m30s`, `1h` or plain seconds: whole seconds, at most MAX_EXPIRES."""
    m = re.fullmatch(r"\s*(?:([0-9]+)|(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?)\s*", text)
    if m is None or not any(m.groups()):
        raise UsageError(f"{text!r} is not a duration: seconds, or whole hours, minutes and seconds (10m, 1m30s, 1h)")
    plain, h, mins, s = (int(g) if g else 0 for g in m.groups())
    secs = plain + 3600 * h + 60 * mins + s
    if not 1 <= secs <= MAX_EXPIRES:
        raise UsageError(f"an invite expires after 1 second to {int(MAX_EXPIRES // 60)} minutes; {text!r} is outside that")
    return secs


def say_duration(secs: int) -> str:
    """Whole units, as people say it: "20 seconds", "1 minute 30 seconds", "1 hour"."""
    parts = []
    for _, size, name in _UNITS:
        count, secs = divmod(secs, size)
        if count:
            parts.append(f"{count} {name}" + ("" if count == 1 else "s"))
    return " ".join(parts) or "0 seconds"


# --- the wire ------------------------------------------------------------------------------


class Waited(Exception):
    """Nothing wanted came before the deadline (not the relay failing: that is nats-py's own errors)."""


class Full(RelayError):
    """The stream would not keep a message: this subject holds its most (someone filled it), or the stream is full."""


@dataclass(frozen=True)
class Said:
    """One message read back from the stream: its sequence, its time (the relay's) and its JSON."""

    seq: int
    time: float
    body: dict[str, Any]

    def kind(self) -> str | None:
        """The kind of a message of gage's (`"gage-invite"` the integer 1, not `true`), else None."""
        v = self.body.get("gage-invite")
        k = self.body.get("kind")
        return k if type(v) is int and v == VERSION and isinstance(k, str) else None


def _config() -> api.StreamConfig:
    return api.StreamConfig(
        name=STREAM,
        subjects=[SUBJECT_PREFIX + "*"],
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        discard=api.DiscardPolicy.NEW,
        max_age=MAX_EXPIRES,
        max_msg_size=MAX_MESSAGE,
        max_bytes=MAX_BYTES,
        max_msgs_per_subject=PER_SUBJECT,
        discard_new_per_subject=True,
        allow_rollup_hdrs=False,
        deny_delete=True,
        deny_purge=True,
    )


async def ensure_stream(nc: Client) -> None:
    """`GAGE_RV` must be there: made here when missing (on `gage relay dev`; elsewhere the operator makes it).

    One made before subjects were bounded gets its per-subject limit when this user may change it (the
    operator, or anyone on `gage relay dev`); a person on a shared relay reads it as it is."""
    js = nc.jetstream(timeout=5.0)
    try:
        info = await js.stream_info(STREAM)
    except nats.js.errors.NotFoundError:
        info = None
    if info is not None:
        if info.config.max_msgs_per_subject != PER_SUBJECT or not info.config.discard_new_per_subject:
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                await js.update_stream(_config())
        return
    try:
        await js.add_stream(_config())
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
    """Publish one message, acknowledged by the stream; its sequence number (Full when it was not kept)."""
    data = strictjson.dumps(body)
    if len(data) > MAX_MESSAGE:
        raise RelayError("the invite message is too big for the rendezvous stream")
    try:
        ack = await nc.jetstream(timeout=5.0).publish(subject, data, stream=STREAM)
    except nats.js.errors.APIError as exc:
        text = str(exc).lower()
        if "maximum messages per subject" in text or "maximum bytes" in text or "maximum messages" in text:
            raise Full(f"the relay keeps no more invite messages here ({exc.description or exc})") from None
        raise
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


async def messages(nc: Client, subject: str, seq: int, *, until: float) -> AsyncIterator[Said]:
    """The messages of gage's on `subject` after sequence `seq`, oldest first, one at a time, until the
    loop time `until` (Waited). Nothing is kept: a flood costs reads, never memory, and never the deadline."""
    js = nc.jetstream(timeout=5.0)
    loop = asyncio.get_running_loop()
    while True:
        if loop.time() >= until:
            raise Waited(subject)
        left = until - loop.time()
        try:
            raw = await asyncio.wait_for(js.get_msg(STREAM, seq=seq + 1, subject=subject, next=True), timeout=min(5.0, left))
        except nats.js.errors.NotFoundError:
            return
        except TimeoutError:
            if loop.time() >= until:
                raise Waited(subject) from None
            raise
        seq = int(raw.seq or 0)
        s = _said(raw)
        if s is not None and s.kind() is not None:
            yield s


async def newest(nc: Client, subject: str, kinds: Container[str], *, until: float) -> tuple[Said | None, list[str]]:
    """The newest message of gage's of one of `kinds` on `subject`, and the kinds said after it.

    Every message on the subject is read (a subject holds at most PER_SUBJECT), so a message that
    is not gage's, published after the one sought, hides nothing."""
    found: Said | None = None
    later: list[str] = []
    try:
        async for s in messages(nc, subject, 0, until=until):
            kind = s.kind()
            if kind in kinds:
                found, later = s, []
            elif found is not None and kind is not None and len(later) < PER_SUBJECT:
                later.append(kind)
    except Waited:
        raise RelayError("the relay's invite messages under this number could not be read in time") from None
    return found, later


async def wait_for(
    nc: Client, subject: str, seq: int, want: Callable[[Said], Awaitable[bool] | bool], *, until: float, what: str,
    cancelled: Callable[[], bool] | None = None,
) -> Said:
    """Poll `subject` past `seq` for the first message `want` takes, until the loop time `until`.

    `cancelled`: asked between polls; True ends the wait with Cancelled (an interface's Esc, where
    the command line has Ctrl-C)."""
    loop = asyncio.get_running_loop()
    while True:
        if cancelled is not None and cancelled():
            raise Cancelled(what)
        try:
            async for s in messages(nc, subject, seq, until=until):
                seq = s.seq
                ok = want(s)
                if not isinstance(ok, bool):
                    ok = await ok
                if ok:
                    return s
        except Waited:
            raise Waited(what) from None
        if loop.time() >= until:
            raise Waited(what)
        if nc.is_closed:
            raise nats.errors.ConnectionClosedError
        await asyncio.sleep(min(POLL, max(0.0, until - loop.time())))
