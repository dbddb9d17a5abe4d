"""gage's own reader of a big envelope in the mailbox's bucket, and its delete.

Anyone may publish chunks and metas into a bucket (spec/relay.md section 8), so nothing in one is
believed: nats-py's object store get follows links, waits without end for chunks that are not
there, reads the meta twice (once to check, once to read, so a meta swapped in between is what
is read), and hands back partial data when the relay dies mid-read. This reader uses the one
request the receiver is granted on its bucket, `$JS.API.STREAM.MSG.GET` (metas and chunks by
`seq` + `next_by_subj`), each with a deadline; reads the object from the very meta it checked; and
checks the size and the SHA-256 itself before the envelope is opened.

What the object is, its sender fixed in the mailbox message (`Named`: its name, size and SHA-256):
the reader takes the first meta under that name that says the same, never a later one, so a meta
anyone else writes under the name (after the sender's, which came before the message) is skipped
and costs nothing but its own read. A message from an older gage names only the object: its first
meta is read (the sender wrote it before the message, so nobody could have written under the name
before it). Three outcomes, told apart by type, never by message text:

- `ObjectError` (a `MalformedError`): the object is missing, malformed, oversized or not what its
  meta says. The envelope is the sender's fault: journaled once and acknowledged (dropped).
- `RelayError`: the relay did not answer in time or went away. Nothing is journaled or
  acknowledged; the envelope waits for the next fetch.
- `GageIOError`: this home could not write what was read (a full disk). Nothing is acknowledged.

An object is deleted with `$JS.API.STREAM.PURGE` and a subject filter: its chunks, then its meta.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

import nats.errors
from nats.aio.client import Client

from gage.carriers.relay import objects
from gage.carriers.relay.connection import api_subject
from gage.carriers.relay.errors import RelayError
from gage.format.errors import GageIOError, MalformedError

# The longest meta read (gage's is about 250 bytes): a bigger one is refused unread.
META_MAX = 8 * 1024
# A chunk is at most one message; one chunk of at least this size per count is required, so a
# meta cannot make a reader ask for a billion one-byte chunks.
MIN_CHUNK = 64 * 1024
MAX_CHUNK = 1024 * 1024
STEP_TIMEOUT = 10.0
# Chunk reads in flight at once: at most this many chunks (1 MiB each at the most) are held.
WINDOW = 8
_NUID = re.compile(r"[A-Za-z0-9]{1,64}")
_DIGEST = re.compile(r"SHA-256=([A-Za-z0-9_-]{43}=)")
_NAME = re.compile(r"[0-9a-f]{32}")
_SIZE = re.compile(r"[1-9][0-9]{0,15}")
# Metas read under one name before the object is given up: the sender's is the first, so more
# than one is a stranger's junk under a name they should not know.
META_TRIES = 16


class ObjectError(MalformedError):
    """The object an envelope names is missing, malformed, oversized or does not match its meta."""

    nuid: str | None = None  # its chunks' name, once a meta was read that names them


@dataclass(frozen=True)
class Named:
    """A big envelope as its mailbox message names it. `size` and `sha256` are None in a message
    from an older gage (the name alone)."""

    name: str
    size: int | None = None
    sha256: bytes | None = None


def named(headers: dict[str, str]) -> Named:
    """The object a mailbox message names (spec/relay.md section 4), or an ObjectError saying why not."""
    name = headers.get(objects.NAME_HEADER, "")
    if not _NAME.fullmatch(name):
        raise ObjectError("its Gage-Object header is not an object name gage writes (32 hex digits)")
    size, digest = headers.get(objects.SIZE_HEADER), headers.get(objects.DIGEST_HEADER)
    if size is None and digest is None:
        return Named(name)
    if size is None or not _SIZE.fullmatch(size):
        raise ObjectError("its Gage-Object-Size header is not a size in bytes")
    m = _DIGEST.fullmatch(digest or "")
    if m is None:
        raise ObjectError("its Gage-Object-Digest header is not SHA-256=<base64url of 32 bytes>")
    sha = base64.urlsafe_b64decode(m.group(1))
    if len(sha) != 32:
        raise ObjectError("its Gage-Object-Digest header is not SHA-256=<base64url of 32 bytes>")
    return Named(name, int(size), sha)


@dataclass(frozen=True)
class Meta:
    """The fields of a checked meta that the read uses: nothing else of it is kept."""

    name: str
    nuid: str
    size: int
    chunks: int
    sha256: bytes
    seq: int  # the meta message's sequence: its chunks were all stored before it


@dataclass(frozen=True)
class _Stored:
    subject: str
    seq: int
    data: bytes
    time: datetime.datetime | None


async def _get(nc: Client, stream: str, req: dict[str, Any], timeout: float) -> _Stored | None:
    """One `STREAM.MSG.GET`: the message, None when there is none; a relay failure raises RelayError."""
    try:
        reply = await nc.request(api_subject(nc, f"STREAM.MSG.GET.{stream}"), json.dumps(req).encode(), timeout=timeout)
    except nats.errors.TimeoutError:
        raise RelayError(f"the relay did not answer a read of the mailbox's bucket within {timeout:g} s; the envelope stays on the relay") from None
    except (nats.errors.Error, OSError) as exc:
        raise RelayError(f"the relay failed while the envelope was read ({type(exc).__name__}); it stays on the relay") from None
    try:
        resp = json.loads(reply.data)
        if "error" in resp:
            if resp["error"].get("code") == 404:
                return None
            raise RelayError(f"the relay refused a read of the mailbox's bucket: {str(resp['error'].get('description'))[:200]}")
        m = resp["message"]
        when = None
        if isinstance(m.get("time"), str):
            when = _parse_time(m["time"])
        return _Stored(subject=str(m["subject"]), seq=int(m["seq"]), data=base64.b64decode(m.get("data") or ""), time=when)
    except RelayError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
        raise RelayError("the relay answered a read of the mailbox's bucket with something that is not a stored message") from None


def _parse_time(text: str) -> datetime.datetime | None:
    """The server's RFC 3339 time with nanoseconds, to microseconds."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", text)
    if m is None:
        return None
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    return datetime.datetime.fromisoformat(f"{m.group(1)}.{frac}+00:00")


