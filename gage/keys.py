"""Ed25519 identities, public key text, key files, and the domain-separated signature.

A gage signature is made over a fixed prefix followed by the manifest bytes, so a
signature made by gage can never be replayed as a signature over anything else the
same key might sign (and vice versa).
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import nacl.exceptions
import nacl.signing

from . import atomic, strictjson
from .errors import (
    BadSignatureError,
    GageIOError,
    MalformedError,
    RefusedError,
    UsageError,
)

KEY_PREFIX = "ed25519:"
SIGNATURE_CONTEXT = b"gage/manifest/v1\x00"
SIGNATURE_LEN = 64
KEYFILE_VERSION = 1
KEYFILE_LIMIT = 4096
MAX_CLAIMED_NAME = 200


def key_text(key: bytes) -> str:
    """The export form of a public key: `ed25519:` and 64 lower-case hex digits."""
    return KEY_PREFIX + key.hex()


def parse_key(text: object, *, field: str = "key") -> bytes:
    if not isinstance(text, str):
        raise MalformedError("a key must be a string", field=field)
    if not text.startswith(KEY_PREFIX):
        raise MalformedError(f"a key must start with {KEY_PREFIX!r}", field=field)
    hexpart = text[len(KEY_PREFIX) :]
    if len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
        raise MalformedError("a key must be 64 lower-case hex digits after the prefix", field=field)
    return bytes.fromhex(hexpart)


def short_fingerprint(key: bytes) -> str:
    """A glanceable label for a key. Not a security check: the word-pairs are."""
    h = key.hex()
    return f"{h[:4]}-{h[4:8]}-{h[8:12]}"


def key_digest(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()


def check_local_name(name: str) -> str:
    """Names the human types for contacts: printable, one line, not empty, not padded."""
    if not isinstance(name, str) or not name or len(name) > 64:
        raise UsageError("a name must be 1 to 64 characters")
    if name != name.strip():
        raise UsageError("a name must not start or end with white space")
    for ch in name:
        cat = unicodedata.category(ch)
        if cat.startswith("C") or cat in ("Zl", "Zp"):
            raise UsageError(f"a name must not contain control or format characters (found U+{ord(ch):04X})")
    return name


def sign_manifest(signing_key: nacl.signing.SigningKey, manifest_bytes: bytes) -> bytes:
    return signing_key.sign(SIGNATURE_CONTEXT + manifest_bytes).signature


def verify_manifest_signature(key: bytes, manifest_bytes: bytes, signature: bytes) -> None:
    """Raise BadSignatureError unless `signature` is `key`'s gage signature over these bytes.

    PyNaCl raises ValueError (not BadSignatureError) for a signature of the wrong length
    and for some malformed keys: both are a bad signature here, never a crash.
    """
    if len(signature) != SIGNATURE_LEN:
        raise BadSignatureError(f"signature is {len(signature)} bytes, not {SIGNATURE_LEN}", path="manifest.sig")
    try:
        nacl.signing.VerifyKey(key).verify(SIGNATURE_CONTEXT + manifest_bytes, signature)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError) as exc:
        raise BadSignatureError("signature does not verify over manifest.json with the sender key", path="manifest.sig") from exc


@dataclass(frozen=True)
class Identity:
    name: str
    signing_key: nacl.signing.SigningKey

    @property
    def key(self) -> bytes:
        return bytes(self.signing_key.verify_key)

    @property
    def key_text(self) -> str:
        return key_text(self.key)

    @classmethod
    def generate(cls, name: str) -> Identity:
        return cls(name=name, signing_key=nacl.signing.SigningKey.generate())

    def sign(self, manifest_bytes: bytes) -> bytes:
        return sign_manifest(self.signing_key, manifest_bytes)

    def save(self, path: Path) -> None:
        if path.exists():
            raise RefusedError("an identity already exists here; gage will not replace it", path=str(path))
        data = strictjson.dumps(
            {"gage-identity": 1, "name": self.name, "secret": bytes(self.signing_key).hex(), "key": self.key_text}
        )
        atomic.write_bytes(path, data + b"\n", mode=0o600)

    @classmethod
    def load(cls, path: Path) -> Identity:
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            raise GageIOError("no identity here: run `gage init --name NAME` first", path=str(path)) from exc
        except OSError as exc:
            raise GageIOError(f"cannot read identity: {exc.strerror}", path=str(path)) from exc
        try:
            obj = strictjson.loads(raw, limit=KEYFILE_LIMIT, what="identity")
            if not isinstance(obj, dict) or obj.get("gage-identity") != 1:
                raise MalformedError("not a gage identity file (version 1)")
            seed = bytes.fromhex(obj["secret"])
            sk = nacl.signing.SigningKey(seed)
            name = obj["name"]
        except (KeyError, ValueError, TypeError, MalformedError) as exc:
            raise MalformedError(f"identity file is damaged: {exc}", path=str(path)) from exc
        mode = os.stat(path).st_mode & 0o777
        if mode & 0o077:
            raise RefusedError(f"identity is readable by others (mode {mode:o}); run chmod 600 on it", path=str(path))
        return cls(name=name, signing_key=sk)


@dataclass(frozen=True)
class KeyFile:
    """A public key and the name its owner claims. A claim, never a confirmation."""

    key: bytes
    name: str

    def to_bytes(self) -> bytes:
        return strictjson.dumps({"gage-key": KEYFILE_VERSION, "key": key_text(self.key), "name": self.name}) + b"\n"

    @classmethod
    def parse(cls, data: bytes, *, path: str | None = None) -> KeyFile:
        try:
            obj = strictjson.loads(data.rstrip(b"\n"), limit=KEYFILE_LIMIT, what="key file")
        except MalformedError as exc:
            raise MalformedError(exc.message, path=path) from exc
        if not isinstance(obj, dict):
            raise MalformedError("a key file is a JSON object", path=path)
        if obj.get("gage-key") != KEYFILE_VERSION:
            raise MalformedError(f"not a gage key file of version {KEYFILE_VERSION}", path=path, field="gage-key")
        extra = set(obj) - {"gage-key", "key", "name"}
        if extra:
            raise MalformedError(f"unknown fields {sorted(extra)}", path=path)
        try:
            key = parse_key(obj.get("key"))
        except MalformedError as exc:
            raise MalformedError(exc.message, path=path, field="key") from exc
        name = obj.get("name", "")
        if not isinstance(name, str) or len(name) > MAX_CLAIMED_NAME:
            raise MalformedError(f"name must be a string of at most {MAX_CLAIMED_NAME} characters", path=path, field="name")
        return cls(key=key, name=name)

    @classmethod
    def load(cls, path: Path) -> KeyFile:
        try:
            with open(path, "rb") as f:
                data = f.read(KEYFILE_LIMIT + 1)
        except OSError as exc:
            raise GageIOError(f"cannot read key file: {exc.strerror}", path=str(path)) from exc
        return cls.parse(data, path=str(path))
