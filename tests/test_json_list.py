"""`JsonList`: a document whose one list is written out item by item (`gage mailbox fetch --json`)
prints byte for byte what `emit_json` prints of the same document held whole, whatever the items
hold, and loses nothing when its spool file cannot be written (a full disk)."""

from __future__ import annotations

import contextlib
import errno
import io
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gage.cli.output import JsonList, emit_json

LANDED = {"id": "a" * 64, "state": "pending", "new": True, "ok": True, "dropped": None, "stage": None}
AGAIN = {"id": "b" * 64, "state": "accepted", "new": False, "ok": True, "dropped": None, "stage": None}
DROPPED = {
    "id": None,
    "state": None,
    "new": False,
    "ok": False,
    # What a stranger's envelope can put in a reason: quotes, escapes, controls, other scripts, a line break.
    "dropped": 'not "age" \\ at all\n\x1b[31mred\x07 é ü 雪 \U0001f600 \u2028',
    "stage": "malformed",
}
CASES = {
    "none": [],
    "one": [LANDED],
    "mixed": [LANDED, AGAIN, DROPPED, LANDED],
    "nested": [{"a": [1, {"b": None, "c": []}, {}], "d": {"e": "f"}}, [], {}, "text", 7, None],
}


def _whole(doc: dict[str, Any]) -> str:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        emit_json(doc)
    return sink.getvalue()


def _streamed(items: list[Any], spool: Path, head: dict[str, Any], tail: dict[str, Any], *, held: int = 0) -> str:
    listed = JsonList("fetched", spool)
    for item in items:
        listed.add(item)
    assert len(listed._held) == held  # how many items the spool could not take
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        listed.emit(head, tail)
    return sink.getvalue()


@pytest.mark.parametrize("items", CASES.values(), ids=list(CASES))
@pytest.mark.parametrize("more", [False, True])
def test_the_streamed_document_is_the_one_emit_json_prints(items: list[Any], more: bool, tmp_path: Path) -> None:
    head = {"mailbox": "mb-" + "c" * 40}
    expected = _whole({**head, "fetched": items, "more": more})
    assert _streamed(items, tmp_path, head, {"more": more}) == expected
    assert list(tmp_path.iterdir()) == []  # the spool has no name: nothing left in the home


def test_a_head_whose_text_looks_like_the_list_does_not_fool_it(tmp_path: Path) -> None:
    head = {"mailbox": '\n  "fetched": []', "fetched_before": [1]}
    assert _streamed([LANDED], tmp_path, head, {"more": False}) == _whole({**head, "fetched": [LANDED], "more": False})


def test_what_the_spool_cannot_take_is_held_and_printed_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that fills part way through: the spool is cut back to its last whole item and the
    rest is held in memory; the document printed is the same."""
    real = tempfile.TemporaryFile

    class Filling:
        def __init__(self, f: Any) -> None:
            self.f, self.room = f, 700  # a few items, then a short write, then ENOSPC

        def write(self, data: Any) -> int:
            if self.room <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            n = self.f.write(bytes(data)[: self.room])
            self.room -= n
            return int(n)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.f, name)

    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: Filling(real(**kw)))
    items = [LANDED, AGAIN, DROPPED, LANDED, AGAIN, LANDED]
    printed = _streamed(items, tmp_path, {"mailbox": "m"}, {"more": False}, held=3)  # three fit in 700 bytes
    assert printed == _whole({"mailbox": "m", "fetched": items, "more": False})


def test_no_spool_at_all_holds_the_items(tmp_path: Path) -> None:
    spool = tmp_path / "a-file"
    spool.write_text("not a folder")
    items = [LANDED, DROPPED]
    assert _streamed(items, spool, {"mailbox": "m"}, {"more": True}, held=2) == _whole({"mailbox": "m", "fetched": items, "more": True})
