"""A candidate key named as a person types it: its key text, its fingerprint as listed, or a unique prefix of its hex.

Shared by `gage contacts` (forget, where) and `gage pair`, which starts from a candidate's fingerprint.
"""

from __future__ import annotations

from gage.format.errors import RefusedError, UnknownKeyError, UsageError
from gage.format.keys import matches_ref, ref_digits
from gage.home.contacts import Contacts


def candidate_key(contacts: Contacts, text: str) -> bytes:
    """A candidate named by its key text, its fingerprint as listed, or a unique prefix of its hex."""
    wanted = ref_digits(text)
    if len(wanted) < 8 or any(c not in "0123456789abcdef" for c in wanted):
        raise UsageError("give at least 8 hex digits of the candidate's key (as `gage contacts` shows it)")
    matches = [k for k in contacts.candidates if matches_ref(k, wanted)]
    if not matches:
        if any(matches_ref(c.key, wanted) for c in contacts.confirmed.values()):
            raise RefusedError("that key is a confirmed contact: `gage contacts remove NAME` unpairs it")
        raise UnknownKeyError(f"no candidate key starts with {wanted}")
    if len(matches) > 1:
        raise UsageError(f"{wanted} matches {len(matches)} candidates; give more of the key")
    return matches[0]
