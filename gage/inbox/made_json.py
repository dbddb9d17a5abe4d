"""`--json` for the commands that make a bundle (bundle, forward, key publish) and for init.

One shape for a bundle just made, whichever command made it, and one shape for a sender
everywhere: the sender is `verdict.Sender.to_json()`, the object `gage verdict --json` and
`gage list --json` give for the same bundle (tests/test_cli_json_more.py checks they agree).
Paths given on the command line go through `json_text`, since a name that is not UTF-8
would otherwise make JSON no strict reader accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gage.format.keys.asjson import key_json, with_fingerprints
from gage.format.manifest import Manifest
from gage.format.sanitize import json_text
from gage.home.cache.wordpairs import WordCache
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.trust.keytrust import key_trust
from gage.trust.verdict import Sender


def my_sender(home: Home, m: Manifest) -> dict[str, Any]:
    """The sender of a bundle this home has just signed, as the verdict names it.

    Built as `verdict.compute` builds it for a good signature, without hashing the payload a
    second time to find out what the signing just established.
    """
    trust = key_trust(home, Contacts.load(home.contacts_path), m.sender.key)
    return Sender(
        key=m.sender.key,
        name=trust.contact.name if trust.contact else None,
        status=trust.status,
        claimed_name=m.sender.name,
        signature_ok=True,
        is_me=home.identity.owns(m.sender.key),
    ).to_json()


def made(home: Home, m: Manifest, dest: Path, copied_to: Path | None) -> dict[str, Any]:
    """A bundle this home made: where it is, what it holds, and who signed it."""
    return {
        "id": m.id,
        "state": "outbox",
        "path": json_text(str(dest)),
        "copied_to": json_text(str(copied_to / m.id)) if copied_to is not None else None,
        "kind": m.kind,
        "created": m.created,
        "subject": m.subject,
        "parent": m.parent,
        "thread": m.thread,
        "to": [with_fingerprints(p.to_json()) for p in m.to],
        "files": [f.to_json() for f in m.files],
        "total_size": m.total_size,
        "sender": my_sender(home, m),
    }


def identity(home: Home) -> dict[str, Any]:
    """`gage init --json`: the home, and the identity as `gage id --json` gives it."""
    ident = home.identity
    words = WordCache(home.cache / "words.json").words_for(ident.key)
    out: dict[str, Any] = {
        "home": json_text(str(home.root)),
        "name": ident.name,
        **key_json(ident.key),
        "words": [list(p) for p in words],
    }
    if ident.protected:
        out["protected"] = True  # as `gage id --json` says it
    return out
