"""The import's last window: a kill after the rename into pending and before the arrival's
journal line. The check runs before the rename, so only the journal line follows it; and
opening the home afterwards records the bundle the journal never named, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from gage.bundle import atomic
from gage.home import listing
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import Home
from gage.inbox import landmany, send, store
from gage.inbox.opening import open_home
from gage.trust import verdict as verdict_mod


class Killed(BaseException):
    """Stands in for SIGKILL: nothing after it runs, and no handler catches it."""


def _made(make_home, tmp_path: Path) -> tuple[Home, Path, str]:  # noqa: ANN001
    me, bob = make_home("me"), make_home("bob")
    f = tmp_path / "note.txt"
    f.write_bytes(b"hello\n" * 1000)
    m, dest = send.create(bob, [f], kind="share")
    return me, dest, m.id


def test_only_the_journal_line_follows_the_rename(make_home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    me, src, bid = _made(make_home, tmp_path)
    steps: list[str] = []
    real_check, real_rename, real_append = landmany.bundle_mod.check, atomic.rename_noreplace, type(me.journal).append_many

    def check(root: Path, **kw: object):  # type: ignore[no-untyped-def]
        steps.append("check")
        return real_check(root, **kw)  # type: ignore[arg-type]

    def rename(a: Path, b: Path, **kw: bool) -> bool:
        steps.append(f"rename into {b.parent.name}" if b.name == bid else "rename")
        return real_rename(a, b, **kw)

    def append(self, items):  # type: ignore[no-untyped-def]
        steps.extend(f"journal {event}" for event, _fields in items)
        return real_append(self, items)

    monkeypatch.setattr(landmany.bundle_mod, "check", check)
    monkeypatch.setattr(landmany.atomic, "rename_noreplace", rename)
    monkeypatch.setattr(type(me.journal), "append_many", append)
    store.import_bundle(me, src)
    landed = steps.index("rename into pending")
    assert steps[landed + 1 :] == ["journal imported"], steps
    assert "check" in steps[:landed]


def test_a_kill_before_the_arrival_line_is_recorded_once_when_the_home_opens(make_home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    me, src, bid = _made(make_home, tmp_path)
    real_append = type(me.journal).append_many

    def killed(self, items):  # type: ignore[no-untyped-def]
        if any(event == "imported" for event, _fields in items):
            raise Killed
        return real_append(self, items)

    with monkeypatch.context() as m:
        m.setattr(type(me.journal), "append_many", killed)
        with pytest.raises(Killed):
            store.import_bundle(me, src)
    assert (me.state_dir("pending") / bid).is_dir()
    assert not [e for e in me.journal.entries() if e.get("bundle") == bid]  # the line a kill lost

    opened = open_home(me.root)
    lines = [e for e in opened.journal.entries() if e.get("bundle") == bid]
    assert [(e["event"], e["found"], e["state"]) for e in lines] == [("reconciled", "pending", "pending")]
    assert "no journal line" in lines[0]["note"]
    assert verify_journal(opened.journal).ok
    again = open_home(me.root)
    assert len([e for e in again.journal.entries() if e.get("bundle") == bid]) == 1  # never said twice
    # Found, not received: nothing claims how or when it came; the verdict still reads it whole.
    v = verdict_mod.compute(again, listing.find(again, bid))
    assert v.verdict == "unverified" and v.seen is not None and v.seen.times_received == 0
    # The same bundle delivered again is journaled as already there, as for any held bundle.
    r = store.import_bundle(again, src)
    assert r.new is False and r.state == "pending"
