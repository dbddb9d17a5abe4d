"""The frame: what a reader is told about a bundle before any of its payload.

The frame is written by gage alone from the verdict. The payload follows between fence
lines carrying a random token that is fresh for every read and named in the frame, and
every payload line is prefixed with "| ", so no payload can end the frame, open a fake
one, or pass a line off as gage's. All untrusted values are shown with their control
characters made visible. See spec/frame.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from gage.bundle import PAYLOAD, safeopen
from gage.format.errors import MalformedError
from gage.format.keys import key_shown, parse_key
from gage.format.record import Frozen, set_field
from gage.format.sanitize import (
    TEXT_SAMPLE,
    looks_binary,
    payload_lines,
    quoted,
    visible,
)
from gage.format.signing import is_hybrid
from gage.trust.verdict import NO_AUTHORITY, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gage.format.vocab import Place, VerdictLevel

PREVIEW_LIMIT = 256 * 1024
LINE_PREFIX = "| "

VERDICT_MEANING: dict[VerdictLevel, str] = {
    "verified": "signature good, and the key is a contact confirmed by the word-pair ceremony",
    "unverified": "signature good, but the key is NOT confirmed: anyone could have made this key",
    "invalid": "malformed, tampered or badly signed: do not trust or act on anything in it",
}

STATE_MEANING: dict[Place | None, str] = {
    "pending": "pending: NOT accepted (arrival is not consent)",
    "accepted": "accepted",
    "rejected": "rejected",
    "outbox": "in my outbox (I made this)",
    None: "not in this home (read from a folder)",
}


class Field(Frozen):
    __slots__ = ("label", "value", "severity")
    label: str
    value: str  # already made visible: safe to print or draw as plain text
    severity: str  # normal, good, warn, bad

    def __init__(self, label: str, value: str, severity: str = "normal") -> None:
        set_field(self, "label", label)
        set_field(self, "value", value)
        set_field(self, "severity", severity)


def _verdict_meaning(v: Verdict) -> str:
    r = v.sender.retired
    if v.verdict == "verified" and r is not None:
        return "signature good, and the key is a contact's previous key, confirmed by the word-pair ceremony and since retired as superseded"
    if v.verdict == "unverified" and r is not None and r["reason"] == "compromised" and not v.sender.is_me:
        return "signature good, but the key is retired as COMPROMISED by its owner: anyone holding it could have signed this"
    return VERDICT_MEANING[v.verdict]


def _retired_words(r: dict[str, object]) -> str:
    """How a retirement reads in the frame: the reason, and the time as the signer's claim."""
    out = f"retired as {r['reason']} as of {r['retired_at']} (the statement's claim)"
    if r.get("replacement"):
        out += f", naming a new key {_key_words(r['replacement'])}"
    return out


def _key_words(text: object) -> str:
    """Key text from a verdict, as `key_shown` gives it (a hybrid key by its fingerprint)."""
    try:
        return key_shown(parse_key(text))
    except MalformedError:
        return visible(str(text))


def _scheme_words(key: bytes) -> str:
    if is_hybrid(key):
        return "hybrid: Ed25519 and ML-DSA-65, both verified"
    return "classical-only: Ed25519 alone, no ML-DSA-65 half (an older key)"


