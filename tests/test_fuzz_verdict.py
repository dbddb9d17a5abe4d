"""Property tests for the verdict (spec/verdict.md): a real bundle from a confirmed contact, changed
in any of the ways the fuzz bytes choose (bytes flipped, files cut, dropped or added, re-signed by
a stranger under the contact's key), is `verified` exactly when nothing changed, shows the
contact's name only with its signature, and its JSON is strict. Journal facts of any shape never
crash it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_common import fuzz_settings, targets

from gage.format import strictjson
from gage.trust import verdict as verdict_mod

leaf = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4)
junk = st.recursive(leaf, lambda c: st.lists(c, max_size=2) | st.dictionaries(st.text(max_size=3), c, max_size=2), max_leaves=4)


@fuzz_settings(60)
@given(st.binary(max_size=24))
def test_changed_bundles(data: bytes) -> None:
    targets.verdict(data)


@fuzz_settings(60)
@given(st.lists(st.integers(0, 255), min_size=2, max_size=12).map(bytes))
def test_changed_bundles_many_ops(data: bytes) -> None:
    targets.verdict(bytes([4]) + data)


@fuzz_settings(60)
@given(st.lists(st.dictionaries(st.sampled_from(["bundle", "event", "time", "transport", "how", "ok"]), junk, max_size=5), max_size=6), st.data())
def test_journal_facts_of_any_shape(entries: list[dict[str, Any]], data: st.DataObject) -> None:
    w = targets._world()
    me, m = w["me"], w["manifest"]
    # Some entries about the bundle itself, with claims of any shape.
    for e in entries:
        if data.draw(st.booleans()):
            e["bundle"] = m.id
        if data.draw(st.booleans()):
            e["event"] = data.draw(st.sampled_from(["imported", "received", "sent", "accepted"]))
        if data.draw(st.booleans()):
            e["transport"] = data.draw(st.dictionaries(st.sampled_from(["from_key", "from_name", "carrier", "peer", "x"]), junk, max_size=3))
    facts = verdict_mod.JournalFacts(entries)
    root = w["root"] / "facts-case"
    if not root.exists():
        root.mkdir()
        for rel, content in w["base"].items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content)
    v = verdict_mod.compute(me, root, facts=facts)
    assert v.verdict == "verified" and v.sender.name == "bob"  # claims never change it
    strictjson.loads(strictjson.dumps(v.to_json()), limit=1 << 24)
