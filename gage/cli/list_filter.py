"""`gage list --kind K --from NAME --limit N`: the filters people know from `git log`.

`--from` takes a name only as the verdict allows one: a confirmed contact's (its sender `name`,
which is set only for a good signature from a confirmed key) or `me`. A name a candidate claims is
a claim, so it filters nothing: it is refused with exit 6 and the way to name that key instead,
its fingerprint (or 8+ hex digits of the key), which matches whatever the key's standing.
"""

from __future__ import annotations

from collections.abc import Sequence

from gage.format.errors import GageError, UnknownKeyError
from gage.format.keys import matches_ref, parse_key, ref_digits
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox.listed import ListedRow

_HEX = set("0123456789abcdef")


def _key_of(row: ListedRow) -> bytes | None:
    """The sender's key of a row (the verdict's sender, as JSON: its key text), or None."""
    text = row.sender.get("key")
    try:
        return parse_key(text) if isinstance(text, str) else None
    except GageError:
        return None


def _by_sender(home: Home, rows: Sequence[ListedRow], sender: str) -> list[ListedRow]:
    if sender == "me":
        return [r for r in rows if r.sender.get("is_me") is True]
    contacts = Contacts.load(home.contacts_path)
    if contacts.by_name(sender) is not None:
        return [r for r in rows if r.sender.get("name") == sender]
    wanted = ref_digits(sender)
    if len(wanted) >= 8 and set(wanted) <= _HEX:
        return [r for r in rows if (k := _key_of(r)) is not None and matches_ref(k, wanted)]
    raise UnknownKeyError(
        f"{sender!r} is not a confirmed contact's name here; a name a key only claims filters nothing. "
        "Give its fingerprint instead, as `gage list` and `gage contacts` show it"
    )


def filtered(
    home: Home, rows: Sequence[ListedRow], *, kind: str | None, sender: str | None, limit: int | None
) -> tuple[list[ListedRow], int]:
    """The rows that pass `--kind` and `--from`, cut to `--limit`, and how many the limit left out."""
    kept = [r for r in rows if kind is None or r.kind == kind]
    if sender is not None:
        kept = _by_sender(home, kept, sender)
    if limit is None or len(kept) <= limit:
        return kept, 0
    return kept[:limit], len(kept) - limit
