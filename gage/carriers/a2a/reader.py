"""Reading a bundle out of an A2A Artifact, Message or Task (protocol 1.0 or 0.3), writing nothing.

What the envelope says (the id in the metadata, the agent that sent it) is a claim: the
id is recomputed from the manifest bytes, and the claims are kept apart for the frame to
show as the transport's word. Every object is checked whole (parts, sizes against the
receiver's limit, names against the manifest) before `landing` writes a byte, so a
refusal anywhere leaves the home as it was. Split out of `artifact`: this is
the code that faces hostile input, and it reads best on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gage.carriers.a2a.wire import (
    ALLOWED_META,
    CLAIM_META,
    EXTENSION_URI,
    FORMAT_VERSION,
    MANIFEST_PART,
    MAX_CARD_URL,
    MAX_TASK_ARTIFACTS,
    OBJECT_KINDS,
    PAYLOAD_PREFIX,
    REQUIRED_META,
    SIGNATURE_LIMIT,
    SIGNATURE_PART,
    VERSIONS,
    Limits,
    bad,
    check_protocol,
    decode_b64,
    need_object,
    need_string,
)
from gage.format.errors import MalformedError, RefusedError
from gage.format.keys import MAX_CLAIMED_NAME, key_text, parse_key
from gage.format.manifest import MANIFEST_LIMIT, MAX_FILES, Manifest
from gage.format.sanitize import cut
from gage.format.strictjson import loads as strict_loads

_PART_FIELDS_10 = frozenset({"text", "raw", "url", "data", "filename", "mediaType", "metadata"})
_CONTENT_10 = ("text", "raw", "url", "data")
_FILE_FIELDS_03 = frozenset({"bytes", "uri", "name", "mimeType"})
_PART_FIELDS_03 = frozenset({"kind", "file", "text", "data", "metadata"})


def _shown(value: Any) -> str:
    """An untrusted JSON value in an error: a string cut to its start and length, anything else by its type."""
    return cut(value) if isinstance(value, str) else f"of type {type(value).__name__}"


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


def _part_file(part: Any, protocol: str, where: str, limit: int) -> tuple[str, bytes]:
    """The (filename, bytes) of one bytes part, or an error naming what it is instead."""
    part = need_object(part, where)
    if protocol == "1.0":
        unknown = sorted(set(part) - _PART_FIELDS_10)
        if unknown:
            raise bad(f"unknown part field {cut(unknown[0])}", where)
        content = [k for k in _CONTENT_10 if k in part]
        if len(content) != 1:
            raise bad("must hold exactly one of text, raw, url, data", where)
        name = part.get("filename")
        kind = content[0]
        value = part[kind]
    else:
        unknown = sorted(set(part) - _PART_FIELDS_03)
        if unknown:
            raise bad(f"unknown part field {cut(unknown[0])}", where)
        kind = part.get("kind")
        if kind == "file":
            f = need_object(part.get("file"), f"{where}.file")
            unknown = sorted(set(f) - _FILE_FIELDS_03)
            if unknown:
                raise bad(f"unknown file field {cut(unknown[0])}", f"{where}.file")
            if ("bytes" in f) == ("uri" in f):
                raise bad("a file part must hold exactly one of bytes, uri", f"{where}.file")
            name = f.get("name")
            kind, value = ("raw", f["bytes"]) if "bytes" in f else ("url", f["uri"])
            where = f"{where}.file"
        elif kind in ("text", "data"):
            name, value = None, part.get(kind)
        else:
            raise bad(f"unknown part kind {_shown(kind)}", f"{where}.kind")
    shown = f" {cut(name)}" if isinstance(name, str) else ""
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
    name = need_string(name, f"{where}.{'filename' if protocol == '1.0' else 'name'}")
    return name, decode_b64(value, f"{where}.{'raw' if protocol == '1.0' else 'bytes'}", limit=limit)


def _extension_meta(obj: dict[str, Any], where: str) -> dict[str, str] | None:
    """The closed gage metadata object, or None when the object does not claim to carry a bundle."""
    exts = obj.get("extensions", [])
    if not isinstance(exts, list) or not all(isinstance(e, str) for e in exts):
        raise bad("must be a list of URIs", f"{where}.extensions")
    metadata = obj.get("metadata")
    meta = metadata.get(EXTENSION_URI) if isinstance(metadata, dict) else None
    if EXTENSION_URI not in exts and meta is None:
        return None
    if meta is None:
        raise bad(f"lists the gage extension but has no metadata[{EXTENSION_URI!r}]", f"{where}.metadata")
    meta = need_object(meta, f"{where}.metadata[{EXTENSION_URI}]")
    mwhere = f"{where}.metadata[gage]"
    unknown = sorted(set(meta) - ALLOWED_META)
    if unknown:
        raise bad(f"unknown field {cut(unknown[0])} (this gage reads format version {FORMAT_VERSION})", mwhere)
    for k, v in meta.items():
        if not isinstance(v, str):
            raise bad("every value must be a string", f"{mwhere}.{k}")
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise bad(f"missing field {missing[0]!r}", mwhere)
    if meta["version"] not in VERSIONS:
        raise RefusedError(f"unknown format version {cut(meta['version'])}; this gage reads {', '.join(VERSIONS)}", field=f"{mwhere}.version")
    if meta["kind"] not in OBJECT_KINDS:
        raise RefusedError(f"unknown kind {cut(meta['kind'])}; this gage carries {', '.join(OBJECT_KINDS)}", field=f"{mwhere}.kind")
    if meta["manifest"] != MANIFEST_PART or meta["signature"] != SIGNATURE_PART:
        raise bad(f"the manifest and signature parts are named {MANIFEST_PART!r} and {SIGNATURE_PART!r} in version 1", mwhere)
    if EXTENSION_URI not in exts:
        raise bad("carries gage metadata but does not list the gage extension", f"{where}.extensions")
    return meta


def _claims(meta: dict[str, str], where: str) -> dict[str, str]:
    claims = {k: meta[k] for k in CLAIM_META if k in meta}
    if "from_key" in claims:
        claims["from_key"] = key_text(parse_key(claims["from_key"], field=f"{where}.from_key"))
    if len(claims.get("from_name", "")) > MAX_CLAIMED_NAME:
        raise bad(f"longer than {MAX_CLAIMED_NAME} characters", f"{where}.from_name")
    if len(claims.get("from_card", "")) > MAX_CARD_URL:
        raise bad(f"longer than {MAX_CARD_URL} characters", f"{where}.from_card")
    return claims


def _carried(holder: dict[str, Any], meta: dict[str, str], protocol: str, where: str, budget: list[int]) -> Carried:
    parts = holder.get("parts")
    if not isinstance(parts, list) or not parts:
        raise bad("must be a non-empty list of parts", f"{where}.parts")
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
            raise bad(f"repeats the file {cut(name)}", pwhere)
        got[name] = data
    if MANIFEST_PART not in got:
        raise bad(f"has no {MANIFEST_PART!r} bytes part", f"{where}.parts")
    if SIGNATURE_PART not in got:
        raise bad(f"has no {SIGNATURE_PART!r} bytes part", f"{where}.parts")
    raw = got.pop(MANIFEST_PART)
    sig = got.pop(SIGNATURE_PART)
    if len(raw) > MANIFEST_LIMIT:
        raise RefusedError(f"the manifest is {len(raw)} bytes, over the limit of {MANIFEST_LIMIT}", field=f"{where}.parts")
    if len(sig) > SIGNATURE_LIMIT:
        raise bad(f"the signature part is {len(sig)} bytes; a signature is 64 bytes (Ed25519) or 3373 (hybrid)", f"{where}.parts")
    try:
        manifest = Manifest.parse(raw)
    except MalformedError as exc:
        raise MalformedError(f"the manifest part is not a gage manifest: {exc}", field=f"{where}.parts") from exc
    declared = {PAYLOAD_PREFIX + f.path: f for f in manifest.files}
    unknown = sorted(set(got) - set(declared))
    if unknown:
        raise bad(f"has a part {cut(unknown[0])} that the manifest does not list", f"{where}.parts")
    missing = sorted(set(declared) - set(got))
    if missing:
        raise bad(f"has no part for {cut(missing[0])}, which the manifest lists", f"{where}.parts")
    files: dict[str, bytes] = {}
    for name, entry in declared.items():
        data = got[name]
        if len(data) > entry.size:
            # Never write more than the manifest declares: the surplus is refused, not stored.
            raise RefusedError(f"part {cut(name)} is {len(data)} bytes; the manifest declares {entry.size}", field=f"{where}.parts")
        files[entry.path] = data
    notes = []
    if meta["bundle"] != manifest.id:
        notes.append(
            f"the A2A metadata claims bundle id {cut(meta['bundle'], 64)}, but the manifest bytes make it {manifest.id}: "
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
    raise bad("is not an A2A Artifact, Message or Task (no artifactId, messageId, or task id and status)", "(top)")


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
    _version_signs(need_object(obj, "(top)"), signs)
    if len(signs) > 1:
        raise bad("mixes protocol 0.3 and 1.0 shapes", "(top)")
    return signs


def detect_protocol(obj: Any) -> str:
    """1.0 or 0.3, from the shapes alone: 0.3 tags parts with `kind`, 1.0 has `raw` and ROLE_ names."""
    signs = _signs(obj)
    if not signs:
        raise bad("has no part, role or state that shows its protocol version; give --protocol", "(top)")
    return signs.pop()


def parse(obj: Any, *, protocol: str | None = None, limits: Limits | None = None) -> list[Carried]:
    """Every bundle an Artifact, Message or Task carries, checked. Writes nothing.

    A Task's artifacts that do not use the gage extension are passed over (an agent may
    return other things too); an Artifact or Message given on its own must carry a bundle.
    """
    limits = limits or Limits()
    obj = need_object(obj, "(top)")
    if protocol is None:
        protocol = detect_protocol(obj)
    else:
        check_protocol(protocol)
        found = _signs(obj)
        if found and protocol not in found:
            raise bad(f"was read as protocol {protocol} (--protocol), but its shapes are protocol {found.pop()}", "(top)")
    shape = _shape(obj)
    budget = [limits.max_bytes]
    out: list[Carried] = []
    if shape == "task":
        arts = obj.get("artifacts", [])
        if not isinstance(arts, list):
            raise bad("must be a list", "artifacts")
        if len(arts) > MAX_TASK_ARTIFACTS:
            raise RefusedError(f"the task has {len(arts)} artifacts; gage reads at most {MAX_TASK_ARTIFACTS}", field="artifacts")
        for i, art in enumerate(arts):
            where = f"artifacts[{i}]"
            art = need_object(art, where)
            meta = _extension_meta(art, where)
            if meta is not None:
                out.append(_carried(art, meta, protocol, where, budget))
        if not out:
            raise bad("the task holds no artifact that uses the gage extension", "artifacts")
    else:
        meta = _extension_meta(obj, "(top)")
        if meta is None:
            raise bad(f"does not use the gage extension ({EXTENSION_URI}): it carries no gage bundle", "extensions")
        out.append(_carried(obj, meta, protocol, "(top)", budget))
    seen: set[str] = set()
    for c in out:
        if c.id in seen:
            raise bad(f"carries bundle {c.id[:12]} twice", "artifacts")
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
