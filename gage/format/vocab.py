"""The words gage spells its states, kinds, verdicts, stages and journal events with.

Each is a `Literal` of the very strings the JSON output, the journal and the spec use, so
a value stays a plain `str` at run time (no output or journal byte changes), while mypy
rejects a misspelling such as "acepted" wherever one of these types is expected. The
tuples beside them are what run-time checks iterate over, written out: the Literals are
defined only for mypy, so a command never imports `typing` (about 2 ms of start-up, issue
28). mypy checks each tuple's words against its Literal; tests/test_vocab.py holds each
tuple to exactly its Literal's words in order (it reads this file), and the tuples other
modules still spell out (home.STATES, manifest.KINDS, journal.EVENTS, retirement.REFUSALS,
bundle.STAGE_ORDER and each error class's stage) equal to these. A module that imports an
alias at run time (`from gage.format.vocab import Kind`) still gets the Literal, made on
first request by `__getattr__` below.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs start-up time (issue 28)
if TYPE_CHECKING:
    from typing import Final, Literal

    # Where a bundle is in a home's inbox: a place only the gate moves it between.
    State = Literal["pending", "accepted", "rejected"]
    # Every folder a bundle is held in: the inbox states, and what this home sent.
    Place = Literal["pending", "accepted", "rejected", "outbox"]
    # What a bundle says it is (spec/format.md); answers and acks name a parent.
    Kind = Literal["share", "question", "answer", "review-request", "ack"]
    # The receiver's verdict (spec/verdict.md), computed now, never read from the bundle.
    VerdictLevel = Literal["verified", "unverified", "invalid"]
    # A fact about a key in this home (spec/verdict.md): only the ceremony makes "confirmed".
    KeyStatus = Literal["confirmed", "retired", "candidate", "mine", "unknown"]
    # What this home knows about a key now (gage.trust.keytrust.key_trust): the one answer every
    # caller uses, for a sender, a forwarded hop, the pending limits, pairing and every carrier.
    KeyStanding = Literal["mine", "confirmed", "candidate", "superseded", "compromised", "unknown"]
    # Why a key was retired (spec/keys.md): a superseded key's past bundles still verify.
    Reason = Literal["superseded", "compromised"]
    # The stage that caught an error or problem: `stage` in every JSON error, and the exit code.
    Stage = Literal[
        "error",
        "usage",
        "malformed",
        "tampered",
        "signature",
        "unknown-key",
        "io",
        "not-found",
        "refused",
        "a2a-discovery",
        "a2a-refused",
        "a2a-transport",
        "passphrase",
        "a2a-unconfirmed",
        "relay",
    ]
    # The stages a bundle check reports, in the order they are checked.
    CheckStage = Literal["malformed", "signature", "tampered"]
    # What a check's problem or warning is about: an error's stage, or "name" (a warning: the
    # folder is not named by its id, which matters only where a name is expected).
    ProblemStage = Stage | Literal["name"]
    # What a journal line records (spec/journal.md).
    Event = Literal[
        "init",
        "sent",
        "imported",
        "received",
        "accepted",
        "rejected",
        "paired",
        "unpaired",
        "reconciled",
        "repaired",
        "key-retired",
        "key-countersigned",
        "key-statement-applied",
        "key-statement-refused",
        "envelope-dropped",
        "delivery-queued",
        "delivered",
        "delivery-cancelled",
    ]
    # The events an arrival is journaled under: `gage import`, or a carrier (watcher, A2A).
    ArrivalEvent = Literal["imported", "received"]
    # What became of a key statement (spec/keys.md section 4): applied, a refusal in the order
    # the refusals are checked, or an error reading the carrier.
    Refusal = Literal[
        "invalid-carrier",
        "malformed",
        "not-bound",
        "new-key-only",
        "replacement-unsigned",
        "downgraded",
        "own-key",
        "unknown-key",
        "candidate-key",
        "replayed",
        "would-unretire",
        "older",
        "already-retired",
    ]
    StatementWhy = Literal["applied", "error", Refusal]
    # What the watcher reports (gage/carriers/watch.py; `gage watch --json` prints it as `kind`).
    WatchKind = Literal[
        "started",
        "reconciled",
        "waiting",
        "imported",
        "accepted",
        "pending",
        "budget-spent",
        "key-statement",
        "skipped",
        "error",
        "delivered",
        "queued",
        "cancelled",
        "reconnected",
        "stopped",
    ]

STATES: Final[tuple[State, ...]] = ("pending", "accepted", "rejected")
PLACES: Final[tuple[Place, ...]] = ("pending", "accepted", "rejected", "outbox")
KINDS: Final[tuple[Kind, ...]] = ("share", "question", "answer", "review-request", "ack")
VERDICT_LEVELS: Final[tuple[VerdictLevel, ...]] = ("verified", "unverified", "invalid")
KEY_STATUSES: Final[tuple[KeyStatus, ...]] = ("confirmed", "retired", "candidate", "mine", "unknown")
KEY_STANDINGS: Final[tuple[KeyStanding, ...]] = ("mine", "confirmed", "candidate", "superseded", "compromised", "unknown")
REASONS: Final[tuple[Reason, ...]] = ("superseded", "compromised")
STAGES: Final[tuple[Stage, ...]] = (
    "error",
    "usage",
    "malformed",
    "tampered",
    "signature",
    "unknown-key",
    "io",
    "not-found",
    "refused",
    "a2a-discovery",
    "a2a-refused",
    "a2a-transport",
    "passphrase",
    "a2a-unconfirmed",
    "relay",
)
CHECK_STAGES: Final[tuple[CheckStage, ...]] = ("malformed", "signature", "tampered")
PROBLEM_STAGES: Final[tuple[ProblemStage, ...]] = (*STAGES, "name")
EVENTS: Final[tuple[Event, ...]] = (
    "init",
    "sent",
    "imported",
    "received",
    "accepted",
    "rejected",
    "paired",
    "unpaired",
    "reconciled",
    "repaired",
    "key-retired",
    "key-countersigned",
    "key-statement-applied",
    "key-statement-refused",
    "envelope-dropped",
    "delivery-queued",
    "delivered",
    "delivery-cancelled",
)
REFUSALS: Final[tuple[Refusal, ...]] = (
    "invalid-carrier",
    "malformed",
    "not-bound",
    "new-key-only",
    "replacement-unsigned",
    "downgraded",
    "own-key",
    "unknown-key",
    "candidate-key",
    "replayed",
    "would-unretire",
    "older",
    "already-retired",
)
WATCH_KINDS: Final[tuple[WatchKind, ...]] = (
    "started",
    "reconciled",
    "waiting",
    "imported",
    "accepted",
    "pending",
    "budget-spent",
    "key-statement",
    "skipped",
    "error",
    "delivered",
    "queued",
    "cancelled",
    "reconnected",
    "stopped",
)

if not TYPE_CHECKING:
    # The words of each alias, for `__getattr__`: mypy sees no module `__getattr__` (it would
    # let any misspelt name through), and tests/test_vocab.py holds these to the Literals.
    _WORDS = {
        "State": STATES,
        "Place": PLACES,
        "Kind": KINDS,
        "VerdictLevel": VERDICT_LEVELS,
        "KeyStatus": KEY_STATUSES,
        "KeyStanding": KEY_STANDINGS,
        "Reason": REASONS,
        "Stage": STAGES,
        "CheckStage": CHECK_STAGES,
        "Event": EVENTS,
        "ArrivalEvent": ("imported", "received"),
        "Refusal": REFUSALS,
        "StatementWhy": ("applied", "error", *REFUSALS),
        "WatchKind": WATCH_KINDS,
    }

    def __getattr__(name: str) -> object:
        """A Literal alias, made (and kept) on first request: only a module that imports one at
        run time pays for `typing`."""
        if name not in _WORDS and name != "ProblemStage":
            # Asked first, and typing not loaded: `from gage.format.vocab import KINDS` looks
            # up `__path__` here.
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from typing import Literal

        alias = __getattr__("Stage") | Literal["name"] if name == "ProblemStage" else Literal[_WORDS[name]]
        globals()[name] = alias
        return alias
