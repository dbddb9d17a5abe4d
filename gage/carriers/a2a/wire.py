"""The A2A carrier format itself: its names, its closed metadata, its limits, strict base64.

Split out of `artifact` because the writer (`export`), the reader (`reader`),
the landing (`landing`) and the agent card (`card`) must all agree on these and nothing
else: one place for what spec/a2a.md fixes, so a change to the format is one diff.
Plain Python, no SDK: this is the contract, and a stranger reimplements it from the spec.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from gage import bundle as bundle_mod
from gage.format.errors import MalformedError, RefusedError, UsageError
from gage.format.manifest import MANIFEST_LIMIT
from gage.home import settings
from gage.home.layout import Home
from gage.home.settings import DEFAULT_A2A_MAX_BYTES

EXTENSION_URI = "urn:gage:a2a:bundle:v1"
DEFAULT_MAX_BYTES = DEFAULT_A2A_MAX_BYTES
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
SIGNATURE_LIMIT = 4096  # a signature is 64 bytes, or 3373 for a hybrid key; anything over this is not one

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

# The base64 alphabet, matched by a single character class over the text before its padding.
# Not `(?:[A-Za-z0-9+/]{4})*...`: the regex engine keeps state for every repetition of a
# group, and over 8 MiB of base64 that took 370 MB for one request.
_B64_BODY = re.compile(r"[A-Za-z0-9+/]*")


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


def media_type(path: str) -> str:
    return PAYLOAD_MEDIA_TYPES.get(PurePosixPath(path).suffix.lower(), DEFAULT_MEDIA_TYPE)


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise UsageError(f"unknown A2A protocol version {protocol!r}: use 1.0 or 0.3")
    return protocol


def bad(message: str, where: str) -> MalformedError:
    """A malformed-object error naming the field, as every reader refusal does."""
    return MalformedError(message, field=where)


def need_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad("must be a JSON object", where)
    return value


def need_string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise bad("must be a string", where)
    return value


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode_b64(text: Any, where: str, *, limit: int) -> bytes:
    """Standard base64 with padding, in canonical form, and nothing else.

    The URL-safe alphabet, missing padding, white space and non-zero spare bits are all
    refused: two decoders can read such text as different bytes, and the SDK's 0.3 path
    has been seen to.
    """
    if not isinstance(text, str):
        raise bad("bytes must be a base64 string", where)
    size = len(text) // 4 * 3 - text[-2:].count("=")
    if size > limit:
        raise RefusedError(f"holds {size} bytes, over the limit of {limit}", field=where)
    pad = 2 if text.endswith("==") else 1 if text.endswith("=") else 0
    if len(text) % 4 or not _B64_BODY.fullmatch(text, 0, len(text) - pad):
        if "-" in text or "_" in text:
            raise bad("is URL-safe base64; gage takes standard base64 with padding only", where)
        raise bad("is not standard base64 with padding", where)
    # The alphabet and padding are checked above; binascii reads the text in place (no ASCII copy of it first).
    data = binascii.a2b_base64(text)
    # The text matched the alphabet and padding, so only the last quantum can be other than
    # canonical (non-zero spare bits): re-encode that, not a second copy of the whole.
    tail = len(data) % 3 or 3
    if data and b64(data[-tail:]) != text[-4:]:
        raise bad("is not canonical base64 (non-zero spare bits)", where)
    return data
