"""Which actions apply to what is selected: one rule, read by the footer, the palette and the keys.

The footer once offered Accept and Reject on invalid and already accepted bundles, and
never showed Export, Save, Folder or the file keys. Textual asks a screen's
`check_action` before it shows a key in the footer and before it runs one; the screens
answer from here, and the command palette asks the same question (gage.tui.app), so
what is offered is exactly what can be done to the selected bundle, nothing more.

A row still being checked has no verdict yet: accepting it waits for the verdict and
then asks (gage.tui.inbox), so accept is offered for a pending row while it is checked.
"""

from __future__ import annotations

from gage.trust.verdict import Verdict

# Actions that act on a bundle (or marked bundles); everything else always applies.
BUNDLE_ACTIONS = frozenset({"open", "accept", "reject", "pair", "export", "folder", "save", "file", "mark"})


def can_accept(state: str | None, v: Verdict | None) -> bool:
    """Pending, and not known to be invalid."""
    return state == "pending" and (v is None or v.verdict != "invalid")


def can_reject(state: str | None) -> bool:
    return state == "pending"


def can_pair(v: Verdict | None) -> bool:
    """A good signature by a key that is neither mine nor already a live confirmed contact's.

    A retired key applies too: `p` on it offers its replacement or says why not.
    """
    if v is None:
        return True  # still checking: `p` waits for the verdict, then decides
    s = v.sender
    if s.key is None or s.is_me or not s.signature_ok or v.verdict == "invalid":
        return False
    return s.retired is not None or s.status != "confirmed"


def can_save(state: str | None, v: Verdict | None) -> bool:
    """A checked copy of the files: never of a rejected or invalid bundle."""
    return state in ("pending", "accepted", "outbox") and (v is None or v.verdict != "invalid")


def can_show_folder(state: str | None) -> bool:
    return state in ("accepted", "outbox")


def applies(action: str, state: str | None, v: Verdict | None) -> bool:
    """Whether `action` (an action name without parameters) applies to a bundle in `state`."""
    if action not in BUNDLE_ACTIONS:
        return True
    if state is None:
        return action == "pair"  # with nothing selected, `p` pairs from a key file
    return {
        "open": True,
        "export": True,
        "mark": True,
        "accept": can_accept(state, v),
        "reject": can_reject(state),
        "pair": can_pair(v),
        "save": can_save(state, v),
        "folder": can_show_folder(state),
        "file": True,
    }[action]