def new_token() -> str:
    return os.urandom(8).hex()


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
    out.append(Field("verdict", f"{v.verdict.upper()}: {_verdict_meaning(v)}", sev))
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
                f"NOT proven: the signature does not verify, so the key the manifest names ({key_shown(s.key)}) "
                f"and the name it claims ({claim}) are unproven",
                "bad",
            )
        )
    elif s.is_me and s.retired is not None:
        out.append(Field("sender", f"me: a key this home retired ({key_shown(s.key)}, {_retired_words(s.retired)}); a bundle I signed", "normal"))
    elif s.is_me:
        out.append(Field("sender", f"me: this home's own key ({key_shown(s.key)}); a bundle I signed", "normal"))
    elif s.retired is not None and s.retired["reason"] == "compromised":
        contact = visible(str(s.retired["contact"]))
        out.append(
            Field(
                "sender",
                f"a COMPROMISED key: {contact}'s retired key ({key_shown(s.key)}), {_retired_words(s.retired)}. Anyone "
                f"holding it could have signed this, whatever time it claims; it claims the name {quoted(s.claimed_name or '')} (unchecked)",
                "bad",
            )
        )
    elif s.retired is not None and s.name is not None:
        out.append(
            Field(
                "sender",
                f"{visible(s.name)} (confirmed contact), signed with {visible(s.name)}'s previous key ({key_shown(s.key)}), "
                f"{_retired_words(s.retired)}",
                "good",
            )
        )
    elif s.status == "confirmed":
        out.append(Field("sender", f"{visible(s.name or '')} (confirmed contact; {key_shown(s.key)})", "good"))
    else:
        claim = quoted(s.claimed_name or "")
        what = (
            "a candidate: a key this home has been shown, never confirmed by the ceremony"
            if s.status == "candidate"
            else "a key this home does not know"
        )
        out.append(
            Field("sender", f"{s.label()} ({what}; {key_shown(s.key)}); it claims the name {claim} (unchecked)", "warn")
        )
    if s.key is not None and s.signature_ok:
        # A fact about how the bundle was signed, never a warning: classical-only bundles stay valid.
        out.append(Field("signature", _scheme_words(s.key), "normal"))
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
            reply = "; reply = true: an agent may make a reply bundle in the outbox" if g.reply else ""
            out.append(Field("authority", f"{visible(g.may)} (granted to {visible(g.contact)} for {g.kind} in authority.toml{reply})", "good"))
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


# How a reader asks for a pending or rejected bundle's payload, in the reader's own terms: the
# command line's flag here; an interface with other words (the MCP server's tools) names its own.
ASK_PENDING = "`gage read ID --pending`"


def payload_status(v: Verdict, *, show_pending: bool, ask: str = ASK_PENDING) -> tuple[bool, str]:
    if v.verdict == "invalid":
        return False, "WITHHELD: the bundle is invalid, so none of its payload is shown"
    if v.state == "pending" and not show_pending:
        return False, f"not shown: the bundle is pending (not accepted); {ask} shows it without accepting"
    if v.state == "rejected" and not show_pending:
        return False, f"not shown: the bundle was rejected; {ask} shows it anyway"
    return True, ""


def render(v: Verdict, *, show_pending: bool = False, token: str | None = None, ask: str = ASK_PENDING) -> Iterator[str]:
    """The frame, then the payload. Yields lines without newlines."""
    token = token or new_token()
    show, why = payload_status(v, show_pending=show_pending, ask=ask)
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
    for entry in v.manifest.files:
        name = quoted(entry.path)
        try:
            data, size_if_more = safeopen.read_head(v.path, f"{PAYLOAD}/{entry.path}", PREVIEW_LIMIT)
        except OSError as exc:
            yield f"---- payload {token} file {name}: cannot be read ({exc.strerror}) ----"
            continue
        # spec/frame.md: the first 8 KiB decide; a character cut at 8 KiB counts only if the file goes on.
        more = size_if_more is not None
        if looks_binary(data[:TEXT_SAMPLE], more=more or len(data) > TEXT_SAMPLE):
            yield f"---- payload {token} file {name} ({entry.size} bytes, binary): not printed ----"
            continue
        yield f"---- payload {token} begin file {name} ({entry.size} bytes, text) ----"
        # Every control character escaped (tabs too, as \t), a literal backslash doubled, a
        # byte that is not UTF-8 as \udcNN, and a character cut at the preview limit left out.
        lines, shown = payload_lines(data, more=more)
        for line in lines:
            yield LINE_PREFIX + line
        if size_if_more is not None:
            yield f"---- payload {token} note: {max(size_if_more - shown, 1)} more bytes of {name} not shown ----"
        yield f"---- payload {token} end file {name} ----"
