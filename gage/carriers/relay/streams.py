"""The relay's streams, made by whoever may make them: a mailbox, its object bucket, the directory.

On a shared relay (spec/relay.md section 8) every stream lives in one account, MAIL, that only
the relay's operator logs in to; people reach it through narrow service exports. What a person
can still do to a stream is publish to it, so each stream is made so that a publish can only
add: rollups off (a `Nats-Rollup` header would replace a subject's or a whole stream's
contents), and deletes and purges refused where nobody needs them. A mailbox is a work queue:
an acknowledged envelope leaves the stream, so what was taken never counts against its limits.

Made again, a stream's config is updated where the server allows it; what it does not allow
(retention, storage, turning a deny off) is kept as it was, and named in the answer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import nats.errors
import nats.js.errors
from nats.js import JetStreamContext, api

SUBJECT_PREFIX = "gage.mb."
STREAM_PREFIX = "GAGE_MB_"
OBJECT_PREFIX = "GAGE_OB_"
CONSUMER = "inbox"
DIRECTORY = "GAGE_DIRECTORY"
DIRECTORY_STREAM = "KV_GAGE_DIRECTORY"
DIRECTORY_HISTORY = 16
DUPLICATE_WINDOW = 120.0
# An envelope delivered this many times and never acknowledged is delivered no more (a fetch
# that crashes on it every time cannot hold the mailbox for ever); it stays on the relay.
MAX_DELIVER = 100
MAX_ACK_PENDING = 1000


def mailbox_config(address: str, *, max_msgs: int, max_bytes: int, replicas: int) -> api.StreamConfig:
    return api.StreamConfig(
        name=STREAM_PREFIX + address,
        subjects=[SUBJECT_PREFIX + address],
        retention=api.RetentionPolicy.WORK_QUEUE,  # taken is gone: never counts against the limits
        max_msgs=max_msgs,
        max_bytes=max_bytes,
        discard=api.DiscardPolicy.NEW,  # full refuses the newest; never drops one waiting
        storage=api.StorageType.FILE,
        num_replicas=replicas,
        duplicate_window=DUPLICATE_WINDOW,
        allow_rollup_hdrs=False,
        deny_delete=True,
        deny_purge=True,
        allow_direct=False,
    )


def consumer_config(ack_wait: float) -> api.ConsumerConfig:
    return api.ConsumerConfig(
        durable_name=CONSUMER,
        ack_policy=api.AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        deliver_policy=api.DeliverPolicy.ALL,
        max_ack_pending=MAX_ACK_PENDING,
        max_deliver=MAX_DELIVER,
    )


def bucket_config(address: str, *, max_bytes: int, replicas: int) -> api.StreamConfig:
    """The object-store bucket for big envelopes, as nats-py would make it but that a publish
    cannot roll up, and only its owner purges (they delete an object by a subject purge)."""
    bucket = OBJECT_PREFIX + address
    return api.StreamConfig(
        name=f"OBJ_{bucket}",
        subjects=[f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"],
        max_bytes=max_bytes,
        discard=api.DiscardPolicy.NEW,
        storage=api.StorageType.FILE,
        num_replicas=replicas,
        allow_rollup_hdrs=False,
        deny_delete=True,
        deny_purge=False,
        allow_direct=False,
    )


def directory_config(*, replicas: int) -> api.StreamConfig:
    """The key-value directory, as nats-py would make it but with rollups, deletes and purges off:
    one person's publish cannot wipe another's record (a rollup) or the whole directory."""
    return api.StreamConfig(
        name=DIRECTORY_STREAM,
        subjects=[f"$KV.{DIRECTORY}.>"],
        max_msgs_per_subject=DIRECTORY_HISTORY,
        discard=api.DiscardPolicy.NEW,
        storage=api.StorageType.FILE,
        num_replicas=replicas,
        duplicate_window=DUPLICATE_WINDOW,
        max_msgs=-1,
        max_bytes=-1,
        max_msg_size=64 * 1024,
        allow_rollup_hdrs=False,
        deny_delete=True,
        deny_purge=True,
        allow_direct=True,
    )


# What a stream update may not change, or (a deny) may not turn off: kept as the stream has it.
_FIXED = ("retention", "storage")
_DENIES = ("deny_delete", "deny_purge")


@dataclass
class Made:
    """What `ensure` did to one stream."""

    name: str
    created: bool = False
    kept: list[str] = field(default_factory=list)  # wanted but not changed, in words


class NotPermitted(Exception):
    """This user may not make or change the stream (on a shared relay, only its operator may)."""


def _not_permitted(exc: Exception) -> bool:
    """No JetStream API answers this user there: no responders (nothing imported), or an account without JetStream."""
    if isinstance(exc, (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError)):
        return True
    return isinstance(exc, nats.js.errors.APIError) and exc.err_code == 10039  # jetstream not enabled for account


async def ensure(js: JetStreamContext, cfg: api.StreamConfig) -> Made:
    """The stream as `cfg` says: made, or updated where the server allows."""
    assert cfg.name is not None
    try:
        info = await js.stream_info(cfg.name)
    except nats.js.errors.NotFoundError:
        info = None
    except (nats.errors.Error, nats.js.errors.Error) as exc:
        if _not_permitted(exc):
            raise NotPermitted(cfg.name) from None
        raise
    if info is None:
        try:
            await js.add_stream(cfg)
        except (nats.errors.Error, nats.js.errors.Error) as exc:
            if _not_permitted(exc):
                raise NotPermitted(cfg.name) from None
            raise
        return Made(cfg.name, created=True)
    old = info.config
    made = Made(cfg.name)
    want: dict[str, Any] = {}
    for name in _FIXED:
        if _default(name, getattr(old, name)) != _default(name, getattr(cfg, name)):
            made.kept.append(_kept_fixed(cfg.name, name, getattr(old, name), getattr(cfg, name)))
            want[name] = getattr(old, name)
    for name in _DENIES:
        if getattr(old, name) and not getattr(cfg, name):
            want[name] = True
    if getattr(old, "allow_msg_ttl", None) and not getattr(cfg, "allow_msg_ttl", None):
        # Per-message TTLs cannot be turned off in place (nats-py's key-value buckets have them on):
        # kept; a writer can only age out what they themselves wrote.
        want["allow_msg_ttl"] = True
        made.kept.append(f"{cfg.name}: allow_msg_ttl stays true (it cannot be turned off in place)")
    new = dataclasses.replace(cfg, **want)
    if _same(old, new):
        return made
    try:
        await js.update_stream(new)
    except nats.js.errors.APIError as exc:
        if _not_permitted(exc):
            raise NotPermitted(cfg.name) from None
        # Some servers refuse to turn a deny on, or a rollup off, in place: keep those, say so.
        fallback = dataclasses.replace(new, **{n: getattr(old, n) for n in (*_DENIES, "allow_rollup_hdrs")})
        if _same(old, fallback):
            raise
        await js.update_stream(fallback)  # noqa: RET503
        for n in (*_DENIES, "allow_rollup_hdrs"):
            if getattr(old, n) != getattr(new, n):
                made.kept.append(f"{cfg.name}: {n} stays {getattr(old, n)} (the relay says: {exc.description or exc})")
    return made


def _default(name: str, v: Any) -> Any:
    if v is None:
        return {"retention": api.RetentionPolicy.LIMITS, "storage": api.StorageType.FILE}[name]
    return v


def _same(old: api.StreamConfig, new: api.StreamConfig) -> bool:
    if any(_default(n, getattr(old, n)) != _default(n, getattr(new, n)) for n in _FIXED):
        return False
    names = (
        "subjects", "max_msgs", "max_bytes", "discard", "num_replicas", "duplicate_window",
        "allow_rollup_hdrs", "deny_delete", "deny_purge", "allow_direct", "max_msgs_per_subject", "max_msg_size",
    )
    def norm(v: Any) -> Any:
        return None if v in (None, -1, 0) else v

    return all(norm(getattr(old, n)) == norm(getattr(new, n)) for n in names)


def _kept_fixed(stream: str, name: str, old: Any, new: Any) -> str:
    def word(v: Any) -> str:
        return str(getattr(v, "value", v))

    text = f"{stream}: {name} stays {word(old)} (wanted {word(new)}; a stream's {name} cannot be changed in place)"
    if name == "retention" and word(old) == "limits":
        text += (
            ": acknowledged envelopes keep counting against this mailbox's limits until they are over them; "
            "to fix it, fetch until the mailbox is empty, then the relay's operator removes the stream and runs "
            "`gage mailbox create` again"
        )
    return text


async def ensure_consumer(js: JetStreamContext, stream: str, cfg: api.ConsumerConfig) -> None:
    """The mailbox's durable consumer, made or brought to `cfg` (ack wait, max_deliver are updatable)."""
    try:
        await js.add_consumer(stream, cfg)
    except (nats.errors.Error, nats.js.errors.Error) as exc:
        if _not_permitted(exc):
            raise NotPermitted(stream) from None
        raise
