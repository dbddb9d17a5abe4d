"""The unattended rule's facts: which of this home's threads a reply belongs to, and how much of
that thread's budget is spent. Both come from the journal only (through its index), never from
the incoming manifest; the door itself is `gate.accept_unattended` (spec/gate.md).
"""

from __future__ import annotations

from typing import Any

from gage.home.journal.facts import BundleFacts
from gage.home.layout import Home


def sent_to(home: Home, parent: str | None) -> Any:
    """The `to` of this home's own `sent` entry for `parent` (None if it never sent it)."""
    if not parent:
        return None
    sent = home.journal.index.bundle(parent).sent
    return sent.get("to") if sent is not None else None


def sent_thread(home: Home, parent: str | None) -> str | None:
    """The budget key for a reply to `parent`: the bundle that started the thread, as this home's
    own records trace it; None if this home never sent `parent`.

    Only what this home sent, and to whom, decides it; never a `thread` a received manifest
    claims (the `thread` of my own `sent` entry is not used either: a reply copies it from the
    bundle it answers, so it can be another person's claim). From `parent`, the trace goes back
    through my own bundles' parents. Where one of mine answered a bundle I received, it goes on
    through that bundle only if that bundle's signature held when it arrived, its parent is a
    bundle I sent, and its signer could answer that bundle (I addressed it to them, or to
    nobody in particular); otherwise my bundle starts a thread, and a budget, of its own.

    Each step is a lookup of one or two ids in the journal index.
    """
    if not parent:
        return None
    index = home.journal.index
    index.sync()
    known: dict[str, BundleFacts] = {}

    def facts(bundle_id: str) -> BundleFacts:
        if bundle_id not in known:
            known[bundle_id] = index.bundle(bundle_id, sync=False)
        return known[bundle_id]

    if facts(parent).sent is None:
        return None
    cur = parent
    for _ in range(index.sent_count(sync=False) + 1):  # ids are content addresses, so no cycle; bounded all the same
        mine_sent = facts(cur).sent
        assert mine_sent is not None
        p = mine_sent.get("parent")
        if not isinstance(p, str) or not p:
            return cur
        if facts(p).sent is not None:
            cur = p  # my own follow-up to my own bundle
            continue
        theirs = facts(p).arrival
        mine = theirs.get("parent") if theirs is not None else None
        if not isinstance(mine, str) or facts(mine).sent is None:
            return cur
        answered = facts(mine).sent
        to = answered.get("to") if answered is not None else None
        if isinstance(to, list) and to and theirs is not None and theirs.get("sender") not in to:
            return cur
        cur = mine
    return cur


def unattended_used(home: Home, thread: str) -> int:
    """Unattended accepts already journaled in `thread`: the count survives restarts because it is the journal."""
    return home.journal.index.unattended(thread)
