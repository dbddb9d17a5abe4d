"""The unattended rule's facts: which of this home's threads a reply belongs to, and how much of
that thread's budget is spent. Both come from the journal only (through its index), never from
the incoming manifest; the door itself is `gate.accept_unattended` (spec/gate.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from gage.home.journal.facts import BundleFacts
from gage.home.layout import Home


@dataclass(frozen=True)
class Trace:
    """A reply's place in this home's own threads: the budget key, and who may spend it."""

    thread: str  # the bundle of mine that started the thread, as my records trace it
    # The keys (key text) my bundles on the traced chain were addressed to, from the parent up
    # to the thread's start. Empty when none of them named anyone: an open thread.
    recipients: frozenset[str]

    def may_answer(self, signer: str) -> bool:
        """Whether a reply signed by `signer` may spend this thread's budget: it must be a recipient
        of the bundle it answers or of an earlier bundle of mine on the chain, unless no bundle
        on the chain named anyone (spec/gate.md, "Unattended accept", rule 3)."""
        return not self.recipients or signer in self.recipients


def trace(home: Home, parent: str | None) -> Trace | None:
    """The thread a reply to `parent` belongs to, and its recipients; None if this home never sent `parent`.

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
    recipients: set[str] = set()
    cur = parent
    for _ in range(index.sent_count(sync=False) + 1):  # ids are content addresses, so no cycle; bounded all the same
        mine_sent = facts(cur).sent
        assert mine_sent is not None
        to = mine_sent.get("to")
        if isinstance(to, list):
            recipients.update(t for t in to if isinstance(t, str))
        p = mine_sent.get("parent")
        if not isinstance(p, str) or not p:
            break
        if facts(p).sent is not None:
            cur = p  # my own follow-up to my own bundle
            continue
        theirs = facts(p).arrival
        mine = theirs.get("parent") if theirs is not None else None
        if not isinstance(mine, str) or facts(mine).sent is None:
            break
        answered = facts(mine).sent
        answered_to = answered.get("to") if answered is not None else None
        if isinstance(answered_to, list) and answered_to and theirs is not None and theirs.get("sender") not in answered_to:
            break
        cur = mine
    return Trace(thread=cur, recipients=frozenset(recipients))


def sent_thread(home: Home, parent: str | None) -> str | None:
    """The budget key for a reply to `parent` (`trace`'s thread); None if this home never sent `parent`."""
    found = trace(home, parent)
    return found.thread if found is not None else None


def unattended_used(home: Home, thread: str) -> int:
    """Unattended accepts already journaled in `thread`: the count survives restarts because it is the journal."""
    return home.journal.index.unattended(thread)
