"""The storage layer does not write contacts; the key layer records candidates (issue 11).

`store.import_bundle` only reports the key that signed a new arrival (`ImportResult.signer`);
`ceremony.remember_signer` makes it a candidate. Every carrier (`gage import`, the watcher,
`gage a2a import`, a live A2A delivery, the demo) calls both, so a key that signed a bundle
this home holds is still remembered, once, and never more than a candidate.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gagetest import pair

import gage
from gage.carriers.a2a import client, server
from gage.carriers.watch import Watcher
from gage.cli import demo
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.inbox import send, store
from gage.inbox.opening import open_home
from gage.trust import ceremony


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[bytes, str, str]]]:
    """Every candidate the key layer records, in order (the real function still runs)."""
    seen: list[tuple[bytes, str, str]] = []
    real = Contacts.add_candidate  # where every path (one import, or a batch's) records one

    def counting(self: Contacts, key: bytes, claimed_name: str, source: str) -> bool:
        seen.append((key, claimed_name, source))
        return real(self, key, claimed_name, source)

    monkeypatch.setattr(Contacts, "add_candidate", counting)
    yield seen


def _sent(sender: Home, tmp: Path, text: str = "hello\n") -> Path:
    src = tmp / f"note-{sender.identity.name}-{len(text)}.txt"
    src.write_text(text)
    _, dest = send.create(sender, [src], kind="share", subject="a note")
    return dest


def _candidates(home: Home) -> dict[bytes, str]:
    return {k: c.source for k, c in Contacts.load(home.contacts_path).candidates.items()}


def _badsig(dest: Path, tmp: Path) -> Path:
    t = tmp / "badsig" / dest.name
    shutil.copytree(dest, t)
    sig = bytearray((t / "manifest.sig").read_bytes())
    sig[10] ^= 0x40
    (t / "manifest.sig").write_bytes(bytes(sig))
    return t


def test_the_store_alone_leaves_contacts_untouched(make_home: Callable[[str], Home], tmp_path: Path, calls) -> None:
    me, olga = make_home("me"), make_home("olga")
    dest = _sent(olga, tmp_path)
    before = me.contacts_path.read_bytes() if me.contacts_path.exists() else None
    res = store.import_bundle(me, dest)
    assert res.new and res.signer is not None
    assert (res.signer.key, res.signer.claimed_name) == (olga.identity.key, "olga")
    assert (me.contacts_path.read_bytes() if me.contacts_path.exists() else None) == before
    assert calls == [] and _candidates(me) == {}
    # The key layer then records it, once: a second call finds it already there.
    assert ceremony.remember_signer(me, res)
    assert not ceremony.remember_signer(me, res)
    assert _candidates(me) == {olga.identity.key: f"bundle {res.id[:12]}"}


def test_no_signer_is_reported_for_a_bad_signature_or_a_bundle_already_held(make_home, tmp_path: Path) -> None:
    me, olga, eve = make_home("me"), make_home("olga"), make_home("eve")
    bad = store.import_bundle(me, _badsig(_sent(eve, tmp_path), tmp_path))
    assert bad.new and bad.signer is None and not ceremony.remember_signer(me, bad)
    dest = _sent(olga, tmp_path)
    assert store.import_bundle(me, dest).signer is not None
    again = store.import_bundle(me, dest)
    assert not again.new and again.signer is None
    assert _candidates(me) == {}


def test_remember_signer_never_makes_my_own_key_or_a_contact_a_candidate(make_home, tmp_path: Path) -> None:
    me, olga = make_home("me"), make_home("olga")
    pair(me, "olga", olga)
    res = store.import_bundle(me, _sent(olga, tmp_path))
    assert res.signer is not None and not ceremony.remember_signer(me, res)
    mine = store.import_bundle(me, _sent(me, tmp_path, "mine\n"))
    assert not ceremony.remember_signer(me, mine)
    assert _candidates(me) == {}
    assert Contacts.load(me.contacts_path).status_of(olga.identity.key) == "confirmed"


def test_gage_import_records_the_candidate_once(make_home, gage, tmp_path: Path, calls) -> None:
    me, olga = make_home("me"), make_home("olga")
    dest = _sent(olga, tmp_path)
    r = gage(me, "import", str(dest))
    assert r.code == 0, r.err
    assert calls == [(olga.identity.key, "olga", f"bundle {dest.name[:12]}")]
    assert _candidates(me) == {olga.identity.key: f"bundle {dest.name[:12]}"}
    assert gage(me, "import", str(dest)).code == 0  # again: already held, nothing more recorded
    assert len(calls) == 1


def test_the_watcher_records_the_candidate_once(make_home, tmp_path: Path, calls) -> None:
    me, olga = make_home("me"), make_home("olga")
    dest = _sent(olga, tmp_path)
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copytree(dest, drop / dest.name)
    events = []
    w = Watcher(me, [drop], settle=0.0, on_event=events.append)
    w.scan()
    w.scan()
    assert listing.find(me, dest.name) is not None, [e.message for e in events]
    assert calls == [(olga.identity.key, "olga", f"bundle {dest.name[:12]}")]
    # The watcher's own line already names the candidate: it is recorded before the verdict.
    (imported,) = [e for e in events if e.kind == "imported"]
    assert "candidate key" in imported.message


def test_gage_a2a_import_records_the_candidate_once(make_home, gage, tmp_path: Path, calls) -> None:
    me, olga = make_home("me"), make_home("olga")
    dest = _sent(olga, tmp_path)
    out = tmp_path / "b.json"
    assert gage(olga, "a2a", "export", dest.name, "-o", str(out)).code == 0
    r = gage(me, "a2a", "import", str(out))
    assert r.code == 0, r.err
    assert calls == [(olga.identity.key, "olga", f"bundle {dest.name[:12]}")]
    assert _candidates(me) == {olga.identity.key: f"bundle {dest.name[:12]}"}


def test_a_live_a2a_delivery_records_the_candidate_once(make_home, tmp_path: Path, calls) -> None:
    me, olga = make_home("me"), make_home("olga")
    dest = _sent(olga, tmp_path)
    srv = server.Server(me, host="127.0.0.1", port=0).start()
    try:
        result = client.send(olga, dest, srv.url)
    finally:
        srv.stop(timeout=5)
    assert result.delivered
    assert calls == [(olga.identity.key, "olga", f"bundle {dest.name[:12]}")]
    assert _candidates(me) == {olga.identity.key: f"bundle {dest.name[:12]}"}


def test_the_demo_still_shows_the_stranger_as_a_candidate(tmp_path: Path) -> None:
    root = demo.make_demo(tmp_path / "demo")
    me = open_home(root)
    stranger = open_home(tmp_path / "demo" / "people" / "stranger")
    assert Contacts.load(me.contacts_path).status_of(stranger.identity.key) == "candidate"


def test_every_caller_of_the_store_import_also_remembers_the_signer() -> None:
    """A new carrier that called store.import_bundle alone would silently stop recording
    candidates: every function in gage that imports a bundle also calls remember_signer."""
    root = Path(gage.__file__).parent
    callers = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            names = {n.func.attr for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
            if names & {"import_bundle", "import_many"}:
                callers.append((path.relative_to(root).as_posix(), fn.name))
                assert names & {"remember_signer", "remember_signers"}, f"{path.name}:{fn.name} imports a bundle but records no candidate"
    # The carriers: `gage import`, the watcher, A2A (file and live) and the demo.
    files = {p for p, _ in callers}
    assert any(p.startswith("cli/") for p in files) and files >= {"carriers/watch.py", "carriers/a2a/landing.py", "cli/demo.py"}
