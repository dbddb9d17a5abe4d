"""`gage journal verify`: the whole journal read and checked, line by line, against its chain and head.

The one reader that must see every byte (spec/journal.md, "Verifying"); everything else reads
the tail or the index.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gage.format import sha256, strictjson
from gage.format.errors import MalformedError
from gage.format.manifest import is_id
from gage.home.journal.facts import Fold, row_facts
from gage.home.journal.lines import EVENTS, GENESIS, LINE_LIMIT, line_hash, seq_of

if TYPE_CHECKING:
    from gage.home.journal.log import Journal


@dataclass
class JournalReport:
    ok: bool
    entries: int
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(journal) -> dict[str, Any]:
        return {"ok": journal.ok, "entries": journal.entries, "problems": journal.problems, "notes": journal.notes}


def verify(journal: Journal, *, inbox: Path | None = None) -> JournalReport:
    """Check the chain, the sequence, the head and torn lines (spec/journal.md, "Verifying"), and
    with `inbox` (the home's inbox folder) that each decision the journal records is where the
    folders say: a journal that says accepted for a bundle sitting in pending lies."""
    data = journal._raw()
    lines, tail = journal._split(data)
    problems: list[str] = []
    notes: list[str] = []
    fold = Fold()
    prev = GENESIS
    last_seq = 0
    for n, line in enumerate(lines, start=1):
        try:
            obj = strictjson.loads(line, limit=LINE_LIMIT, what=f"line {n}")
        except MalformedError as exc:
            problems.append(f"line {n}: not a valid entry ({exc.message})")
            prev = line_hash(line)
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {n}: not an object")
            prev = line_hash(line)
            continue
        if obj.get("prev") != prev:
            problems.append(f"line {n}: chain broken: it does not follow the line before it (edited, inserted or deleted)")
        seq = obj.get("seq")
        if seq != last_seq + 1:
            problems.append(f"line {n}: sequence number {seq!r} where {last_seq + 1} was expected (a line is missing or repeated)")
        if isinstance(seq, int):
            last_seq = seq
        fold.add(obj)
        if obj.get("event") not in EVENTS:
            problems.append(f"line {n}: unknown event {obj.get('event')!r}")
        if obj.get("event") == "repaired":
            notes.append(
                f"line {n}: a torn line of {obj.get('torn_length')} bytes from an interrupted write was recovered here"
                f" (kept in {obj.get('torn_file', 'the entry')})"
            )
            problem = _check_torn_file(journal, obj)
            if problem:
                problems.append(f"line {n}: {problem}")
        prev = line_hash(line)
    for digest in journal._unrecorded_torn(lines):
        problems.append(
            f"{journal.torn_dir.name}/{digest}.bin: a torn line was saved but no entry records it yet "
            "(an interrupted repair); the next write records it"
        )
    if tail:
        problems.append(
            f"line {len(lines) + 1}: torn ({len(tail)} bytes with no end of line): an interrupted write; "
            "the next write records it in a `repaired` entry"
        )
    head = journal._read_head()
    if head is None:
        if lines:
            problems.append("journal.head is missing or unreadable: truncation cannot be ruled out")
    else:
        hseq, hhash = head.get("seq"), head.get("hash")
        if not isinstance(hseq, int) or hseq > last_seq:
            problems.append(
                f"truncated: journal.head says entry {hseq} was written, but the journal ends at entry {last_seq}"
            )
        elif 0 < hseq <= len(lines):
            idx = next((i for i, ln in enumerate(lines) if seq_of(ln) == hseq), None)
            if idx is None or line_hash(lines[idx]) != hhash:
                problems.append(f"entry {hseq} does not match journal.head (edited)")
            else:
                # One entry, or a batch the head announced (`pending`), may follow it after a crash.
                pending = head.get("pending")
                allowed = pending if isinstance(pending, int) and not isinstance(pending, bool) and pending > 1 else 1
                if last_seq - hseq > allowed:
                    problems.append(f"{last_seq - hseq} entries follow the recorded head (appended outside gage)")
                elif last_seq - hseq == 1:
                    notes.append("the last entry was written but the head was not updated (an interrupted write)")
                elif last_seq - hseq > 1:
                    notes.append(
                        f"the last {last_seq - hseq} entries (a batch the head announced) were written but the head was "
                        "not updated (an interrupted write)"
                    )
    if inbox is not None:
        problems += _against_folders(fold, inbox)
    return JournalReport(ok=not problems, entries=len(lines), problems=problems, notes=notes)


def _against_folders(fold: Fold, inbox: Path) -> list[str]:
    """Each bundle in pending, accepted or rejected against the journal's decision on it (the
    first accepted or rejected, as gage.home.listing.decisions reads it). A decided bundle that
    is in none of them was tidied away, which is no contradiction."""
    problems = []
    for state in ("pending", "accepted", "rejected"):
        try:
            names = sorted(n for n in os.listdir(inbox / state) if is_id(n))
        except OSError:
            continue
        for name in names:
            row = fold.rows.get(name)
            decision = row_facts(row).decision if row is not None else None
            if decision == state or (decision is None and state == "pending"):
                continue
            said = f"the journal says {decision}" if decision else "the journal records no decision"
            problems.append(f"bundle {name}: {said}, but the bundle is in {state} (the journal and the folders disagree)")
    return problems


def _check_torn_file(journal: Journal, entry: dict[str, Any]) -> str | None:
    digest = entry.get("torn_sha256")
    if digest is None:
        return None  # an entry from before torn lines were also kept in files
    try:
        data = (journal.torn_dir / f"{digest}.bin").read_bytes()
    except OSError:
        return f"the torn line it records ({journal.torn_dir.name}/{digest}.bin) is missing"
    if sha256.hexdigest(data) != digest:
        return f"the torn line it records ({journal.torn_dir.name}/{digest}.bin) has changed"
    return None
