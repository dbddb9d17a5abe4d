"""Key statements: a key says it is retired, and may name the key that replaces it.

A statement is a small closed JSON object, signed by the key it speaks for (and, when it
names a replacement, also by that replacement, so neither key can be claimed alone). Its
signatures use their own contexts, never `gage/manifest/v1`, so a statement signature is
never a manifest signature and a manifest signature is never a statement signature.

This module is the format only: building, signing, parsing and checking signatures, with
no home and no trust. What a receiver does with a statement is gage/trust/retirement.py's.
See spec/keys.md.
"""

from __future__ import annotations

import functools
import re

from gage.format import sha256, signing, strictjson, vocab
from gage.format.errors import MalformedError
from gage.format.keys import (
    MAX_CLAIMED_NAME,
    SIGNATURE_CONTEXT,
    key_text,
    parse_key,
)
from gage.format.manifest import time_problem
from gage.format.record import Frozen, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import nacl.signing  # imported where a key signs (gage.format.signing): start-up

    from gage.format.vocab import Reason

VERSION = 1
SIGNED_VERSION = 1
REASONS = vocab.REASONS
# The retiring key signs with one context and the replacement with another, both distinct
# from the manifest's, so no gage signature can stand in for another kind or role.
RETIRING_CONTEXT = b"gage/key-statement/v1/retiring\x00"
REPLACEMENT_CONTEXT = b"gage/key-statement/v1/replacement\x00"
ID_CONTEXT = b"gage/key-statement-id/v1\x00"
# Sized for two hybrid keys (3984 characters of key text each) and two hybrid signatures
# (6746 hex digits each); a classical statement is far smaller.
STATEMENT_LIMIT = 16384
FILE_LIMIT = 65536
# The one payload file of a statement bundle (spec/keys.md section 3).
FILE_NAME = "gage-key-statement.json"

STATEMENT_FIELDS = {"gage-key-statement", "key", "name", "reason", "retired_at", "replacement"}
SIGNED_FIELDS = {"gage-signed-key-statement", "statement", "signature", "replacement_signature"}

assert SIGNATURE_CONTEXT not in (RETIRING_CONTEXT, REPLACEMENT_CONTEXT)


# Compiled on first use, not at import: a verdict imports this module but reads a statement
# only where the home holds one (start-up).
@functools.cache
def _sig_hex() -> re.Pattern[str]:
    """A classical signature (64 bytes) or a hybrid one (3373 bytes), as lower-case hex."""
    return re.compile(rf"(?:[0-9a-f]{{{2 * signing.ED25519_SIG_LEN}}}|[0-9a-f]{{{2 * signing.HYBRID_SIG_LEN}}})\Z")


def _fail(message: str, field: str | None = None) -> MalformedError:
    return MalformedError(message, path=FILE_NAME, field=field)


class Statement(Frozen):
    """The signed object: `key` is retired for `reason` as of `retired_at` (the signer's claim)."""

    __slots__ = ("raw", "key", "name", "reason", "retired_at", "replacement")
    raw: bytes  # the exact bytes that are signed
    key: bytes
    name: str  # the name the signer claims: untrusted
    reason: Reason
    retired_at: str
    replacement: bytes | None

    def __init__(
        self,
        raw: bytes,
        key: bytes,
        name: str,
        reason: Reason,
        retired_at: str,
        replacement: bytes | None,
    ) -> None:
        set_field(self, "raw", raw)
        set_field(self, "key", key)
        set_field(self, "name", name)
        set_field(self, "reason", reason)
        set_field(self, "retired_at", retired_at)
        set_field(self, "replacement", replacement)

    @property
    def id(self) -> str:
        return statement_id(self.raw)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": key_text(self.key),
            "name": self.name,
            "reason": self.reason,
            "retired_at": self.retired_at,
            "replacement": key_text(self.replacement) if self.replacement else None,
        }


class Signed(Frozen):
    """A statement and its signatures, as one file (`gage-key-statement.json`)."""

    __slots__ = ("statement", "signature", "replacement_signature")
    statement: Statement
    signature: bytes
    replacement_signature: bytes | None

    def __init__(
        self,
        statement: Statement,
        signature: bytes,
        replacement_signature: bytes | None,
    ) -> None:
        set_field(self, "statement", statement)
        set_field(self, "signature", signature)
        set_field(self, "replacement_signature", replacement_signature)

    def to_bytes(self) -> bytes:
        return (
            strictjson.dumps(
                {
                    "gage-signed-key-statement": SIGNED_VERSION,
                    "statement": self.statement.raw.decode("utf-8"),
                    "signature": self.signature.hex(),
                    "replacement_signature": self.replacement_signature.hex() if self.replacement_signature else None,
                }
            )
            + b"\n"
        )

    # --- what the signatures say (no trust: only which key signed what) --------------

    def signed_by_key(self) -> bool:
        return _verifies(self.statement.key, RETIRING_CONTEXT, self.statement.raw, self.signature)

    def signed_by_replacement(self) -> bool:
        s = self.statement
        if s.replacement is None or self.replacement_signature is None:
            return False
        return _verifies(s.replacement, REPLACEMENT_CONTEXT, s.raw, self.replacement_signature)


def statement_id(raw: bytes) -> str:
    return sha256.hexdigest(ID_CONTEXT + raw)


