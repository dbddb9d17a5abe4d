"""Ed25519 identities, public key text, key files, and the domain-separated signature.

A gage signature is made over a fixed prefix followed by the manifest bytes, so a
signature made by gage can never be replayed as a signature over anything else the
same key might sign (and vice versa).
"""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nacl.exceptions
import nacl.signing

from . import atomic, homefile, strictjson
from .errors import (
    BadSignatureError,
    GageError,
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
# An identity file also keeps this home's retired keys and their statements.
IDENTITY_LIMIT = 1 << 20
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
class RetiredKey:
    """One of this home's own keys that a key statement retired (spec/keys.md section 6).

    `secret` is kept for a key this home held and replaced with a new one (`gage key
    retire --new`), so what was signed with it stays this home's; it is never used to sign
    a bundle again. It is None for the current key retired without a successor here, and
    for a key of another home that this one was named to replace.
    """

    key: bytes
    name: str
    secret: bytes | None
    reason: str
    retired_at: str
    replacement: bytes | None
    statement: str  # the signed statement file, as text
    origin: str  # "this home" or "another home"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": key_text(self.key),
            "name": self.name,
            "secret": self.secret.hex() if self.secret else None,
            "reason": self.reason,
            "retired_at": self.retired_at,
            "replacement": key_text(self.replacement) if self.replacement else None,
            "statement": self.statement,
            "origin": self.origin,
        }

    @classmethod
    def from_json(cls, obj: Any) -> RetiredKey:
        if not isinstance(obj, dict):
            raise TypeError("a retired key is an object")
        secret = obj["secret"]
        replacement = obj["replacement"]
        fields = (obj["name"], obj["reason"], obj["retired_at"], obj["statement"], obj["origin"])
        if not all(isinstance(f, str) for f in fields):
            raise TypeError("retired key fields must be strings")
        return cls(
            key=parse_key(obj["key"]),
            name=obj["name"],
            secret=bytes.fromhex(secret) if secret is not None else None,
            reason=obj["reason"],
            retired_at=obj["retired_at"],
            replacement=parse_key(replacement) if replacement is not None else None,
            statement=obj["statement"],
            origin=obj["origin"],
        )


@dataclass(frozen=True)
class Identity:
    name: str
    signing_key: nacl.signing.SigningKey
    # This home's own retired keys, oldest first (spec/keys.md section 6). The current key
    # is among them when it was retired with no successor in this home.
    retired: tuple[RetiredKey, ...] = ()

    @property
    def key(self) -> bytes:
        return bytes(self.signing_key.verify_key)

    @property
    def key_text(self) -> str:
        return key_text(self.key)

    @property
    def current_retirement(self) -> RetiredKey | None:
        """The statement that retired the current key, if one did: then nothing is signed with it."""
        return self.retirement_of(self.key)

    def retirement_of(self, key: bytes) -> RetiredKey | None:
        for r in reversed(self.retired):
            if r.key == key:
                return r
        return None

    def owns(self, key: bytes) -> bool:
        """The current key, or one of this home's retired keys: a key that is "me"."""
        return key == self.key or self.retirement_of(key) is not None

    @classmethod
    def generate(cls, name: str) -> Identity:
        return cls(name=name, signing_key=nacl.signing.SigningKey.generate())

    def sign(self, manifest_bytes: bytes) -> bytes:
        return sign_manifest(self.signing_key, manifest_bytes)

    def _bytes(self) -> bytes:
        obj: dict[str, Any] = {"gage-identity": 1, "name": self.name, "secret": bytes(self.signing_key).hex(), "key": self.key_text}
        if self.retired:
            obj["retired"] = [r.to_json() for r in self.retired]
        return strictjson.dumps(obj) + b"\n"

    def save(self, path: Path) -> None:
        if path.exists():
            raise RefusedError("an identity already exists here; gage will not replace it", path=str(path))
        atomic.write_bytes(path, self._bytes(), mode=0o600)

    def rewrite(self, path: Path) -> None:
        """Replace the identity file in one atomic step (a key retired or replaced; under the home lock)."""
        atomic.write_bytes(path, self._bytes(), mode=0o600)

    @classmethod
    def load(cls, path: Path) -> Identity:
        raw = homefile.read_bytes(path, "identity", IDENTITY_LIMIT)
        if raw is None:
            raise GageIOError("no identity here: run `gage init --name NAME` first", path=str(path))
        try:
            obj = strictjson.loads(raw, limit=IDENTITY_LIMIT, what="identity")
            if not isinstance(obj, dict) or obj.get("gage-identity") != 1:
                raise MalformedError("not a gage identity file (version 1)")
            secret = obj["secret"]
            if not isinstance(secret, str) or len(secret) != 64:
                raise TypeError("secret must be 64 hex digits")
            seed = bytes.fromhex(secret)
            sk = nacl.signing.SigningKey(seed)
            name = obj["name"]
            if not isinstance(name, str):
                raise TypeError("name must be text")
            check_local_name(name)
            retired_list = obj.get("retired", [])
            if not isinstance(retired_list, list):
                raise TypeError("retired must be a list")
            retired = tuple(RetiredKey.from_json(r) for r in retired_list)
        except KeyError as exc:
            raise MalformedError(f"identity file is damaged: field {exc} is missing", path=str(path)) from exc
        except (ValueError, TypeError, GageError) as exc:
            raise MalformedError(f"identity file is damaged: {exc}", path=str(path)) from exc
        try:
            mode = os.stat(path).st_mode & 0o777
        except OSError as exc:
            raise GageIOError(f"cannot read the identity: {exc.strerror}", path=str(path)) from exc
        if mode & 0o077:
            raise RefusedError(f"identity is readable by others (mode {mode:o}); run chmod 600 on it", path=str(path))
        return cls(name=name, signing_key=sk, retired=retired)


