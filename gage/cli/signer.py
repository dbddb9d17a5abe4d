"""Who signed a bundle, for `verify` and `import`: the fingerprint every screen shows, and
the name the verdict allows, never a hybrid key's 3,984 characters on a line.

The name is a confirmed contact's only when the signature is good and a home is there to ask:
`verify` of a folder needs no home, and then the signer is a key and the name its manifest
claims. The whole key is in `--json`, beside its fingerprint.
"""

from __future__ import annotations

from typing import Any

from gage.cli.output import show
from gage.format.keys import short_fingerprint
from gage.format.keys.asjson import key_json
from gage.format.manifest import Manifest
from gage.format.sanitize import quoted
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.trust.keytrust import key_trust


def _name(home: Home | None, m: Manifest, signature_ok: bool) -> tuple[str | None, bool]:
    """The contact's name the verdict would show, and whether the key is this home's own."""
    if home is None or not signature_ok:
        return None, False
    trust = key_trust(home, Contacts.load(home.contacts_path), m.sender.key)
    return (trust.contact.name if trust.contact else None), home.identity.owns(m.sender.key)


def signer_json(home: Home | None, m: Manifest | None, signature_ok: bool) -> dict[str, Any] | None:
    """`{"key", "fingerprint", "name", "claimed_name", "signature_ok"}`, or None for an unreadable manifest."""
    if m is None:
        return None
    name, _ = _name(home, m, signature_ok)
    return key_json(m.sender.key) | {"name": name, "claimed_name": m.sender.name, "signature_ok": signature_ok}


def signer_text(home: Home | None, m: Manifest, signature_ok: bool) -> str:
    """`bob (3f2a-...)`, `me (3f2a-...)` or `key 3f2a-... (the manifest claims the name "bob")`."""
    fp = short_fingerprint(m.sender.key)
    name, mine = _name(home, m, signature_ok)
    if mine:
        return f"me ({fp})"
    if name is not None:
        return f"{show(name)} ({fp})"
    return f"key {fp} (the manifest claims the name {quoted(m.sender.name)})"
