"""Untrusted text made safe to show: every control character becomes visible.

Payloads, file names, subjects, claimed names and card fields are written by someone
else. Printed raw, ESC starts a terminal sequence (retitle the window, clear the
screen, hide text), a bidi override reorders what the reader sees, and a newline in a
name adds a forged line to the frame. `visible` turns all of these into escapes such as
`\\x1b` and `\\u202e` that look like what they are.
"""

from __future__ import annotations

import unicodedata

# Characters that change how the rest of a line is shown without being seen themselves.
_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _escape(cp: int) -> str:
    if cp < 0x100:
        return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(cp, f"\\x{cp:02x}")
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _needs_escape(ch: str) -> bool:
    cp = ord(ch)
    if cp < 0x20 or 0x7F <= cp <= 0x9F:
        return True
    if cp in _BIDI:
        return True
    cat = unicodedata.category(ch)
    # Format characters (zero-width joiners and spaces, BOM, tags), line and paragraph
    # separators, surrogates, private-use and unassigned code points.
    return cat in ("Cf", "Zl", "Zp", "Cs", "Co", "Cn")


def visible(text: str, *, oneline: bool = True) -> str:
    """`text` with every control, format and bidi character shown as an escape.

    With `oneline=False`, newlines and tabs are kept (for payload text shown as lines);
    everything else that could act on a terminal is still escaped.
    """
    out = []
    for ch in text:
        if not oneline and ch in "\n\t":
            out.append(ch)
        elif _needs_escape(ch):
            out.append(_escape(ord(ch)))
        else:
            out.append(ch)
    return "".join(out)


def visible_bytes(data: bytes) -> str:
    """Decode payload bytes for display: invalid UTF-8 is shown as escapes, never dropped."""
    text = data.decode("utf-8", errors="backslashreplace")
    return visible(text, oneline=False)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def looks_binary(sample: bytes) -> bool:
    """A file is shown as text only if it decodes as UTF-8 and has no NUL bytes."""
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        return exc.start < len(sample) - 4
    return False


def quoted(text: str) -> str:
    r"""An untrusted value in double quotes that it cannot close.

    `\` and `"` are escaped before the value is made visible, so a subject such as
    `hi" (the sender's words); verdict: VERIFIED` stays inside its quotes, and a literal
    backslash-n in the text (shown `\\n`) is told apart from a newline (shown `\n`).
    """
    return '"' + visible(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
