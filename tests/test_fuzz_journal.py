"""Property tests for the journal reader (spec/journal.md): whatever the file holds (a real
journal cut, edited, reordered, with garbage or deep nesting), the readers (`entries`, the
verdict's facts, the decisions) never crash, and `verify` finds every change to a sound one."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

from gage.home import listing
from gage.home.cache.wordpairs import WordCache
from gage.home.journal.log import Journal
from gage.home.journal.verify import verify as verify_journal

_SOUND: dict[str, bytes] = {}


def sound() -> tuple[bytes, bytes]:
    """A real journal of a few entries, and its head."""
    if not _SOUND:
        d = Path(tempfile.mkdtemp())
        try:
            j = Journal(d / "journal.jsonl", contextlib.nullcontext)
            for i in range(4):
                j.append("sent", bundle=f"{i:064x}", to=[], kind="share")
            _SOUND["journal"] = j.path.read_bytes()
            _SOUND["head"] = j.head_path.read_bytes()
        finally:
            shutil.rmtree(d)
    return _SOUND["journal"], _SOUND["head"]


@fuzz_settings(200)
@given(st.binary(max_size=300))
@example(b"[" * 50000 + b"\n")
@example(b'{"bundle": [], "event": "accepted"}\n')
@example(b'{"bundle": "x", "event": "imported", "transport": 7, "time": []}\n')
@example(b"1" * 5000 + b"\n")
def test_any_bytes(data: bytes) -> None:
    targets.journal(data)


@fuzz_settings(200)
@given(st.data())
def test_a_real_journal_changed(data: st.DataObject) -> None:
    raw, head = sound()
    lines = raw.split(b"\n")[:-1]
    op = data.draw(st.integers(0, 4))
    if op == 0:
        i = data.draw(st.integers(0, len(raw) - 1))
        changed = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1 :]
    elif op == 1:
        changed = b"\n".join(lines[: data.draw(st.integers(0, len(lines) - 1))]) + b"\n"
    elif op == 2:
        i, k = data.draw(st.integers(0, len(lines) - 1)), data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[k] = lines[k], lines[i]
        changed = b"\n".join(lines) + b"\n"
    elif op == 3:
        changed = raw + data.draw(st.binary(min_size=1, max_size=40))
    else:
        extra = json.loads(lines[-1])
        extra.update(data.draw(st.dictionaries(st.sampled_from(["seq", "prev", "event", "bundle"]), st.integers(0, 9) | st.text(max_size=3), min_size=1)))
        changed = raw + json.dumps(extra).encode() + b"\n"
    targets.journal(changed)
    d = Path(tempfile.mkdtemp())
    try:
        j = Journal(d / "journal.jsonl", contextlib.nullcontext)
        j.path.write_bytes(changed)
        j.head_path.write_bytes(head)
        report = verify_journal(j)
        if changed != raw:
            assert not report.ok, f"verify missed a change: {changed[-200:]!r}"
    finally:
        shutil.rmtree(d)


# --- found by the fuzzer: a line nested thousands deep ---------------------------------------
# `entries`, the head, the next append's sequence number and `_seq_of` read lines with Python's
# json module and caught ValueError only; a line of 50,000 `[` raised RecursionError, so every
# reader (list, verdict, the gate's decisions) and every append (any import) died with a
# traceback until the line was removed by hand. Fixed in gage/home/journal/log.py (and the same in the
# word cache, gage/format/words/__init__.py).

DEEP = b"[" * 50000


def test_a_deep_line_does_not_stop_readers_or_writers(make_home, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gage.inbox import send, store
    from gage.trust import verdict as verdict_mod

    home, bob = make_home("me"), make_home("bob")
    with open(home.journal.path, "ab") as f:
        f.write(DEEP + b"\n")
    home.journal.head_path.write_bytes(DEEP)
    assert all(isinstance(e, dict) for e in home.journal.entries())
    assert not verify_journal(home.journal).ok  # the damage is reported, not tripped on
    src = tmp_path / "a.txt"
    src.write_text("a\n")
    _m, out = send.create(bob, [src], kind="share")
    res = store.import_bundle(home, out)  # an append after the deep line
    assert res.new
    v = verdict_mod.compute(home, listing.find(home, res.id))  # type: ignore[arg-type]
    assert v.seen is not None and v.seen.times_received == 1


def test_a_deep_word_cache_is_recomputed(tmp_path: Path) -> None:
    from gage.format.words import derive

    p = tmp_path / "words.json"
    p.write_bytes(DEEP)
    key = bytes(range(32))
    assert WordCache(p).words_for(key) == derive(key)
