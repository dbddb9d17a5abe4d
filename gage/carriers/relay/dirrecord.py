"""The directory record: handle -> mailbox address, sealing key, signing key. Format only.

A record is signed by the signing key it names, so it proves only that whoever holds that
key published it: never who that is. A reader refuses a record whose signature, binding or
mailbox do not agree with its own signing key (spec/relay.md section 5), and what is left is
a claim: the key becomes a candidate, and only the word-pair ceremony confirms it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import nacl.exceptions
import nacl.signing

from gage.format import relayurl, signing, strictjson
from gage.format.errors import MalformedError, RefusedError
from gage.format.keys import key_text, parse_key
from gage.format.manifest import now_text, time_problem
from gage.home import sealing

VERSION = 1
SIGNED_VERSION = 1
RECORD_CONTEXT = b"gage/directory-record/v1\x00"
RECORD_LIMIT = 32768  # names the signing key and carries the binding: hybrid keys and signatures fit
SIGNED_LIMIT = 65536  # the record and its signature (6746 hex digits when hybrid)
HANDLE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}\Z")
RECORD_FIELDS = {"gage-directory-record", "handle", "signing_key", "sealing", "mailbox", "relay", "published_at"}
SIGNED_FIELDS = {"gage-signed-directory-record", "record", "signature"}


def check_handle(handle: str) -> str:
    if not isinstance(handle, str) or not HANDLE.match(handle):
        raise MalformedError("a handle is 1 to 63 of a-z, 0-9, '-' and '_', starting with a letter or digit", field="handle")
    return handle


@dataclass(frozen=True)
class Record:
    raw: bytes
    handle: str
    signing_key: bytes
    binding: sealing.Binding
    mailbox: str
    relay: str | None
    published_at: str
    signature: bytes
    note: str | None = None  # what this home's memory says of it (a newer record by another key seen): not the record's


    def to_json(self) -> dict[str, Any]:
        return {
            "handle": self.handle,
            "status": "unconfirmed",
            "signing_key": key_text(self.signing_key),
            "sealing_key": self.binding.sealing_key,
            "mailbox": self.mailbox,
            "relay": self.relay,
            "published_at": self.published_at,
            "note": self.note,
        }

    def to_bytes(self) -> bytes:
        return strictjson.dumps(
            {"gage-signed-directory-record": SIGNED_VERSION, "record": self.raw.decode("utf-8"), "signature": self.signature.hex()}
        )


def sign_record(signer: signing.SecretKey | nacl.signing.SigningKey, raw: bytes) -> bytes:
    """The one place a directory record is signed, by gage's one signing rule (hybrid for a hybrid
    identity); the record names the signer's whole key, so a hybrid signature cannot be cut down."""
    return signing.sign(signer, RECORD_CONTEXT, raw)


def record_verifies(key: bytes, raw: bytes, signature: bytes) -> bool:
    """The one place a record signature is checked (both halves for a hybrid key)."""
    return signing.verifies(key, RECORD_CONTEXT, raw, signature)


def build(signing_key: signing.SecretKey | nacl.signing.SigningKey, handle: str, binding: sealing.Binding, relay: str | None, published_at: str | None = None) -> Record:
    """A signed record. A relay URL with a user or password in it is refused: the record is public,
    and the directory keeps old ones (spec/relay.md section 5)."""
    if relay is not None and relayurl.has_userinfo(relay):
        raise RefusedError(
            "the relay URL for the record names a user or password, and a directory record is public: "
            "give the URL without them (credentials stay in this home's settings)",
            field="relay",
        )
    raw = strictjson.dumps(
        {
            "gage-directory-record": VERSION,
            "handle": check_handle(handle),
            "signing_key": key_text(signing.SecretKey.of(signing_key).public),
            "sealing": binding.to_carried(),
            "mailbox": sealing.mailbox_address(binding.sealing_key),
            "relay": relay,
            "published_at": published_at or now_text(),
        }
    )
    return parse(
        strictjson.dumps({"gage-signed-directory-record": SIGNED_VERSION, "record": raw.decode("utf-8"), "signature": sign_record(signing_key, raw).hex()}),
        handle=handle,
    )


