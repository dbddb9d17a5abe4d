"""`reply = true` in a grant: the one grant that lets an agent make a reply bundle (spec/authority.md)."""

from __future__ import annotations

from pathlib import Path

from gagetest import arrive, pair

from gage.home import authority
from gage.home.listing import resolve
from gage.inbox import send
from gage.trust import frame
from gage.trust import verdict as verdict_mod

GRANT = '[[grant]]\ncontact = "bob"\nkind = "question"\nmay = "Answer it."\n'


def test_reply_is_optional_and_false_when_absent() -> None:
    af = authority.parse(GRANT, None)
    assert af.errors == [] and af.grants[0].reply is False
    assert af.grants[0].to_json() == {"contact": "bob", "kind": "question", "may": "Answer it.", "line": 1}
    af = authority.parse(GRANT + "reply = true\n", None)
    assert af.errors == [] and af.grants[0].reply is True
    assert af.grants[0].to_json()["reply"] is True


def test_reply_that_is_not_a_boolean_is_an_error_naming_its_line() -> None:
    af = authority.parse(GRANT + 'reply = "yes"\n', None)
    assert af.grants == []
    assert af.errors == ["authority.toml:5: `reply` must be true or false"]


def test_the_frame_tells_the_agent_it_may_reply(make_home, tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    src = tmp_path / "q.txt"
    src.write_text("?")
    m, dest = send.create(bob, [src], kind="question")
    arrive(me, dest)
    me.authority_path.write_text(GRANT + "reply = true\n")
    v = verdict_mod.compute(me, resolve(me, m.id))
    lines = [f.value for f in frame.fields(v) if f.label == "authority"]
    assert lines == ["Answer it. (granted to bob for question in authority.toml; reply = true: an agent may make a reply bundle in the outbox)"]
    me.authority_path.write_text(GRANT)
    v = verdict_mod.compute(me, resolve(me, m.id))
    assert [f.value for f in frame.fields(v) if f.label == "authority"] == ["Answer it. (granted to bob for question in authority.toml)"]
