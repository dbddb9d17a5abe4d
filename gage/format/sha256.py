"""SHA-256 as 64 lowercase hex digits: the one spelling for the small things gage names by
their digest (a key's fingerprint, a journal line, a manifest's name, a tree digest).

It is `hashlib.sha256`, OpenSSL's. A payload's files are hashed in their own loop
(gage.bundle.safeopen), which reads in chunks.
"""

from __future__ import annotations

from hashlib import sha256


def hexdigest(data: bytes) -> str:
    """The SHA-256 of `data`, as 64 lowercase hex digits."""
    return sha256(data).hexdigest()
