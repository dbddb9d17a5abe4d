"""`reply`: the one thing an agent may make through `gage mcp`, and only where a person said so.

A reply bundle is made in this home's outbox, signed by this home, only when the bundle it
answers is verified, accepted by a person, and a grant in authority.toml for its sender and
kind says `reply = true` (spec/authority.md). The verdict decides all three: the grants are
the ones the trust function found, never anything the bundle or the agent says. Nothing is
sent anywhere: the person sends what is in the outbox. The agent gives the text of every
file; no file is read from disk, so a prompt in a payload cannot have the agent attach one.
"""

from __future__ import annotations

import secrets
import shutil
from typing import Any

from .seams import (
    GageIOError,
    Home,
    Kind,
    MalformedError,
    RefusedError,
    UsageError,
    check_path,
    fold_path,
    make_bundle,
    quoted,
    verdict_of,
    visible,
)

REPLY_KINDS: tuple[Kind, ...] = ("answer", "ack")
TEXT_NAME = "reply.txt"
MAX_FILES = 16  # besides reply.txt
MAX_BYTES = 4 * 1024 * 1024  # all the reply's files together
MAX_SUBJECT = 1000


def _encoded(name: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the text of {quoted(name)} is not valid Unicode (a lone surrogate)") from None


def _files(text: str, files: dict[str, str] | None) -> list[tuple[str, bytes]]:
    """reply.txt and the agent's own files, each name a plain file name a manifest accepts."""
    out = [(TEXT_NAME, _encoded(TEXT_NAME, text))]
    extra = files or {}
    if len(extra) > MAX_FILES:
        raise UsageError(f"a reply holds at most {MAX_FILES} files besides {TEXT_NAME}")
    seen = {fold_path(TEXT_NAME)}
    for name, body in extra.items():
        try:
            check_path(name, "files")
        except MalformedError as exc:
            raise UsageError(f"file name {quoted(name)}: {exc.message}") from None
        if "/" in name:
            raise UsageError(f"file name {quoted(name)}: a reply's files are plain names, without folders")
        if fold_path(name) in seen:
            raise UsageError(f"file name {quoted(name)} is given twice (or is {TEXT_NAME})")
        seen.add(fold_path(name))
        out.append((name, _encoded(name, body)))
    if sum(len(b) for _n, b in out) > MAX_BYTES:
        raise UsageError(f"a reply is at most {MAX_BYTES} bytes in all")
    return out


def reply(
    home: Home,
    ref: str,
    text: str,
    *,
    files: dict[str, str] | None = None,
    kind: str = "answer",
    subject: str | None = None,
) -> dict[str, Any]:
    """Make the reply bundle, or refuse naming what is missing. Returns `gage bundle --json`'s shape."""
    if kind not in REPLY_KINDS:
        raise UsageError(f"a reply's kind is answer or ack, not {visible(kind)!r}")
    reply_kind: Kind = "answer" if kind == "answer" else "ack"
    if subject is not None and len(subject) > MAX_SUBJECT:
        raise UsageError(f"the subject is longer than {MAX_SUBJECT} characters")
    parts = _files(text, files)
    v = verdict_of(home, ref)
    nothing = "nothing was made"
    if v.verdict != "verified" or v.sender.name is None or v.manifest is None:
        raise RefusedError(
            f"the bundle is {v.verdict.upper()}, not verified: only a confirmed contact's intact bundle can be "
            f"answered, and no grant applies to any other; {nothing}"
        )
    contact, bundle_kind = v.sender.name, v.manifest.kind
    grant = f'[[grant]] contact = {quoted(contact)}, kind = "{bundle_kind}", reply = true'
    if v.authority_errors:
        raise RefusedError(f"authority.toml has errors, so no grant applies (the reply needs {grant}); {nothing}")
    if not any(g.reply for g in v.authority):
        raise RefusedError(f"no grant lets an agent reply here: authority.toml needs {grant}; {nothing}")
    if v.state != "accepted":
        raise RefusedError(
            f"the bundle is {v.state}, not accepted: a person accepts it first (arrival is not consent); {nothing}"
        )
    home.staging.mkdir(parents=True, exist_ok=True)
    src = home.staging / f"mcp-reply-{secrets.token_hex(8)}"
    try:
        src.mkdir(mode=0o700)
        paths = []
        for name, body in parts:
            (src / name).write_bytes(body)
            paths.append(src / name)
    except OSError as exc:
        shutil.rmtree(src, ignore_errors=True)
        raise GageIOError(f"cannot write the reply's files: {exc.strerror}", path=str(src)) from exc
    try:
        doc = make_bundle(home, paths, kind=reply_kind, to=contact, parent=v.id or ref, subject=subject)
    finally:
        shutil.rmtree(src, ignore_errors=True)
    doc["sent"] = False
    doc["note"] = "made in this home's outbox and not sent: a person sends it (gage never sends on an agent's word)"
    return doc
