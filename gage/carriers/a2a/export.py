"""Writing a bundle as an A2A Artifact or Message (protocol 1.0 or 0.3).

Every file of the bundle, the manifest first, rides as its own bytes part, so no hop
ever holds the manifest as JSON it could re-serialise: the bytes that were signed are
the bytes that leave. Apart from `artifact` because an exporter reads a bundle
that is already on disk and checked, and shares nothing with the reader but the format
(`wire`), so the two can be read, and reviewed, one at a time.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gage import bundle as bundle_mod
from gage.carriers.a2a.wire import (
    CLAIM_META,
    DEFAULT_PROTOCOL,
    EXTENSION_URI,
    FORMAT_VERSION,
    MANIFEST_MEDIA_TYPE,
    MANIFEST_PART,
    PAYLOAD_PREFIX,
    SIGNATURE_LIMIT,
    SIGNATURE_MEDIA_TYPE,
    SIGNATURE_PART,
    Limits,
    b64,
    check_protocol,
    media_type,
)
from gage.format.errors import GageIOError, RefusedError, TamperedError
from gage.format.keys import verify_manifest_signature
from gage.format.manifest import Manifest
from gage.format.signing import signature_len


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
    declared = len(m.raw) + signature_len(m.sender.key) + m.total_size
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
        sig = bundle_mod.read_small(bundle_dir / SIGNATURE_PART, SIGNATURE_LIMIT)
        files = [(f.path, _read_declared(bundle_dir, f.path, f.size, f.sha256)) for f in m.files]
    except OSError as exc:
        raise GageIOError(f"cannot read the bundle: {exc.strerror or exc}", path=str(bundle_dir)) from exc
    # The signature was checked over the manifest we hold; check the signature we read is that one.
    verify_manifest_signature(m.sender.key, raw, sig)
    return Held(manifest=m, signature=sig, files=files)


def _file_list(held: Held) -> list[tuple[str, str, bytes]]:
    """(part filename, media type, bytes), the manifest first: the order every export uses."""
    out = [(MANIFEST_PART, MANIFEST_MEDIA_TYPE, held.manifest.raw), (SIGNATURE_PART, SIGNATURE_MEDIA_TYPE, held.signature)]
    out += [(PAYLOAD_PREFIX + path, media_type(path), data) for path, data in held.files]
    return out


def _parts(held: Held, protocol: str) -> list[dict[str, Any]]:
    if protocol == "1.0":
        return [{"raw": b64(data), "filename": name, "mediaType": mt} for name, mt, data in _file_list(held)]
    return [{"kind": "file", "file": {"bytes": b64(data), "name": name, "mimeType": mt}} for name, mt, data in _file_list(held)]


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
