"""The words gage spells its states, kinds, verdicts, stages and journal events with.

Each is a `Literal` of the very strings the JSON output, the journal and the spec use, so a
value stays a plain `str` at run time (no output or journal byte changes), while mypy rejects a
misspelling such as "acepted" wherever one of these types is expected. Each word is written
once, in its Literal; the tuples that run-time checks iterate over are read from it
(`typing.get_args`), so the two cannot drift. tests/test_vocab.py holds the tuples other
modules still spell out (home.STATES, manifest.KINDS, journal.EVENTS, retirement.REFUSALS,
bundle.STAGE_ORDER and each error class's stage) equal to these.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

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
# What a carrier reports (gage/carriers/events.py: the watcher, the mailbox follower, the outbox's
# sender, the A2A server); `gage watch --json` and `gage a2a serve --json` print it as `kind`.
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

STATES: Final[tuple[State, ...]] = get_args(State)
PLACES: Final[tuple[Place, ...]] = get_args(Place)
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)
VERDICT_LEVELS: Final[tuple[VerdictLevel, ...]] = get_args(VerdictLevel)
KEY_STATUSES: Final[tuple[KeyStatus, ...]] = get_args(KeyStatus)
KEY_STANDINGS: Final[tuple[KeyStanding, ...]] = get_args(KeyStanding)
REASONS: Final[tuple[Reason, ...]] = get_args(Reason)
STAGES: Final[tuple[Stage, ...]] = get_args(Stage)
CHECK_STAGES: Final[tuple[CheckStage, ...]] = get_args(CheckStage)
PROBLEM_STAGES: Final[tuple[ProblemStage, ...]] = (*STAGES, "name")
EVENTS: Final[tuple[Event, ...]] = get_args(Event)
REFUSALS: Final[tuple[Refusal, ...]] = get_args(Refusal)
WATCH_KINDS: Final[tuple[WatchKind, ...]] = get_args(WatchKind)
