"""gage/format/vocab.py spells each state, kind, verdict, stage and event once, as a `Literal` mypy
checks. The run-time tuples other modules validate with must be exactly those words, in
the same order, or a type-checked spelling and an accepted one could drift apart."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

import gage
from gage import bundle
from gage.carriers.a2a import client  # noqa: F401  (its errors are GageErrors with stages of their own)
from gage.carriers.relay import errors as _relay_errors  # noqa: F401  (the relay's RelayError, stage "relay")
from gage.format import keystatement, manifest, vocab
from gage.format.errors import GageError
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
    from gage.cli.watch_log import QUIET_KINDS

    said = _string_args(GAGE / "carriers" / "watch.py", "WatchEvent")
    assert said and said <= set(vocab.WATCH_KINDS)
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


# vocab.py defines its Literals only for mypy (a command never imports typing, issue 28) and
# writes each run-time tuple out; these read the file and hold the two to the same words.
VOCAB = GAGE / "format" / "vocab.py"


def _words(node: ast.expr, known: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The strings a Literal (or tuple) expression in vocab.py spells, aliases and unions flattened."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Name):
        return known[node.id]
    if isinstance(node, ast.Starred):
        return _words(node.value, known)
    if isinstance(node, ast.Tuple):
        return tuple(w for item in node.elts for w in _words(item, known))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
        return _words(node.slice, known)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _words(node.left, known) + _words(node.right, known)
    raise AssertionError(f"vocab.py spells a word in a way this test cannot read: {ast.dump(node)}")


def _read_vocab(source: str) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, tuple[str, ...]]]]:
    """From vocab.py's text: each Literal alias's words, and each tuple's alias and words."""
    tree = ast.parse(source)
    block = next(n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING")
    literals: dict[str, tuple[str, ...]] = {}
    for n in block.body:
        if isinstance(n, ast.Assign):
            assert len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            literals[n.targets[0].id] = _words(n.value, literals)
    tuples: dict[str, tuple[str, tuple[str, ...]]] = {}
    for n in tree.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
            # NAME: Final[tuple[Alias, ...]] = (...)
            ann = n.annotation
            assert isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Subscript), ast.dump(ann)
            first = ann.slice.slice
            assert isinstance(first, ast.Tuple) and isinstance(first.elts[0], ast.Name), ast.dump(ann)
            tuples[n.target.id] = (first.elts[0].id, _words(n.value, {k: v[1] for k, v in tuples.items()}))
    return literals, tuples


def _drift(source: str) -> list[str]:
    """Each tuple whose words are not exactly (in order) its Literal's."""
    literals, tuples = _read_vocab(source)
    return [name for name, (alias, words) in tuples.items() if words != literals[alias]]


def _flat(alias: object) -> tuple[str, ...]:
    return tuple(a for arg in get_args(alias) for a in ((arg,) if isinstance(arg, str) else _flat(arg)))


def test_each_tuple_is_exactly_its_literals_words() -> None:
    source = VOCAB.read_text(encoding="utf-8")
    literals, tuples = _read_vocab(source)
    assert len(tuples) == 13 and len(literals) == 15  # every tuple and alias was read
    assert _drift(source) == []
    for name, (_alias, words) in tuples.items():
        assert getattr(vocab, name) == words  # what was read is what runs
    # The check can fail: a word dropped or moved in a tuple, or added to a Literal.
    for was, now, drifted in (
        ('"review-request", "ack")', '"review-request")', ["KINDS"]),
        ('("superseded", "compromised")', '("compromised", "superseded")', ["REASONS"]),
        ('        "already-retired",\n    ]', '        "already-retired",\n        "newer",\n    ]', ["REFUSALS"]),
    ):
        assert source.count(was) == 1, was
        assert _drift(source.replace(was, now)) == drifted


def test_an_alias_imported_at_run_time_is_its_literal() -> None:
    """Modules and tests that import an alias at run time get the Literal, made from the words."""
    literals, _tuples = _read_vocab(VOCAB.read_text(encoding="utf-8"))
    for name, words in literals.items():
        assert _flat(getattr(vocab, name)) == words, name
    from gage.format.vocab import Kind

    assert Kind is vocab.Kind and str(Kind) == "typing.Literal['share', 'question', 'answer', 'review-request', 'ack']"
    with pytest.raises(AttributeError, match="Kinds"):
        vocab.Kinds  # noqa: B018  (a misspelt alias is no alias)


def test_the_vocabulary_loads_typing_only_when_an_alias_is_asked_for() -> None:
    probe = (
        "import sys\n"
        "from gage.format.vocab import KINDS, PLACES\n"
        "before = 'typing' in sys.modules\n"
        "from gage.format.vocab import Kind\n"
        "print(before, 'typing' in sys.modules, Kind.__origin__ is __import__('typing').Literal)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert res.stdout.split() == ["False", "True", "True"]