def check_meta(raw: bytes, bucket: str, name: str, seq: int, max_size: int) -> Meta:
    """What an honest writer's meta is (spec/relay.md section 4); anything else is an ObjectError."""
    if len(raw) > META_MAX:
        raise ObjectError(f"its meta is {len(raw)} bytes, over the {META_MAX} a meta may be")
    try:
        info = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ObjectError("its meta is not JSON") from None
    if not isinstance(info, dict):
        raise ObjectError("its meta is not a JSON object")
    if info.get("deleted", False) is not False:
        raise ObjectError("its meta says the object was deleted")
    options = info.get("options")
    if options is not None and not isinstance(options, dict):
        raise ObjectError("its meta's options are not an object")
    if (options or {}).get("link") is not None:
        raise ObjectError("its meta is a link to another object")
    if info.get("name") != name or info.get("bucket") != bucket:
        raise ObjectError("its meta names another object or bucket")
    nuid = info.get("nuid")
    if not isinstance(nuid, str) or not _NUID.fullmatch(nuid):
        raise ObjectError("its meta names no chunks (no nuid of 1 to 64 letters and digits)")
    size, chunks = info.get("size"), info.get("chunks")
    if type(size) is not int or type(chunks) is not int or size < 0 or chunks < 0:
        raise ObjectError("its meta's size or chunk count is not a whole number")
    if size > max_size:
        raise ObjectError(f"its meta says {size} bytes, over the {max_size} an envelope may be here")
    if (size == 0) != (chunks == 0) or chunks > -(-size // MIN_CHUNK) or size > chunks * MAX_CHUNK:
        raise ObjectError(f"its meta's size ({size}) and chunk count ({chunks}) do not agree")
    digest = info.get("digest")
    if not isinstance(digest, str):
        raise ObjectError("its meta has no digest")
    m = _DIGEST.fullmatch(digest)
    if m is None:
        raise ObjectError("its meta's digest is not SHA-256=<base64url of 32 bytes>")
    sha = base64.urlsafe_b64decode(m.group(1))
    if len(sha) != 32:
        raise ObjectError("its meta's digest is not SHA-256=<base64url of 32 bytes>")
    return Meta(name=name, nuid=nuid, size=size, chunks=chunks, sha256=sha, seq=seq)


async def read(nc: Client, bucket: str, obj: Named, out: BinaryIO, *, max_size: int, timeout: float = STEP_TIMEOUT) -> Meta:
    """Write the object `obj` names into `out` and return the meta it was read from (already checked).

    The first meta under its name that matches it (its size and SHA-256, when the message names
    them) is the sender's: its chunks are read, and a fault in them is the envelope's. A meta that
    does not match is skipped; after META_TRIES metas, or none, the object is missing."""
    if obj.size is not None and obj.size > max_size:
        raise ObjectError(f"its mailbox message says {obj.size} bytes, over the {max_size} an envelope may be here")
    stream = objects.stream_of(bucket)
    subj = objects.meta_subject(bucket, obj.name)
    seq, skipped = 0, 0
    while skipped < META_TRIES:
        got = await _get(nc, stream, {"seq": seq + 1, "next_by_subj": subj}, timeout)
        if got is None:
            break
        if got.subject != subj or got.seq <= seq:
            raise RelayError("the relay answered a read of a meta with another message")
        seq = got.seq
        meta = check_meta(got.data, bucket, obj.name, got.seq, max_size) if obj.size is None else matches(got.data, got.seq, bucket, obj, max_size)
        if meta is None:
            skipped += 1
            continue
        try:
            await _chunks(nc, stream, bucket, meta, out, timeout)
        except ObjectError as exc:
            exc.nuid = meta.nuid
            raise
        return meta
    if skipped:
        raise ObjectError(f"no meta in the mailbox's bucket matches its mailbox message ({skipped} under its name do not)")
    raise ObjectError("its object is not in the mailbox's bucket (never put, or deleted)")


def matches(raw: bytes, seq: int, bucket: str, obj: Named, max_size: int) -> Meta | None:
    """The meta stored at `seq`, when it is well-formed and says the object's size and SHA-256; else None."""
    try:
        meta = check_meta(raw, bucket, obj.name, seq, max_size)
    except ObjectError:
        return None
    return meta if (meta.size, meta.sha256) == (obj.size, obj.sha256) else None


async def _next_chunks(nc: Client, stream: str, subj: str, after: int, before: int, timeout: float) -> list[_Stored]:
    """The chunks on `subj` after sequence `after` and before `before`, the next few in order.

    One request alone finds the first chunk (the stream may begin far past sequence 1). Then a
    window of requests at once, from `after + 1` to `after + WINDOW`, each for the first chunk at
    or past its sequence: their distinct answers are exactly the chunks in that range and the
    first one past it, so consecutive chunks whatever else the stream holds between them, and
    one round trip brings up to WINDOW chunks instead of one."""
    starts = range(after + 1, min(after + (WINDOW if after else 1), before - 1) + 1)
    got = await asyncio.gather(*(_get(nc, stream, {"seq": s, "next_by_subj": subj}, timeout) for s in starts))
    found: dict[int, _Stored] = {}
    for start, chunk in zip(starts, got, strict=True):
        if chunk is None:
            continue
        if chunk.subject != subj or chunk.seq < start:
            raise RelayError("the relay answered a read of a chunk with another message")
        if chunk.seq < before:  # a chunk stored after its meta is no part of it
            found[chunk.seq] = chunk
    return [found[k] for k in sorted(found)]


async def _chunks(nc: Client, stream: str, bucket: str, meta: Meta, out: BinaryIO, timeout: float) -> None:
    """The chunks the meta names, in order, each stored before it, adding up to its size and digest."""
    subj = objects.chunk_subject(bucket, meta.nuid)
    h = hashlib.sha256()
    done = count = last = 0
    while True:
        chunks = await _next_chunks(nc, stream, subj, last, meta.seq, timeout)
        if not chunks:
            break
        for chunk in chunks:
            count += 1
            if count > meta.chunks:
                raise ObjectError(f"the bucket holds more chunks than the {meta.chunks} its meta says")
            if not chunk.data or len(chunk.data) > MAX_CHUNK or done + len(chunk.data) > meta.size:
                raise ObjectError(f"its chunks do not add up to the {meta.size} bytes its meta says")
            h.update(chunk.data)
            done += len(chunk.data)
            last = chunk.seq
            try:
                out.write(chunk.data)
            except OSError as exc:
                raise GageIOError(f"cannot write the envelope into this home: {exc.strerror or exc}") from exc
    if count < meta.chunks:
        raise ObjectError(f"a chunk is missing: the bucket holds {count} of the {meta.chunks} its meta says")
    if done != meta.size:
        raise ObjectError(f"its chunks hold {done} bytes; its meta says {meta.size}")
    if h.digest() != meta.sha256:
        raise ObjectError("its bytes do not match the SHA-256 its meta says")


async def _purge(nc: Client, stream: str, subject: str, timeout: float) -> None:
    try:
        reply = await nc.request(api_subject(nc, f"STREAM.PURGE.{stream}"), json.dumps({"filter": subject}).encode(), timeout=timeout)
        resp = json.loads(reply.data)
    except (nats.errors.Error, OSError, ValueError) as exc:
        raise RelayError(f"the relay failed to delete an object ({type(exc).__name__})") from None
    if not isinstance(resp, dict) or not resp.get("success"):
        raise RelayError("the relay refused to delete an object")


async def delete(nc: Client, bucket: str, name: str, nuid: str | None, *, timeout: float = STEP_TIMEOUT) -> None:
    """Purge the object's chunks (when its nuid is known), then every meta under its name."""
    stream = objects.stream_of(bucket)
    if nuid is not None and _NUID.fullmatch(nuid):
        await _purge(nc, stream, objects.chunk_subject(bucket, nuid), timeout)
    await _purge(nc, stream, objects.meta_subject(bucket, name), timeout)
