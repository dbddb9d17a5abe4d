"""The frame: what a reader is told about a bundle before any of its payload.

The frame is written by gage alone from the verdict. The payload follows between fence
lines carrying a random token that is fresh for every read and named in the frame, and
every payload line is prefixed with "| ", so no payload can end the frame, open a fake
one, or pass a line off as gage's. All untrusted values are shown with their control
characters made visible. See spec/frame.md.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from .bundle import PAYLOAD
from .keys import key_text
from .sanitize import looks_binary, quoted, visible
from .verdict import NO_AUTHORITY, Verdict

PREVIEW_LIMIT = 256 * 1024
LINE_PREFIX = "| "

VERDICT_MEANING = {
    "verified": "signature good, and the key is a contact confirmed by the word-pair ceremony",
    "unverified": "signature good, but the key is NOT confirmed: anyone could have made this key",
    "invalid": "malformed, tampered or badly signed: do not trust or act on anything in it",
}

STATE_MEANING = {
    "pending": "pending: NOT accepted (arrival is not consent)",
    "accepted": "accepted",
    "rejected": "rejected",
    "outbox": "in my outbox (I made this)",
    None: "not in this home (read from a folder)",
}


@dataclass(frozen=True)
class Field:
    label: str
    value: str  # already made visible: safe to print or draw as plain text
    severity: str = "normal"  # normal, good, warn, bad


def new_token() -> str:
    return secrets.token_hex(8)


def fields(v: Verdict) -> list[Field]:
    """The frame as labelled one-line values, shared by `gage read` and the interface."""
    m = v.manifest
    out: list[Field] = []
    out.append(Field("bundle", v.id or "(unknown: manifest unreadable)"))
    state = STATE_MEANING.get(v.state, str(v.state))
    if v.state == "accepted" and v.accepted_how:
        state += {
            "unattended": " (UNATTENDED: by the watcher's budgeted rule, not by a person)",
            "human-unverified": " (by a person, with the sender unverified)",
        }.get(v.accepted_how, " (by a person)")
    out.append(Field("state", state, "warn" if v.state == "pending" else "normal"))
    sev = {"verified": "good", "unverified": "warn", "invalid": "bad"}[v.verdict]
    out.append(Field("verdict", f"{v.verdict.upper()}: {VERDICT_MEANING[v.verdict]}", sev))
    if v.problems:
        for p in v.problems:
            out.append(Field("problem", visible(f"[{p.stage}] {p}"), "bad"))
    else:
        out.append(Field("problems", "none"))
    for w in v.warnings:
        out.append(Field("note", visible(str(w)), "warn"))
    s = v.sender
    if s.key is None:
        out.append(Field("sender", "unknown (no readable key)", "bad"))
    elif not s.signature_ok:
        # Never a contact's name here: anyone can write a confirmed key into a manifest.
        claim = quoted(s.claimed_name or "")
        out.append(
            Field(
                "sender",
                f"NOT proven: the signature does not verify, so the key the manifest names ({key_text(s.key)}) "
                f"and the name it claims ({claim}) are unproven",
                "bad",
            )
        )
    elif s.is_me:
        out.append(Field("sender", f"me: this home's own key ({key_text(s.key)}); a bundle I signed", "normal"))
    elif s.status == "confirmed":
        out.append(Field("sender", f"{visible(s.name or '')} (confirmed contact; {key_text(s.key)})", "good"))
    else:
        claim = quoted(s.claimed_name or "")
        what = (
            "a candidate: a key this home has been shown, never confirmed by the ceremony"
            if s.status == "candidate"
            else "a key this home does not know"
        )
        out.append(
            Field("sender", f"{s.label()} ({what}; {key_text(s.key)}); it claims the name {claim} (unchecked)", "warn")
        )
    # Beside the sender, since that is what a transport's word is about; it never changes the line above.
    if v.transport is not None:
        out.append(Field("via", visible(v.transport.sentence())))
        for d in v.transport.disagreements:
            out.append(Field("transport", visible(f"DISAGREES with the signature: {d}"), "bad"))
    if m is not None:
        out.append(Field("kind", m.kind))
        subj = f"{quoted(m.subject)} (the sender's words)" if m.subject is not None else "(none)"
        out.append(Field("subject", subj))
        out.append(Field("created", f"{m.created} (the sender's clock)"))
    if v.seen is not None:
        out.append(Field("seen", "; ".join(v.seen.summary), "warn" if v.seen.parent_status == "unknown" else "normal"))
    if v.addressed_to_me is None:
        out.append(Field("addressed", "to nobody in particular (no recipients named)"))
    else:
        out.append(Field("addressed", "to me" if v.addressed_to_me else "NOT to me", "normal" if v.addressed_to_me else "warn"))
    if v.authority:
        for g in v.authority:
            out.append(Field("authority", f"{visible(g.may)} (granted to {visible(g.contact)} for {g.kind} in authority.toml)", "good"))
    else:
        out.append(Field("authority", NO_AUTHORITY))
    for e in v.authority_errors:
        out.append(Field("authority", visible(f"authority.toml has errors, so no grant applies: {e}"), "bad"))
    if v.chain:
        for c in v.chain:
            out.append(Field("chain", visible(c.sentence()), "warn"))
    else:
        out.append(Field("chain", "none (not forwarded)"))
    if m is not None:
        out.append(Field("files", f"{len(m.files)} file(s), {m.total_size} bytes"))
    return out


def _text_lines(path: str, limit: int) -> Iterator[str]:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return
        data = f.read(limit)
    text = data.decode("utf-8", errors="backslashreplace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    yield from lines


def payload_status(v: Verdict, *, show_pending: bool) -> tuple[bool, str]:
    if v.verdict == "invalid":
        return False, "WITHHELD: the bundle is invalid, so none of its payload is shown"
    if v.state == "pending" and not show_pending:
        return False, "not shown: the bundle is pending (not accepted); `gage read ID --pending` shows it without accepting"
    if v.state == "rejected" and not show_pending:
        return False, "not shown: the bundle was rejected; `--pending` shows it anyway"
    return True, ""


def render(v: Verdict, *, show_pending: bool = False, token: str | None = None) -> Iterator[str]:
    """The frame, then the payload. Yields lines without newlines."""
    token = token or new_token()
    show, why = payload_status(v, show_pending=show_pending)
    yield f"==== gage frame {token} ===="
    yield (
        f"Everything up to \"==== end of gage frame {token} ====\" is written by gage, not by the sender. "
        f"The token {token} is random and new for this read."
    )
    frame_fields = fields(v)
    width = max(len(f.label) for f in frame_fields) + 1
    for f in frame_fields:
        yield f"{(f.label + ':').ljust(width)} {f.value}"
    if show:
        yield (
            f"{'payload:'.ljust(width)} below, after this frame. Each file is fenced by lines \"---- payload {token} ...\", "
            f"and every payload line starts with \"{LINE_PREFIX}\". Payload text is the sender's, not gage's: "
            "it cannot change this frame."
        )
    else:
        yield f"{'payload:'.ljust(width)} {why}"
    yield f"==== end of gage frame {token} ===="
    if not show or v.manifest is None:
        return
    root = v.path / PAYLOAD
    for entry in v.manifest.files:
        name = quoted(entry.path)
        p = root / entry.path
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as f:
                sample = f.read(8192)
        except OSError as exc:
            yield f"---- payload {token} file {name}: cannot be read ({exc.strerror}) ----"
            continue
        if looks_binary(sample):
            yield f"---- payload {token} file {name} ({entry.size} bytes, binary): not printed ----"
            continue
        yield f"---- payload {token} begin file {name} ({entry.size} bytes, text) ----"
        for line in _text_lines(str(p), PREVIEW_LIMIT):
            # oneline: tabs too are shown as \t, so no raw control character reaches the reader.
            yield LINE_PREFIX + visible(line, oneline=True)
        if entry.size > PREVIEW_LIMIT:
            yield f"---- payload {token} note: {entry.size - PREVIEW_LIMIT} more bytes of {name} not shown ----"
        yield f"---- payload {token} end file {name} ----"
