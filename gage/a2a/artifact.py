"""A bundle as an A2A Artifact or Message (protocol 1.0 or 0.3), and back, byte for byte.

Every file of the bundle, the manifest first, rides as its own bytes part, so no hop
ever holds the manifest as JSON it could re-serialise: the bytes that were signed are
the bytes that arrive. What the A2A envelope says (the id in the metadata, the agent
that sent it) is a claim; the id is recomputed from the manifest bytes and the bundle
lands in `inbox/pending` through the same import as a bundle from a folder. A task
state or a message never accepts anything. See spec/a2a.md.

This module writes and reads the JSON shapes itself: it is the contract, and it needs
no SDK. The SDK is used by the tests to prove it, and by `live` to serve.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .. import atomic, ceremony, settings, store
from .. import bundle as bundle_mod
from ..errors import (
    GageIOError,
    MalformedError,
    RefusedError,
    TamperedError,
    UsageError,
)
from ..home import Home
from ..keys import (
    MAX_CLAIMED_NAME,
    SIGNATURE_LEN,
    key_text,
    parse_key,
    verify_manifest_signature,
)
from ..manifest import MANIFEST_LIMIT, MAX_FILES, Manifest
from ..settings import DEFAULT_A2A_MAX_BYTES as DEFAULT_MAX_BYTES
from ..strictjson import loads as strict_loads

EXTENSION_URI = "urn:gage:a2a:bundle"
FORMAT_VERSION = "1"
VERSIONS = (FORMAT_VERSION,)
OBJECT_KINDS = ("bundle",)
PROTOCOLS = ("1.0", "0.3")
DEFAULT_PROTOCOL = "1.0"

MANIFEST_PART = bundle_mod.MANIFEST
SIGNATURE_PART = bundle_mod.SIGNATURE
PAYLOAD_PREFIX = bundle_mod.PAYLOAD + "/"
MANIFEST_MEDIA_TYPE = "application/vnd.gage.manifest+json"
SIGNATURE_MEDIA_TYPE = "application/vnd.gage.signature"
SIGNATURE_LIMIT = 4096  # a signature is 64 bytes; anything near this is not one

# Media types are informational (a reader never acts on them) but fixed, so an export is
# the same on every machine: the system's mime tables differ.
PAYLOAD_MEDIA_TYPES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
    ".html": "text/html",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".zip": "application/zip",
    ".gz": "application/gzip",
    ".tar": "application/x-tar",
}
DEFAULT_MEDIA_TYPE = "application/octet-stream"

MAX_CARD_URL = 2048
MAX_TASK_ARTIFACTS = 100

# The closed metadata object under metadata[EXTENSION_URI]: every value a string.
REQUIRED_META = ("version", "kind", "bundle", "manifest", "signature")
CLAIM_META = ("from_name", "from_key", "from_card")
ALLOWED_META = frozenset(REQUIRED_META + CLAIM_META)

_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")
_PART_FIELDS_10 = frozenset({"text", "raw", "url", "data", "filename", "mediaType", "metadata"})
_CONTENT_10 = ("text", "raw", "url", "data")
_FILE_FIELDS_03 = frozenset({"bytes", "uri", "name", "mimeType"})
_PART_FIELDS_03 = frozenset({"kind", "file", "text", "data", "metadata"})


# --- limits -------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """What a receiver takes over A2A. `max_bytes` is set in the home's settings.toml."""

    max_bytes: int = DEFAULT_MAX_BYTES

    @property
    def max_request_bytes(self) -> int:
        """The largest JSON body worth reading: the payload in base64, two manifests' worth, and room for the envelope."""
        return (self.max_bytes + 2 * MANIFEST_LIMIT + 2) // 3 * 4 + (1 << 20)

    @classmethod
    def of(cls, home: Home) -> Limits:
        return cls(max_bytes=settings.load(home).a2a_max_bytes)


# --- writing ------------------------------------------------------------------------