def _verifies(key: bytes, context: bytes, raw: bytes, signature: bytes) -> bool:
    """The hybrid rule of gage/format/signing.py: a hybrid key counts only with both halves."""
    return signing.verifies(key, context, raw, signature)


def _time(value: Any, field: str) -> str:
    problem = time_problem(value)
    if problem is not None:
        raise _fail(problem, field)
    return str(value)  # time_problem refuses anything but a str


def _exact(obj: Any, allowed: set[str], version_field: str, version: int, what: str, top: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _fail(f"{what} must be a JSON object", top)
    v = obj.get(version_field)
    if v != version or isinstance(v, bool):
        prefix = "" if top == "(top)" else "statement."
        raise _fail(f"unknown {what} version {v!r}; this gage reads version {version}", prefix + version_field)
    missing = allowed - set(obj)
    if missing:
        raise _fail(f"missing {', '.join(sorted(missing))}", top)
    extra = set(obj) - allowed
    if extra:
        raise _fail(f"unknown field(s) {', '.join(sorted(repr(e) for e in extra))}", top)
    return obj


def parse_statement(raw: bytes) -> Statement:
    """The statement object from its exact bytes (strict JSON, closed schema).

    Errors name the field as `statement` (the JSON layer, or not an object, or a missing
    or unknown field) or `statement.<field>`.
    """
    try:
        obj = strictjson.loads(raw, limit=STATEMENT_LIMIT, what="statement")
    except MalformedError as exc:
        raise _fail(exc.message, "statement") from exc
    obj = _exact(obj, STATEMENT_FIELDS, "gage-key-statement", VERSION, "key statement", "statement")
    try:
        key = parse_key(obj["key"])
    except MalformedError as exc:
        raise _fail(exc.message, "statement.key") from exc
    name = obj["name"]
    if not isinstance(name, str) or len(name) > MAX_CLAIMED_NAME:
        raise _fail(f"must be a string of at most {MAX_CLAIMED_NAME} characters", "statement.name")
    reason = obj["reason"]
    if reason not in REASONS:
        raise _fail(f"unknown reason {reason!r}; expected one of {', '.join(REASONS)}", "statement.reason")
    retired_at = _time(obj["retired_at"], "statement.retired_at")
    replacement = None
    if obj["replacement"] is not None:
        try:
            replacement = parse_key(obj["replacement"])
        except MalformedError as exc:
            raise _fail(exc.message, "statement.replacement") from exc
        if replacement == key:
            raise _fail("a key cannot be its own replacement", "statement.replacement")
    return Statement(raw=raw, key=key, name=name, reason=reason, retired_at=retired_at, replacement=replacement)


def _signature(value: Any, field: str, *, nullable: bool) -> bytes | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not _sig_hex().match(value):
        raise _fail(
            f"must be a signature: {2 * signing.ED25519_SIG_LEN} or {2 * signing.HYBRID_SIG_LEN} lower-case hex digits"
            + (" or null" if nullable else ""),
            field,
        )
    return bytes.fromhex(value)


def parse(data: bytes) -> Signed:
    """A signed statement file. Checks the format only: the signatures are for the caller to ask about."""
    if len(data) > FILE_LIMIT:
        raise _fail(f"is {len(data)} bytes, over the limit of {FILE_LIMIT}")
    body = data[:-1] if data.endswith(b"\n") else data
    try:
        obj = strictjson.loads(body, limit=FILE_LIMIT, what=FILE_NAME)
    except MalformedError as exc:
        raise _fail(exc.message) from exc
    obj = _exact(obj, SIGNED_FIELDS, "gage-signed-key-statement", SIGNED_VERSION, "signed key statement", "(top)")
    text = obj["statement"]
    if not isinstance(text, str):
        raise _fail("must be a string: the statement's exact bytes", "statement")
    statement = parse_statement(text.encode("utf-8"))
    signature = _signature(obj["signature"], "signature", nullable=False)
    assert signature is not None
    replacement_signature = _signature(obj["replacement_signature"], "replacement_signature", nullable=True)
    if statement.replacement is None and replacement_signature is not None:
        raise _fail("a statement that names no replacement carries no replacement signature", "replacement_signature")
    return Signed(statement=statement, signature=signature, replacement_signature=replacement_signature)


def build(
    key: bytes, *, name: str, reason: Reason, retired_at: str, replacement: bytes | None = None
) -> Statement:
    """A new statement in the writer's form, parsed back so a writer never makes what a reader refuses."""
    raw = strictjson.dumps(
        {
            "gage-key-statement": VERSION,
            "key": key_text(key),
            "name": name[:MAX_CLAIMED_NAME],
            "reason": reason,
            "retired_at": retired_at,
            "replacement": key_text(replacement) if replacement else None,
        }
    )
    return parse_statement(raw)


def sign_retiring(signer: signing.SecretKey | nacl.signing.SigningKey, statement: Statement) -> bytes:
    secret = signing.SecretKey.of(signer)
    if secret.public != statement.key:
        raise ValueError("only the key a statement speaks for signs it as the retiring key")
    return signing.sign(secret, RETIRING_CONTEXT, statement.raw)


def sign_replacement(signer: signing.SecretKey | nacl.signing.SigningKey, statement: Statement) -> bytes:
    secret = signing.SecretKey.of(signer)
    if secret.public != statement.replacement:
        raise ValueError("only the key a statement names as replacement signs it as the replacement")
    return signing.sign(secret, REPLACEMENT_CONTEXT, statement.raw)
