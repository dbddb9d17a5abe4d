"""gage/format/vocab.py spells each state, kind, verdict, stage and event once, as a `Literal` mypy
checks. The run-time tuples other modules validate with must be exactly those words, in
the same order, or a type-checked spelling and an accepted one could drift apart."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

import gage
from gage import bundle
from gage.carriers.a2a import client  # noqa: F401  (its errors are GageErrors with stages of their own)
from gage.carriers.relay import errors as _relay_errors  # noqa: F401  (the relay's RelayError, stage "relay")
from gage.format import manifest, vocab
from gage.format.errors import GageError
from gage.format.keys import statement as keystatement
from gage.home import layout as home
from gage.home.contacts import Contacts
from gage.home.journal import log as journal
from gage.trust import frame, retirement

GAGE = Path(gage.__file__).parent


def test_the_inbox_states_are_the_vocabulary() -> None:
    assert home.STATES == vocab.STATES == ("pending", "accepted", "rejected")
    assert home.ALL_STATES == vocab.PLACES == (*vocab.STATES, "outbox")


def test_the_kinds_a_manifest_accepts_are_the_vocabulary() -> None:
    assert manifest.KINDS == vocab.KINDS
    assert set(manifest.KINDS_NEEDING_PARENT) <= set(vocab.KINDS)


def test_the_journal_events_are_the_vocabulary() -> None:
    assert journal.EVENTS == vocab.EVENTS
    assert set(get_args(vocab.ArrivalEvent)) <= set(vocab.EVENTS)


def test_key_statement_words_are_the_vocabulary() -> None:
    assert retirement.REFUSALS == vocab.REFUSALS
    assert keystatement.REASONS == vocab.REASONS
    why = set(get_args(vocab.StatementWhy))
    assert why == {retirement.APPLIED, "error", *vocab.REFUSALS}


def test_every_error_stage_is_in_the_vocabulary_and_every_stage_is_used() -> None:
    def subclasses(cls: type[GageError]) -> list[type[GageError]]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    used = {cls.stage for cls in subclasses(GageError)}
    assert used <= set(vocab.STAGES)
    assert set(vocab.STAGES) == used
    assert tuple(bundle.STAGE_ORDER) == vocab.CHECK_STAGES
    assert set(vocab.CHECK_STAGES) <= set(vocab.STAGES)


def test_the_frame_explains_every_verdict_and_place() -> None:
    assert set(frame.VERDICT_MEANING) == set(vocab.VERDICT_LEVELS)
    assert set(frame.STATE_MEANING) == {*vocab.PLACES, None}


def test_each_key_status_is_one_of_the_vocabulary(tmp_path: Path) -> None:
    """contacts.status_of, the only place a key's status is decided, says each of the words."""
    contacts = Contacts(tmp_path / "contacts.toml")
    stranger, candidate, confirmed = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32
    assert contacts.add_candidate(candidate, "cand", "a test")
    contacts._confirm("olga", confirmed, "word-pairs")
    said = {contacts.status_of(k) for k in (stranger, candidate, confirmed)}
    assert said == {"unknown", "candidate", "confirmed"} and said <= set(vocab.KEY_STATUSES)
    assert "retired" in vocab.KEY_STATUSES  # a retired contact's key (tests/test_key_retire_apply.py)


def _string_args(path: Path, func: str) -> set[str]:
    """The first argument of every call to `func` in `path`, where it is a string literal."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else None
            if name == func and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def test_the_watcher_reports_only_kinds_of_the_vocabulary() -> None:
    """Every carrier that reports with the shared event type (gage.carriers.events) says only
    kinds of the vocabulary: the drop folders, the mailbox follower, the outbox's sender, the
    A2A server, and `gage a2a serve`'s own start and stop."""
    from gage.cli.watch_log import QUIET_KINDS

    for reporter in ("watch.py", "relay/follow.py", "outbox_loop.py", "a2a/reports.py", "../cli/commands/a2a.py"):
        said = _string_args(GAGE / "carriers" / reporter, "WatchEvent")
        assert said and said <= set(vocab.WATCH_KINDS), reporter
    assert set(QUIET_KINDS) <= set(vocab.WATCH_KINDS)


def test_every_event_the_code_journals_is_in_the_vocabulary() -> None:
    """A literal event name passed to `journal.append` anywhere in gage is one journal.EVENTS allows."""
    said: set[str] = set()
    for path in GAGE.rglob("*.py"):
        said |= _journal_like(path)
    assert said and said <= set(vocab.EVENTS)


def _journal_like(path: Path) -> set[str]:
    """Literal first arguments of `<...>journal.append(...)` calls only (not list.append)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Attribute | ast.Name)
            and (node.func.value.attr if isinstance(node.func.value, ast.Attribute) else node.func.value.id) == "journal"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
    return out


# Each word is written once, in its Literal; the tuples are read from it. These hold the tuples to
# their Literals' words in order, and the words to the ones the spec and the journal use.
PAIRS = {
    "STATES": "State",
    "PLACES": "Place",
    "KINDS": "Kind",
    "VERDICT_LEVELS": "VerdictLevel",
    "KEY_STATUSES": "KeyStatus",
    "KEY_STANDINGS": "KeyStanding",
    "REASONS": "Reason",
    "STAGES": "Stage",
    "CHECK_STAGES": "CheckStage",
    "PROBLEM_STAGES": "ProblemStage",
    "EVENTS": "Event",
    "REFUSALS": "Refusal",
    "WATCH_KINDS": "WatchKind",
}


def _flat(alias: object) -> tuple[str, ...]:
    return tuple(a for arg in get_args(alias) for a in ((arg,) if isinstance(arg, str) else _flat(arg)))


def test_each_tuple_is_exactly_its_literals_words() -> None:
    for name, alias in PAIRS.items():
        words = getattr(vocab, name)
        assert isinstance(words, tuple) and words and all(isinstance(w, str) for w in words), name
        assert words == _flat(getattr(vocab, alias)), name
    assert vocab.KINDS == ("share", "question", "answer", "review-request", "ack")
    assert vocab.REASONS == ("superseded", "compromised")
    assert vocab.PROBLEM_STAGES == (*vocab.STAGES, "name")
    assert vocab.REFUSALS[-1] == "already-retired" and len(vocab.REFUSALS) == 13
    assert _flat(vocab.StatementWhy) == ("applied", "error", *vocab.REFUSALS)
    assert _flat(vocab.ArrivalEvent) == ("imported", "received")


def test_an_alias_imported_at_run_time_is_its_literal() -> None:
    from gage.format.vocab import Kind

    assert Kind is vocab.Kind and str(Kind) == "typing.Literal['share', 'question', 'answer', 'review-request', 'ack']"
    with pytest.raises(AttributeError, match="Kinds"):
        vocab.Kinds  # type: ignore[attr-defined]  # noqa: B018  (a misspelt alias is no alias)