def media_type(path: str) -> str:
    return PAYLOAD_MEDIA_TYPES.get(PurePosixPath(path).suffix.lower(), DEFAULT_MEDIA_TYPE)


@dataclass
class Held:
    """A bundle's exact bytes, read once and checked against its manifest."""

    manifest: Manifest
    signature: bytes
    files: list[tuple[str, bytes]]

    @property
    def total(self) -> int:
        return len(self.manifest.raw) + len(self.signature) + sum(len(b) for _, b in self.files)


def _read_declared(root: Path, path: str, size: int, digest: str) -> bytes:
    """Read one payload file, never more than the manifest declares, and check its hash."""
    fd = bundle_mod.open_beneath(root, f"{bundle_mod.PAYLOAD}/{path}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TamperedError("is not a regular file", path=f"{PAYLOAD_PREFIX}{path}")
        chunks = []
        left = size + 1
        while left > 0:
            chunk = os.read(fd, min(left, bundle_mod.CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise TamperedError("changed while being exported; nothing was written", path=f"{PAYLOAD_PREFIX}{path}")
    return data


def hold(bundle_dir: Path, *, limits: Limits | None = None) -> Held:
    """The bytes to export. Only a bundle that checks out travels: an exporter that
    carried a damaged bundle on would make the damage look like the transport's."""
    limits = limits or Limits()
    result = bundle_mod.check(bundle_dir)
    if not result.ok or result.manifest is None:
        first = result.first_error()
        raise RefusedError(f"does not verify, so it is not exported: {first}", path=str(bundle_dir))
    m = result.manifest
    # Counted as a receiver counts: manifest, signature and payload.
    declared = len(m.raw) + SIGNATURE_LEN + m.total_size
    if declared > limits.max_bytes:
        raise RefusedError(
            f"holds {declared} bytes, over the A2A limit of {limits.max_bytes} (a receiver with the default limit "
            "would refuse it too); raise it with --max-bytes, or move this bundle as a folder",
            path=str(bundle_dir),
        )
    try:
        raw, _again = bundle_mod.read_manifest(bundle_dir)
        if raw != m.raw:
            raise TamperedError("changed while being exported; nothing was written", path=MANIFEST_PART)
        sig = bundle_mod._read_small(bundle_dir / SIGNATURE_PART, SIGNATURE_LIMIT)
        files = [(f.path, _read_declared(bundle_dir, f.path, f.size, f.sha256)) for f in m.files]
    except OSError as exc:
        raise GageIOError(f"cannot read the bundle: {exc.strerror or exc}", path=str(bundle_dir)) from exc
    # The signature was checked over the manifest we hold; check the signature we read is that one.
    verify_manifest_signature(m.sender.key, raw, sig)
    return Held(manifest=m, signature=sig, files=files)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _file_list(held: Held) -> list[tuple[str, str, bytes]]:
    """(part filename, media type, bytes), the manifest first: the order every export uses."""
    out = [(MANIFEST_PART, MANIFEST_MEDIA_TYPE, held.manifest.raw), (SIGNATURE_PART, SIGNATURE_MEDIA_TYPE, held.signature)]
    out += [(PAYLOAD_PREFIX + path, media_type(path), data) for path, data in held.files]
    return out


def _parts(held: Held, protocol: str) -> list[dict[str, Any]]:
    if protocol == "1.0":
        return [{"raw": _b64(data), "filename": name, "mediaType": mt} for name, mt, data in _file_list(held)]
    return [{"kind": "file", "file": {"bytes": _b64(data), "name": name, "mimeType": mt}} for name, mt, data in _file_list(held)]


def _check_claims(claims: dict[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (claims or {}).items():
        if k not in CLAIM_META:
            raise ValueError(f"unknown claim {k!r}")
        out[k] = v
    return out


def _metadata(held: Held, claims: dict[str, str] | None) -> dict[str, Any]:
    ext: dict[str, str] = {
        "version": FORMAT_VERSION,
        "kind": "bundle",
        "bundle": held.manifest.id,
        "manifest": MANIFEST_PART,
        "signature": SIGNATURE_PART,
    }
    ext.update(_check_claims(claims))
    return {EXTENSION_URI: ext}


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise UsageError(f"unknown A2A protocol version {protocol!r}: use 1.0 or 0.3")
    return protocol


def artifact_of(held: Held, *, protocol: str = DEFAULT_PROTOCOL) -> dict[str, Any]:
    check_protocol(protocol)
    m = held.manifest
    return {
        "artifactId": m.id,
        "name": f"gage bundle {m.id[:12]}",
        "description": (
            f"A signed gage bundle ({m.kind}). Its manifest, signature and files are bytes parts; "
            "verify it with gage: nothing in this artifact is trusted because of how it arrived."
        ),
        "parts": _parts(held, protocol),
        "metadata": _metadata(held, None),
        "extensions": [EXTENSION_URI],
    }


def export_artifact(bundle_dir: Path, *, protocol: str = DEFAULT_PROTOCOL, limits: Limits | None = None) -> dict[str, Any]:
    """An A2A Artifact (as a JSON object) carrying the bundle at `bundle_dir`."""
    check_protocol(protocol)
    return artifact_of(hold(bundle_dir, limits=limits), protocol=protocol)


def export_message(
    bundle_dir: Path,
    *,
    protocol: str = DEFAULT_PROTOCOL,
    message_id: str | None = None,
    claims: dict[str, str] | None = None,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """An A2A Message from a user to an agent, carrying one bundle.

    `claims` (from_name, from_key, from_card) say who the sending agent is. They are the
    transport's word only: the receiver shows them beside the signature, never instead.
    """
    check_protocol(protocol)
    held = hold(bundle_dir, limits=limits)
    msg: dict[str, Any] = {}
    if protocol == "0.3":
        msg["kind"] = "message"
    msg.update(
        {
            "messageId": message_id or secrets.token_hex(16),
            "role": "ROLE_USER" if protocol == "1.0" else "user",
            "parts": _parts(held, protocol),
            "metadata": _metadata(held, claims),
            "extensions": [EXTENSION_URI],
        }
    )
    return msg


# --- reading ------------------------------------------------------------------------


@dataclass
class Carried:
    """One bundle taken out of an A2A object, checked against the format, not yet written."""

    manifest: Manifest
    signature: bytes
    files: dict[str, bytes]
    protocol: str
    claims: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.manifest.id


@dataclass
class Landed:
    id: str
    state: str
    new: bool
    ok: bool
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # the first check failure, when the bundle does not verify

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "new": self.new, "ok": self.ok, "notes": self.notes, "problem": self.problem}


def _bad(message: str, where: str) -> MalformedError:
    return MalformedError(message, field=where)


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad("must be a JSON object", where)
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad("must be a string", where)
    return value


def decode_b64(text: Any, where: str, *, limit: int) -> bytes:
    """Standard base64 with padding, in canonical form, and nothing else.

    The URL-safe alphabet, missing padding, white space and non-zero spare bits are all
    refused: two decoders can read such text as different bytes, and the SDK's 0.3 path
    has been seen to.
    """
    if not isinstance(text, str):
        raise _bad("bytes must be a base64 string", where)
    size = len(text) // 4 * 3 - text[-2:].count("=")
    if size > limit:
        raise RefusedError(f"holds {size} bytes, over the limit of {limit}", field=where)
    if len(text) % 4 or not _B64.match(text):
        if "-" in text or "_" in text:
            raise _bad("is URL-safe base64; gage takes standard base64 with padding only", where)
        raise _bad("is not standard base64 with padding", where)
    data = base64.b64decode(text, validate=True)
    if base64.b64encode(data).decode("ascii") != text:
        raise _bad("is not canonical base64 (non-zero spare bits)", where)
    return data


def _part_file(part: Any, protocol: str, where: str, limit: int) -> tuple[str, bytes]:
    """The (filename, bytes) of one bytes part, or an error naming what it is instead."""
    part = _obj(part, where)
    if protocol == "1.0":
        unknown = sorted(set(part) - _PART_FIELDS_10)
        if unknown:
            raise _bad(f"unknown part field {unknown[0]!r}", where)
        content = [k for k in _CONTENT_10 if k in part]
        if len(content) != 1:
            raise _bad("must hold exactly one of text, raw, url, data", where)
        name = part.get("filename")
        kind = content[0]
        value = part[kind]
    else:
        unknown = sorted(set(part) - _PART_FIELDS_03)
        if unknown:
            raise _bad(f"unknown part field {unknown[0]!r}", where)
        kind = part.get("kind")
        if kind == "file":
            f = _obj(part.get("file"), f"{where}.file")
            unknown = sorted(set(f) - _FILE_FIELDS_03)
            if unknown:
                raise _bad(f"unknown file field {unknown[0]!r}", f"{where}.file")
            if ("bytes" in f) == ("uri" in f):
                raise _bad("a file part must hold exactly one of bytes, uri", f"{where}.file")
            name = f.get("name")
            kind, value = ("raw", f["bytes"]) if "bytes" in f else ("url", f["uri"])
            where = f"{where}.file"
        elif kind in ("text", "data"):
            name, value = None, part.get(kind)
        else:
            raise _bad(f"unknown part kind {kind!r}", f"{where}.kind")
    shown = f" {name!r}" if isinstance(name, str) else ""
    if kind == "url":
        raise RefusedError(f"is a url part{shown}: gage never fetches a url; every file must travel as bytes", field=where)
    if kind in ("text", "data"):
        if name == MANIFEST_PART or (kind == "data" and name is None):
            what = "the manifest" if name == MANIFEST_PART else "JSON"
            raise RefusedError(
                f"carries {what} as a {kind} part: a hop may re-serialise it, "
                "so the signed bytes would not survive; the manifest and every file must be bytes parts",
                field=where,
            )
        raise RefusedError(f"is a {kind} part{shown}; a gage bundle carries only bytes parts", field=where)
    name = _str(name, f"{where}.{'filename' if protocol == '1.0' else 'name'}")
    return name, decode_b64(value, f"{where}.{'raw' if protocol == '1.0' else 'bytes'}", limit=limit)


def _extension_meta(obj: dict[str, Any], where: str) -> dict[str, str] | None:
    """The closed gage metadata object, or None when the object does not claim to carry a bundle."""
    exts = obj.get("extensions", [])
    if not isinstance(exts, list) or not all(isinstance(e, str) for e in exts):
        raise _bad("must be a list of URIs", f"{where}.extensions")
    metadata = obj.get("metadata")
    meta = metadata.get(EXTENSION_URI) if isinstance(metadata, dict) else None
    if EXTENSION_URI not in exts and meta is None:
        return None
    if meta is None:
        raise _bad(f"lists the gage extension but has no metadata[{EXTENSION_URI!r}]", f"{where}.metadata")
    meta = _obj(meta, f"{where}.metadata[{EXTENSION_URI}]")
    mwhere = f"{where}.metadata[gage]"
    unknown = sorted(set(meta) - ALLOWED_META)
    if unknown:
        raise _bad(f"unknown field {unknown[0]!r} (this gage reads format version {FORMAT_VERSION})", mwhere)
    for k, v in meta.items():
        if not isinstance(v, str):
            raise _bad("every value must be a string", f"{mwhere}.{k}")
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise _bad(f"missing field {missing[0]!r}", mwhere)
    if meta["version"] not in VERSIONS:
        raise RefusedError(f"unknown format version {meta['version']!r}; this gage reads {', '.join(VERSIONS)}", field=f"{mwhere}.version")
    if meta["kind"] not in OBJECT_KINDS:
        raise RefusedError(f"unknown kind {meta['kind']!r}; this gage carries {', '.join(OBJECT_KINDS)}", field=f"{mwhere}.kind")
    if meta["manifest"] != MANIFEST_PART or meta["signature"] != SIGNATURE_PART:
        raise _bad(f"the manifest and signature parts are named {MANIFEST_PART!r} and {SIGNATURE_PART!r} in version 1", mwhere)
    if EXTENSION_URI not in exts:
        raise _bad("carries gage metadata but does not list the gage extension", f"{where}.extensions")
    return meta


def _claims(meta: dict[str, str], where: str) -> dict[str, str]:
    claims = {k: meta[k] for k in CLAIM_META if k in meta}
    if "from_key" in claims:
        claims["from_key"] = key_text(parse_key(claims["from_key"], field=f"{where}.from_key"))
    if len(claims.get("from_name", "")) > MAX_CLAIMED_NAME:
        raise _bad(f"longer than {MAX_CLAIMED_NAME} characters", f"{where}.from_name")
    if len(claims.get("from_card", "")) > MAX_CARD_URL:
        raise _bad(f"longer than {MAX_CARD_URL} characters", f"{where}.from_card")
    return claims


def _carried(holder: dict[str, Any], meta: dict[str, str], protocol: str, where: str, budget: list[int]) -> Carried:
    parts = holder.get("parts")
    if not isinstance(parts, list) or not parts:
        raise _bad("must be a non-empty list of parts", f"{where}.parts")
    if len(parts) > MAX_FILES + 2:
        raise RefusedError(f"has {len(parts)} parts; a bundle has at most {MAX_FILES} files and two more parts", field=f"{where}.parts")
    got: dict[str, bytes] = {}
    for i, part in enumerate(parts):
        pwhere = f"{where}.parts[{i}]"
        name, data = _part_file(part, protocol, pwhere, budget[0])
        budget[0] -= len(data)
        if budget[0] < 0:
            raise RefusedError("the bundle is over the receiver's A2A size limit", field=pwhere)
        if name in got:
            raise _bad(f"repeats the file {name!r}", pwhere)
        got[name] = data
    if MANIFEST_PART not in got:
        raise _bad(f"has no {MANIFEST_PART!r} bytes part", f"{where}.parts")
    if SIGNATURE_PART not in got:
        raise _bad(f"has no {SIGNATURE_PART!r} bytes part", f"{where}.parts")
    raw = got.pop(MANIFEST_PART)
    sig = got.pop(SIGNATURE_PART)
    if len(raw) > MANIFEST_LIMIT:
        raise RefusedError(f"the manifest is {len(raw)} bytes, over the limit of {MANIFEST_LIMIT}", field=f"{where}.parts")
    if len(sig) > SIGNATURE_LIMIT:
        raise _bad(f"the signature part is {len(sig)} bytes; a signature is 64", f"{where}.parts")
    try:
        manifest = Manifest.parse(raw)
    except MalformedError as exc:
        raise MalformedError(f"the manifest part is not a gage manifest: {exc}", field=f"{where}.parts") from exc
    declared = {PAYLOAD_PREFIX + f.path: f for f in manifest.files}
    unknown = sorted(set(got) - set(declared))
    if unknown:
        raise _bad(f"has a part {unknown[0]!r} that the manifest does not list", f"{where}.parts")
    missing = sorted(set(declared) - set(got))
    if missing:
        raise _bad(f"has no part for {missing[0]!r}, which the manifest lists", f"{where}.parts")
    files: dict[str, bytes] = {}
    for name, entry in declared.items():
        data = got[name]
        if len(data) > entry.size:
            # Never write more than the manifest declares: the surplus is refused, not stored.
            raise RefusedError(f"part {name!r} is {len(data)} bytes; the manifest declares {entry.size}", field=f"{where}.parts")
        files[entry.path] = data
    notes = []
    if meta["bundle"] != manifest.id:
        notes.append(
            f"the A2A metadata claims bundle id {meta['bundle'][:64]!r}, but the manifest bytes make it {manifest.id}: "
            "the id comes from the bytes"
        )
    return Carried(manifest=manifest, signature=sig, files=files, protocol=protocol, claims=_claims(meta, f"{where}.metadata[gage]"), notes=notes)


def _shape(obj: dict[str, Any]) -> str:
    if "artifactId" in obj:
        return "artifact"
    if "messageId" in obj:
        return "message"
    if "id" in obj and ("artifacts" in obj or "status" in obj):
        return "task"
    raise _bad("is not an A2A Artifact, Message or Task (no artifactId, messageId, or task id and status)", "(top)")


def _version_signs(value: Any, out: set[str]) -> None:
    """Collect the protocol versions the shapes in `value` point to."""
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind in ("message", "task", "file", "text", "data", "status-update", "artifact-update"):
            out.add("0.3")
        role = value.get("role")
        if role in ("user", "agent"):
            out.add("0.3")
        elif isinstance(role, str) and role.startswith("ROLE_"):
            out.add("1.0")
        for k in ("raw", "filename", "mediaType"):
            if k in value:
                out.add("1.0")
        status = value.get("status")
        if isinstance(status, dict) and isinstance(status.get("state"), str):
            out.add("1.0" if status["state"].startswith("TASK_STATE_") else "0.3")
        for k in ("parts", "artifacts", "history"):
            v = value.get(k)
            if isinstance(v, list):
                for item in v[:10_000]:
                    _version_signs(item, out)


def _signs(obj: Any) -> set[str]:
    signs: set[str] = set()
    _version_signs(_obj(obj, "(top)"), signs)
    if len(signs) > 1:
        raise _bad("mixes protocol 0.3 and 1.0 shapes", "(top)")
    return signs


def detect_protocol(obj: Any) -> str:
    """1.0 or 0.3, from the shapes alone: 0.3 tags parts with `kind`, 1.0 has `raw` and ROLE_ names."""
    signs = _signs(obj)
    if not signs:
        raise _bad("has no part, role or state that shows its protocol version; give --protocol", "(top)")
    return signs.pop()


def parse(obj: Any, *, protocol: str | None = None, limits: Limits | None = None) -> list[Carried]:
    """Every bundle an Artifact, Message or Task carries, checked. Writes nothing.

    A Task's artifacts that do not use the gage extension are passed over (an agent may
    return other things too); an Artifact or Message given on its own must carry a bundle.
    """
    limits = limits or Limits()
    obj = _obj(obj, "(top)")
    if protocol is None:
        protocol = detect_protocol(obj)
    else:
        check_protocol(protocol)
        found = _signs(obj)
        if found and protocol not in found:
            raise _bad(f"was read as protocol {protocol} (--protocol), but its shapes are protocol {found.pop()}", "(top)")
    shape = _shape(obj)
    budget = [limits.max_bytes]
    out: list[Carried] = []
    if shape == "task":
        arts = obj.get("artifacts", [])
        if not isinstance(arts, list):
            raise _bad("must be a list", "artifacts")
        if len(arts) > MAX_TASK_ARTIFACTS:
            raise RefusedError(f"the task has {len(arts)} artifacts; gage reads at most {MAX_TASK_ARTIFACTS}", field="artifacts")
        for i, art in enumerate(arts):
            where = f"artifacts[{i}]"
            art = _obj(art, where)
            meta = _extension_meta(art, where)
            if meta is not None:
                out.append(_carried(art, meta, protocol, where, budget))
        if not out:
            raise _bad("the task holds no artifact that uses the gage extension", "artifacts")
    else:
        meta = _extension_meta(obj, "(top)")
        if meta is None:
            raise _bad(f"does not use the gage extension ({EXTENSION_URI}): it carries no gage bundle", "extensions")
        out.append(_carried(obj, meta, protocol, "(top)", budget))
    seen: set[str] = set()
    for c in out:
        if c.id in seen:
            raise _bad(f"carries bundle {c.id[:12]} twice", "artifacts")
        seen.add(c.id)
    return out


def parse_bytes(data: bytes, *, protocol: str | None = None, limits: Limits | None = None) -> list[Carried]:
    """`parse` for JSON text, with the size checked before it is parsed."""
    limits = limits or Limits()
    if len(data) > limits.max_request_bytes:
        raise RefusedError(f"is {len(data)} bytes, over the A2A limit of {limits.max_request_bytes} for a JSON object")
    # Floats are allowed in the envelope (another extension's numbers, as protobuf writes
    # them); gage's own metadata must be strings, and the manifest is parsed on its own.
    obj = strict_loads(data, limit=limits.max_request_bytes, what="the A2A JSON", floats=True)
    return parse(obj, protocol=protocol, limits=limits)


def _write(root: Path, c: Carried) -> None:
    root.mkdir(parents=True)
    (root / MANIFEST_PART).write_bytes(c.manifest.raw)
    (root / SIGNATURE_PART).write_bytes(c.signature)
    payload = root / bundle_mod.PAYLOAD
    payload.mkdir()
    for path, data in c.files.items():
        dest = payload / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "xb") as f:
            f.write(data)
    atomic.fsync_tree(root)


def land(home: Home, carried: list[Carried], *, transport: dict[str, str] | None = None) -> list[Landed]:
    """Bring checked bundles into `inbox/pending`, through the same import as a folder.

    `transport` is what the carrier says about where this came from (protocol, peer,
    file): journaled with the arrival and shown by the verdict as a claim.
    """
    # The receiver's limits for every bundle first (spec/settings.md), so a message or task
    # over one lands nothing at all, and no scratch copy is written for a bundle refused.
    # import_bundle checks them again under the lock.
    limits = settings.load(home).limits
    for c in carried:
        store.check_limits(home, c.manifest, limits)
        if store.find(home, c.id) is None and store.decisions(home).get(c.id) is None:
            store.check_pending(home, c.manifest, c.signature, limits)
    out: list[Landed] = []
    home.staging.mkdir(parents=True, exist_ok=True)
    for c in carried:
        fields = {"carrier": "a2a", "protocol": c.protocol, **(transport or {}), **c.claims}
        work = home.staging / f"import-a2a-{secrets.token_hex(8)}"
        try:
            try:
                _write(work / "b", c)
            except OSError as exc:
                raise GageIOError(f"cannot write the bundle: {exc.strerror or exc}; nothing was imported", path=str(home.staging)) from exc
            res = store.import_bundle(home, work / "b", event="received", via="a2a", transport=fields)
            ceremony.remember_signer(home, res)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        ok = res.check.ok if res.check is not None else True
        first = res.check.first_error() if res.check is not None and not ok else None
        out.append(Landed(id=res.id, state=res.state, new=res.new, ok=ok, notes=list(c.notes), problem=str(first) if first else None))
    return out


def receive(
    home: Home,
    obj: Any,
    *,
    protocol: str | None = None,
    transport: dict[str, str] | None = None,
    limits: Limits | None = None,
) -> list[Landed]:
    """Parse everything first, then land: a refusal anywhere writes nothing."""
    carried = parse(obj, protocol=protocol, limits=limits or Limits.of(home))
    return land(home, carried, transport=transport)


def receive_bytes(
    home: Home,
    data: bytes,
    *,
    protocol: str | None = None,
    transport: dict[str, str] | None = None,
    limits: Limits | None = None,
) -> list[Landed]:
    carried = parse_bytes(data, protocol=protocol, limits=limits or Limits.of(home))
    return land(home, carried, transport=transport)