def _record(raw: bytes) -> dict[str, Any]:
    obj = strictjson.loads(raw, limit=RECORD_LIMIT, what="directory record")
    if not isinstance(obj, dict):
        raise MalformedError("a directory record is a JSON object", field="record")
    v = obj.get("gage-directory-record")
    if v != VERSION or isinstance(v, bool):
        raise MalformedError(f"unknown directory record version {v!r}; this gage reads version {VERSION}", field="record.gage-directory-record")
    if set(obj) != RECORD_FIELDS:
        raise MalformedError(f"a directory record has exactly the fields {sorted(RECORD_FIELDS)}", field="record")
    return obj


def parse(data: bytes, *, handle: str) -> Record:
    """A signed record read from a directory under `handle`: every check, or a refusal naming it.

    Malformed (exit 3) for what is not a record; refused (exit 9) for a record that is
    well-formed but does not hold together: signed by another key, a sealing key its
    signing key did not bind, a mailbox that is not the sealing key's, another handle.
    """
    if len(data) > SIGNED_LIMIT:
        raise MalformedError(f"a signed directory record is at most {SIGNED_LIMIT} bytes")
    obj = strictjson.loads(data, limit=SIGNED_LIMIT, what="signed directory record")
    if not isinstance(obj, dict) or set(obj) != SIGNED_FIELDS or obj.get("gage-signed-directory-record") != SIGNED_VERSION:
        raise MalformedError(f"not a signed directory record of version {SIGNED_VERSION}")
    text, sig = obj["record"], obj["signature"]
    if not isinstance(text, str) or not isinstance(sig, str) or len(sig) not in sealing.SIGNATURE_HEX or any(c not in "0123456789abcdef" for c in sig):
        raise MalformedError(
            f"record must be text and signature {sealing.SIGNATURE_HEX[0]} (Ed25519) or {sealing.SIGNATURE_HEX[1]} (hybrid) lower-case hex digits"
        )
    raw = text.encode("utf-8")
    rec = _record(raw)
    key = parse_key(rec["signing_key"], field="record.signing_key")
    binding = sealing.parse_carried(rec["sealing"], field="record.sealing")
    got = rec["handle"]
    if not isinstance(got, str):
        raise MalformedError("must be text", field="record.handle")
    mailbox = rec["mailbox"]
    if not sealing.is_mailbox_address(mailbox):
        raise MalformedError("not a mailbox address", field="record.mailbox")
    relay = rec["relay"]
    if relay is not None and (not isinstance(relay, str) or not relay or len(relay) > 2000):
        raise MalformedError("must be a URL or null", field="record.relay")
    problem = time_problem(rec["published_at"])
    if problem is not None:
        raise MalformedError(problem, field="record.published_at")
    signature = bytes.fromhex(sig)
    if not record_verifies(key, raw, signature):
        raise RefusedError("the record is not signed by the signing key it names: refused")
    if binding.signing_key != key or not binding.verifies():
        raise RefusedError("the record's sealing key is not bound by its signing key: refused")
    if mailbox != sealing.mailbox_address(binding.sealing_key):
        raise RefusedError("the record's mailbox is not the one its sealing key derives: refused")
    if got != handle:
        raise RefusedError(f"the record under {handle!r} is for the handle {got!r}: refused")
    return Record(
        raw=raw,
        handle=got,
        signing_key=key,
        binding=binding,
        mailbox=mailbox,
        # A record published before userinfo was refused may carry a password: it is never shown on
        # or used (the signed bytes in `raw` keep it; gage shows those to nobody).
        relay=relayurl.public(relay) if relay is not None else None,
        published_at=str(rec["published_at"]),
        signature=signature,
    )
