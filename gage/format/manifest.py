"""The manifest: a closed, versioned schema, parsed from exact bytes and never re-serialised.

`Manifest.parse` keeps the bytes it was given; the id and the signature are always
computed over those bytes. A reader rejects an unknown version, kind or field rather
than guess what a newer writer meant.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from gage.format import sha256, strictjson
from gage.format.errors import MalformedError, UsageError
from gage.format.keys import MAX_CLAIMED_NAME, key_text, parse_key
from gage.format.manifest_files import FILE_FIELDS as FILE_FIELDS

# The files list lives in manifest_files; gage and its tests import these names from here.
from gage.format.manifest_files import (
    HEX64,
    exact_fields,
    fail,
    parse_files,
)
from gage.format.manifest_files import MAX_COMPONENT as MAX_COMPONENT
from gage.format.manifest_files import MAX_FILES as MAX_FILES
from gage.format.manifest_files import MAX_PATH as MAX_PATH
from gage.format.manifest_files import MAX_SIZE as MAX_SIZE
from gage.format.manifest_files import FileEntry as FileEntry
from gage.format.manifest_files import check_path as check_path
from gage.format.manifest_files import fold_path as fold_path
from gage.format.record import Frozen, set_field
from gage.format.vocab import KINDS as VOCAB_KINDS

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

    from gage.format.vocab import Kind

VERSION = 1
KINDS: tuple[Kind, ...] = VOCAB_KINDS
KINDS_NEEDING_PARENT: tuple[Kind, ...] = ("answer", "ack")
# 4 MiB: 10,000 files (MAX_FILES) with paths of up to about 300 bytes each fit (an entry is
# its path plus about 110 bytes); 1 MiB held 10,000 files only with paths of a few bytes.
MANIFEST_LIMIT = 4 << 20
MAX_RECIPIENTS = 100
MAX_CHAIN = 16
MAX_SUBJECT = 1000
ID_CONTEXT = b"gage/id/v1\x00"

_HEX32 = re.compile(r"[0-9a-f]{32}\Z")
# [0-9], never \d: in Python \d (and strptime) also match Arabic-Indic, full-width and other digits.
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z")

TOP_FIELDS = {"gage", "kind", "created", "nonce", "sender", "thread", "parent", "to", "subject", "files", "chain"}
PARTY_FIELDS = {"key", "name"}
HOP_FIELDS = {"key", "name", "bundle", "kind", "created"}


def bundle_id(manifest_bytes: bytes) -> str:
    """The content address: SHA-256 over a context prefix and the exact manifest bytes."""
    return sha256.hexdigest(ID_CONTEXT + manifest_bytes)


def is_id(text: str) -> bool:
    return bool(HEX64.match(text))


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Party(Frozen):
    __slots__ = ("key", "name")
    key: bytes
    name: str  # a claim made by whoever signed the manifest

    def __init__(self, key: bytes, name: str) -> None:
        set_field(self, "key", key)
        set_field(self, "name", name)

    def to_json(self) -> dict[str, str]:
        return {"key": key_text(self.key), "name": self.name}


class Hop(Frozen):
    """An earlier hop of a forwarded bundle: what the forwarder says, not a fact."""

    __slots__ = ("key", "name", "bundle", "kind", "created")
    key: bytes
    name: str
    bundle: str
    kind: Kind
    created: str

    def __init__(
        self, key: bytes, name: str, bundle: str, kind: Kind, created: str
    ) -> None:
        set_field(self, "key", key)
        set_field(self, "name", name)
        set_field(self, "bundle", bundle)
        set_field(self, "kind", kind)
        set_field(self, "created", created)

    def to_json(self) -> dict[str, str]:
        return {"key": key_text(self.key), "name": self.name, "bundle": self.bundle, "kind": self.kind, "created": self.created}


class Manifest(Frozen):
    __slots__ = (
        "raw",
        "kind",
        "created",
        "nonce",
        "sender",
        "thread",
        "parent",
        "to",
        "subject",
        "files",
        "chain",
        "_id",
    )
    raw: bytes
    kind: Kind
    created: str
    nonce: str
    sender: Party
    thread: str | None
    parent: str | None
    to: tuple[Party, ...]
    subject: str | None
    files: tuple[FileEntry, ...]
    chain: tuple[Hop, ...]
    # The id, remembered on first use (`id`): not compared, shown or taken by __init__.
    _id: str | None
    _uncompared = ("_id",)
    _unshown = ("_id",)
    _uninit = ("_id",)

    def __init__(
        self,
        raw: bytes,
        kind: Kind,
        created: str,
        nonce: str,
        sender: Party,
        thread: str | None,
        parent: str | None,
        to: tuple[Party, ...],
        subject: str | None,
        files: tuple[FileEntry, ...],
        chain: tuple[Hop, ...] = (),
    ) -> None:
        set_field(self, "raw", raw)
        set_field(self, "kind", kind)
        set_field(self, "created", created)
        set_field(self, "nonce", nonce)
        set_field(self, "sender", sender)
        set_field(self, "thread", thread)
        set_field(self, "parent", parent)
        set_field(self, "to", to)
        set_field(self, "subject", subject)
        set_field(self, "files", files)
        set_field(self, "chain", chain)
        set_field(self, "_id", None)

    @property
    def id(self) -> str:
        # Remembered on first use: `raw` never changes (frozen), and a listing asks many times.
        found = self._id
        if found is None:
            found = bundle_id(self.raw)
            set_field(self, "_id", found)
        return found

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def thread_root(self) -> str:
        """The id a conversation is keyed on: the thread, or this bundle if it starts one."""
        return self.thread or self.id

    @classmethod
    def parse(cls, raw: bytes) -> Manifest:
        obj = strictjson.loads(raw, limit=MANIFEST_LIMIT, what="manifest.json")
        return _from_obj(raw, obj)

    @classmethod
    def build(
        cls,
        *,
        kind: Kind,
        sender: Party,
        files: list[FileEntry],
        nonce: str,
        created: str | None = None,
        thread: str | None = None,
        parent: str | None = None,
        to: list[Party] | None = None,
        subject: str | None = None,
        chain: list[Hop] | None = None,
    ) -> Manifest:
        obj = _build_obj(
            kind=kind, sender=sender, files=files, nonce=nonce, created=created, thread=thread, parent=parent, to=to, subject=subject, chain=chain
        )
        raw = strictjson.dumps(obj)
        # Parse what we wrote so a writer can never produce what a reader refuses.
        return cls.parse(raw)


def _build_obj(
    *,
    kind: Kind,
    sender: Party,
    files: list[FileEntry],
    nonce: str,
    created: str | None = None,
    thread: str | None = None,
    parent: str | None = None,
    to: list[Party] | None = None,
    subject: str | None = None,
    chain: list[Hop] | None = None,
) -> dict[str, Any]:
    return {
        "gage": VERSION,
        "kind": kind,
        "created": created or now_text(),
        "nonce": nonce,
        "sender": sender.to_json(),
        "thread": thread,
        "parent": parent,
        "to": [p.to_json() for p in (to or [])],
        "subject": subject,
        "files": [f.to_json() for f in sorted(files, key=lambda f: f.path)],
        "chain": [h.to_json() for h in (chain or [])],
    }


class ManifestTooLargeError(UsageError):
    """The files asked for would make a manifest over MANIFEST_LIMIT bytes or MAX_FILES entries.

    Raised before anything is copied: the limit is known from the paths and sizes alone.
    """


def check_fits(files: list[tuple[str, int]], **fields: Any) -> int:
    """The size of the manifest these (path, size) pairs would make with `fields` (the other
    arguments of `Manifest.build`); raises ManifestTooLargeError, naming the limit, when over."""
    if len(files) > MAX_FILES:
        raise ManifestTooLargeError(f"{len(files)} files is more than a bundle holds (at most {MAX_FILES}); nothing was copied")
    probe = [FileEntry(path=p, size=n, sha256="0" * 64) for p, n in files]
    size = len(strictjson.dumps(_build_obj(files=probe, nonce="0" * 32, **fields)))
    if size > MANIFEST_LIMIT:
        raise ManifestTooLargeError(
            f"these {len(files)} files need a manifest of {size} bytes, over the limit of {MANIFEST_LIMIT} bytes "
            f"({MANIFEST_LIMIT >> 20} MiB): bundle fewer files or shorter paths; nothing was copied"
        )
    return size


def _string(value: Any, where: str, *, limit: int, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise fail("must be a string" + (" or null" if nullable else ""), where)
    if len(value) > limit:
        raise fail(f"longer than {limit} characters", where)
    return value


def _id(value: Any, where: str, *, nullable: bool) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not HEX64.match(value):
        raise fail("must be a bundle id (64 lower-case hex digits)" + (" or null" if nullable else ""), where)
    return value


def time_problem(value: Any) -> str | None:
    """Why `value` is not a time as gage writes one (manifests, key statements), or None."""
    if not isinstance(value, str) or not _TIME.match(value):
        return "must be a UTC time like 2026-01-31T12:00:00Z"
    try:
        # The fields by position (the pattern fixed them as ASCII digits), checked by datetime
        # itself: what strptime with "%Y-%m-%dT%H:%M:%SZ" accepts, without loading strptime's
        # locale machinery at start-up (tests/test_manifest_time.py holds the two equal).
        datetime(int(value[0:4]), int(value[5:7]), int(value[8:10]), int(value[11:13]), int(value[14:16]), int(value[17:19]))
    except ValueError:
        return "is not a real date and time"
    return None


def _time(value: Any, where: str) -> str:
    problem = time_problem(value)
    if problem is not None:
        raise fail(problem, where)
    return str(value)  # time_problem refuses anything but a str


def _kind(value: Any, where: str) -> Kind:
    for kind in KINDS:
        if value == kind:
            return kind
    raise fail(f"unknown kind {value!r}; expected one of {', '.join(KINDS)}", where)


def _key_and_name(obj: dict[str, Any], where: str) -> tuple[bytes, str]:
    """A key and the name claimed for it: shared by the sender, recipients and chain hops."""
    try:
        key = parse_key(obj["key"], field=f"{where}.key")
    except MalformedError as exc:
        raise fail(exc.message, f"{where}.key") from exc
    name = _string(obj["name"], f"{where}.name", limit=MAX_CLAIMED_NAME)
    assert name is not None
    return key, name


def _party(value: Any, where: str) -> Party:
    key, name = _key_and_name(exact_fields(value, PARTY_FIELDS, where), where)
    return Party(key=key, name=name)


def _hop(value: Any, where: str) -> Hop:
    obj = exact_fields(value, HOP_FIELDS, where)
    key, name = _key_and_name(obj, where)
    return Hop(
        key=key,
        name=name,
        bundle=_id(obj["bundle"], f"{where}.bundle", nullable=False) or "",
        kind=_kind(obj["kind"], f"{where}.kind"),
        created=_time(obj["created"], f"{where}.created"),
    )


def _from_obj(raw: bytes, obj: Any) -> Manifest:
    if not isinstance(obj, dict):
        raise fail("the manifest must be a JSON object", "(top)")
    version = obj.get("gage")
    if version != VERSION or isinstance(version, bool):
        raise fail(f"unknown manifest version {version!r}; this gage reads version {VERSION}", "gage")
    obj = exact_fields(obj, TOP_FIELDS, "(top)")
    kind = _kind(obj["kind"], "kind")
    created = _time(obj["created"], "created")
    nonce = obj["nonce"]
    if not isinstance(nonce, str) or not _HEX32.match(nonce):
        raise fail("must be 32 lower-case hex digits", "nonce")
    sender = _party(obj["sender"], "sender")
    thread = _id(obj["thread"], "thread", nullable=True)
    parent = _id(obj["parent"], "parent", nullable=True)
    if (thread is None) != (parent is None):
        raise fail("thread and parent are both null (a new thread) or both set (a reply)", "thread")
    if kind in KINDS_NEEDING_PARENT and parent is None:
        raise fail(f"a bundle of kind {kind!r} must have a parent", "parent")
    to_list = obj["to"]
    if not isinstance(to_list, list) or len(to_list) > MAX_RECIPIENTS:
        raise fail(f"must be a list of at most {MAX_RECIPIENTS} recipients", "to")
    to = tuple(_party(p, f"to[{i}]") for i, p in enumerate(to_list))
    subject = _string(obj["subject"], "subject", limit=MAX_SUBJECT, nullable=True)
    files = parse_files(obj["files"])
    chain_list = obj["chain"]
    if not isinstance(chain_list, list) or len(chain_list) > MAX_CHAIN:
        raise fail(f"must be a list of at most {MAX_CHAIN} hops", "chain")
    chain = tuple(_hop(h, f"chain[{i}]") for i, h in enumerate(chain_list))
    return Manifest(
        raw=raw,
        kind=kind,
        created=created,
        nonce=nonce,
        sender=sender,
        thread=thread,
        parent=parent,
        to=to,
        subject=subject,
        files=files,
        chain=chain,
    )
