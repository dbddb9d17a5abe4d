"""What the gate answers: its refusals and its results (gage/inbox/gate.py re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass

from gage.format.errors import GageError, GageIOError, RefusedError
from gage.trust import verdict as verdict_mod


class AlreadyError(RefusedError):
    """The bundle has already been decided: its message says "already accepted" or "already rejected"."""

    def __init__(self, bundle_id: str, state: str, *, extra: str = "") -> None:
        super().__init__(f"bundle {bundle_id[:12]} is already {state}{extra}")
        self.id = bundle_id
        self.state = state


class InvalidBundleError(RefusedError):
    """The staged bytes do not check out: an invalid bundle is never accepted."""

    def __init__(self, bundle_id: str, problems: list[str]) -> None:
        listed = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        super().__init__(f"will not accept bundle {bundle_id[:12]}: it is invalid ({listed}); it stays in pending")
        self.id = bundle_id
        self.problems = problems


class UnverifiedSenderError(RefusedError):
    """The signature is good but the key is not a confirmed contact: accept only with `unverified=True`."""

    def __init__(self, bundle_id: str, v: verdict_mod.Verdict) -> None:
        super().__init__(
            f"will not accept bundle {bundle_id[:12]}: its sender ({v.sender.label()}) is not a confirmed contact, "
            "so the bundle is UNVERIFIED; it stays in pending. Pair with the sender first, or accept it anyway "
            "with --unverified (the journal records that you did)"
        )
        self.id = bundle_id
        self.verdict = v


@dataclass
class AcceptResult:
    id: str
    how: str  # human, human-unverified, unattended
    verdict: verdict_mod.Verdict


@dataclass
class RejectResult:
    id: str
    previous_state: str


@dataclass
class UnattendedResult:
    """What the unattended rule did with one bundle: accepted (with `accepted` set) or left pending, and why."""

    id: str
    accepted: AcceptResult | None
    reason: str
    thread: str | None = None  # the budget key: the root this home recorded when it sent the parent
    used: int = 0  # unattended accepts in that thread, this one included when accepted
    budget: int = 0
    budget_spent: bool = False

    @property
    def ok(self) -> bool:
        return self.accepted is not None


@dataclass
class Decided:
    """One bundle of a bulk decision (`gate.decide_many`): its result, or why it stays pending."""

    id: str
    result: AcceptResult | RejectResult | None = None
    error: GageError | None = None


_DONE = {"accept": "accepted", "reject": "rejected"}


class NotDecidedError(GageIOError):
    """A bundle of a bulk decision that was not decided: the file system failed its batch (a full
    disk, an I/O error) before its journal line was durable, or a failure stopped the decision
    before its turn. `left_in` is the folder it is in now (pending, as a rule); the next accept or
    reject of it starts afresh."""

    def __init__(self, bundle_id: str, action: str, why: str, *, where: str = "pending") -> None:
        if where == "pending":
            then = "it is in pending: decide it again"
        else:
            then = f"it is still in {where} with no journal line; the next gage command " + (
                "puts it back in pending" if where == "accepted" else "records the rejection"
            )
        super().__init__(f"bundle {bundle_id[:12]} was not {_DONE[action]}: {why}; {then}")
        self.id = bundle_id
        self.left_in = where
