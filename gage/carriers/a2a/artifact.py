"""A bundle as an A2A Artifact or Message (protocol 1.0 or 0.3), and back, byte for byte.

Every file of the bundle, the manifest first, rides as its own bytes part, so no hop
ever holds the manifest as JSON it could re-serialise: the bytes that were signed are
the bytes that arrive. What the A2A envelope says (the id in the metadata, the agent
that sent it) is a claim; the id is recomputed from the manifest bytes and the bundle
lands in `inbox/pending` through the same import as a bundle from a folder. A task
state or a message never accepts anything. See spec/a2a.md.

This package writes and reads the JSON shapes itself: it is the contract, and it needs
no SDK. The SDK is used by the tests to prove it, and by the live server and client.

The code is in four modules along the seams it has, one idea a module, each
read on its own: `wire` (names, closed metadata, limits, strict base64), `export` (a bundle
on disk to an Artifact or Message), `reader` (an Artifact, Message or Task to checked
bundles, writing nothing) and `landing` (into `inbox/pending` through the import). This
module is the one name the rest of gage, the tests and the spec's readers use for all of
it, so the split moved no caller.
"""

from __future__ import annotations

from gage.carriers.a2a.export import (
    Held,
    artifact_of,
    export_artifact,
    export_message,
    hold,
)
from gage.carriers.a2a.landing import Landed, land, receive, receive_bytes
from gage.carriers.a2a.reader import Carried, detect_protocol, parse, parse_bytes
from gage.carriers.a2a.wire import (
    ALLOWED_META,
    CLAIM_META,
    DEFAULT_MAX_BYTES,
    DEFAULT_MEDIA_TYPE,
    DEFAULT_PROTOCOL,
    EXTENSION_URI,
    FORMAT_VERSION,
    MANIFEST_MEDIA_TYPE,
    MANIFEST_PART,
    MAX_CARD_URL,
    MAX_TASK_ARTIFACTS,
    OBJECT_KINDS,
    PAYLOAD_MEDIA_TYPES,
    PAYLOAD_PREFIX,
    PROTOCOLS,
    REQUIRED_META,
    SIGNATURE_LIMIT,
    SIGNATURE_MEDIA_TYPE,
    SIGNATURE_PART,
    VERSIONS,
    Limits,
    check_protocol,
    decode_b64,
    media_type,
)

__all__ = [
    "ALLOWED_META",
    "CLAIM_META",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MEDIA_TYPE",
    "DEFAULT_PROTOCOL",
    "EXTENSION_URI",
    "FORMAT_VERSION",
    "MANIFEST_MEDIA_TYPE",
    "MANIFEST_PART",
    "MAX_CARD_URL",
    "MAX_TASK_ARTIFACTS",
    "OBJECT_KINDS",
    "PAYLOAD_MEDIA_TYPES",
    "PAYLOAD_PREFIX",
    "PROTOCOLS",
    "REQUIRED_META",
    "SIGNATURE_LIMIT",
    "SIGNATURE_MEDIA_TYPE",
    "SIGNATURE_PART",
    "VERSIONS",
    "Carried",
    "Held",
    "Landed",
    "Limits",
    "artifact_of",
    "check_protocol",
    "decode_b64",
    "detect_protocol",
    "export_artifact",
    "export_message",
    "hold",
    "land",
    "media_type",
    "parse",
    "parse_bytes",
    "receive",
    "receive_bytes",
]
