"""Public key text: the export form of a key, parsing it back, and the short forms a person reads.

Kept apart from gage.format.keys (which re-exports every name here, so callers import them from
there) so that the identity's module stays small.
"""

from __future__ import annotations

import unicodedata

from gage.format import sha256, signing
from gage.format.errors import MalformedError, UsageError
from gage.format.keys.fingerprint import fingerprint

KEY_PREFIX = "ed25519:"
# A hybrid key's text: the Ed25519 key's 64 hex digits, then the ML-DSA-65 key's 3904.
HYBRID_PREFIX = "ed25519+mldsa65:"


def key_text(key: bytes) -> str:
    """The export form of a public key: `ed25519:` and 64 lower-case hex digits, or for a
    hybrid key `ed25519+mldsa65:` and 3968 (the Ed25519 key first, then the ML-DSA-65 key)."""
    return (HYBRID_PREFIX if signing.is_hybrid(key) else KEY_PREFIX) + key.hex()


def parse_key(text: object, *, field: str = "key") -> bytes:
    if not isinstance(text, str):
        raise MalformedError("a key must be a string", field=field)
    if text.startswith(HYBRID_PREFIX):
        hexpart, digits = text[len(HYBRID_PREFIX) :], 2 * signing.HYBRID_KEY_LEN
    elif text.startswith(KEY_PREFIX):
        hexpart, digits = text[len(KEY_PREFIX) :], 2 * signing.ED25519_KEY_LEN
    else:
        raise MalformedError(f"a key must start with {KEY_PREFIX!r} or {HYBRID_PREFIX!r}", field=field)
    try:
        key = bytes.fromhex(hexpart) if len(hexpart) == digits else None
    except ValueError:
        key = None
    # fromhex takes upper case and spaces too: only exact lower-case hex gives back the same text.
    # (Checked this way, in C, because a hybrid key's 3968 digits are read for every manifest listed.)
    if key is None or key.hex() != hexpart:
        raise MalformedError(f"a key must be {digits} lower-case hex digits after the prefix", field=field)
    return key


def short_fingerprint(key: bytes) -> str:
    """A glanceable label for a key (gage/format/keys/fingerprint.py). Not a security check: the word-pairs are.

    A hybrid key's label is made from both halves, so it never equals the label of its own
    Ed25519 half offered alone (a downgrade shows as a different key)."""
    return fingerprint(key)


def key_shown(key: bytes) -> str:
    """A key for a person to read in one line: the key text of a classical key; a hybrid key's
    3984 characters would bury the line, so it is named by its fingerprint (its full text is in
    `--json` and in `gage key export`)."""
    if signing.is_hybrid(key):
        return f"hybrid key {short_fingerprint(key)}, Ed25519 + ML-DSA-65"
    return key_text(key)


def key_scheme(key: bytes) -> str:
    """What the verdict and the frame say of a key: `hybrid` or `classical-only`. A fact, not a warning."""
    return "hybrid" if signing.is_hybrid(key) else "classical-only"


def matches_ref(key: bytes, wanted: str) -> bool:
    """`wanted` (lower-case hex, dashes removed) starts the key's hex or its short fingerprint."""
    return key.hex().startswith(wanted) or short_fingerprint(key).replace("-", "").startswith(wanted)


def ref_digits(ref: str) -> str:
    """A key as a person types it (key text, a fingerprint, hex digits) reduced to hex digits."""
    wanted = ref.strip().lower()
    for prefix in (HYBRID_PREFIX, KEY_PREFIX):
        wanted = wanted.removeprefix(prefix)
    return wanted.replace("-", "")


def key_digest(key: bytes) -> str:
    return sha256.hexdigest(key)


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