@dataclass(frozen=True)
class KeyFile:
    """A public key and the name its owner claims. A claim, never a confirmation."""

    key: bytes
    name: str
    # The sealing-key binding (gage/sealing.py) as carried, when the home has a mailbox: a claim too.
    sealing: dict[str, str] | None = None

    def to_bytes(self) -> bytes:
        obj: dict[str, Any] = {"gage-key": KEYFILE_VERSION, "key": key_text(self.key), "name": self.name}
        if self.sealing is not None:
            obj["sealing"] = self.sealing
        return strictjson.dumps(obj) + b"\n"

    @classmethod
    def parse(cls, data: bytes, *, path: str | None = None) -> KeyFile:
        """spec/bundle.md section 7. The cap is on the whole file, newlines included; the
        writer's final newline needs no stripping, since strict JSON allows white space
        around the object."""
        try:
            obj = strictjson.loads(data, limit=KEYFILE_LIMIT, what="key file")
        except MalformedError as exc:
            raise MalformedError(exc.message, path=path) from exc
        if not isinstance(obj, dict):
            raise MalformedError("a key file is a JSON object", path=path)
        version = obj.get("gage-key")
        if version != KEYFILE_VERSION or isinstance(version, bool):  # true == 1 in Python
            raise MalformedError(f"not a gage key file of version {KEYFILE_VERSION}", path=path, field="gage-key")
        extra = set(obj) - {"gage-key", "key", "name", "sealing"}
        if extra:
            raise MalformedError(f"unknown fields {sorted(extra)}", path=path)
        try:
            key = parse_key(obj.get("key"))
        except MalformedError as exc:
            raise MalformedError(exc.message, path=path, field="key") from exc
        name = obj.get("name", "")
        if not isinstance(name, str) or len(name) > MAX_CLAIMED_NAME:
            raise MalformedError(f"name must be a string of at most {MAX_CLAIMED_NAME} characters", path=path, field="name")
        carried = obj.get("sealing")
        if carried is not None:
            from . import sealing  # imports this module

            try:
                sealing.parse_carried(carried)
            except MalformedError as exc:
                raise MalformedError(exc.message, path=path, field=exc.field) from exc
        return cls(key=key, name=name, sealing=carried)

    @classmethod
    def load(cls, path: Path) -> KeyFile:
        try:
            # O_NONBLOCK: a FIFO named as a key file must not hang the command.
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise MalformedError("a key file must be a regular file", path=str(path))
                data = f.read(KEYFILE_LIMIT + 1)
        except OSError as exc:
            raise GageIOError(f"cannot read key file: {exc.strerror}", path=str(path)) from exc
        return cls.parse(data, path=str(path))
