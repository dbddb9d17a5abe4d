"""The receiver-computed verdict: the full matrix of sender x integrity x seen, and the rest.

Every bundle here is made by a real home with `send.create`, carried through a transport
folder (where the tampering happens), and brought in the way gage brings bundles in.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gagetest import arrive, pair

from gage.format.keys import key_text, short_fingerprint
from gage.home import listing
from gage.home.layout import Home
from gage.home.listing import Stored
from gage.inbox import send, store
from gage.trust import ceremony
from gage.trust import verdict as verdict_mod

SENDERS = ("confirmed", "candidate", "unknown")
INTEGRITY = ("valid", "tampered", "badsig")
SEEN = ("first", "repeated", "reply")


def _file(tmp: Path, name: str, text: str) -> Path:
    d = tmp / "src"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(text, encoding="utf-8")
    return p


def _carry(dest: Path, transport: Path, integrity: str) -> Path:
    """Copy a bundle into a transport folder and damage it there as `integrity` says."""
    transport.mkdir(exist_ok=True)
    t = transport / dest.name
    shutil.copytree(dest, t)
    if integrity == "tampered":
        p = t / "payload" / "notes.txt"
        data = bytearray(p.read_bytes())
        data[0] ^= 0x01
        p.write_bytes(bytes(data))
    elif integrity == "badsig":
        p = t / "manifest.sig"
        sig = bytearray(p.read_bytes())
        sig[10] ^= 0x40
        p.write_bytes(bytes(sig))
    return t


def _place_without_registering(home: Home, src: Path) -> Stored:
    """Bring a bundle into pending the way a sync tool writing into the inbox would:
    no candidate is registered, and the arrival is journaled as `received`."""
    dest = home.state_dir("pending") / src.name
    if not dest.exists():
        shutil.copytree(src, dest)
    home.journal.append("received", bundle=src.name, via="test-sync")
    found = listing.find(home, src.name)
    assert found is not None
    return found


class World:
    """The receiver `me`, and a sender `olga` whose home claims the name 'olga-claimed'."""

    def __init__(self, make_home, tmp: Path, who: str) -> None:
        self.tmp = tmp
        self.me: Home = make_home("me")
        self.olga: Home = make_home("olga-claimed")
        if who == "confirmed":
            pair(self.me, "olga", self.olga)
        elif who == "candidate":
            assert ceremony.add_candidate(self.me, self.olga.identity.key, "olga-claimed", "key file olga.gagekey")
        self.who = who
        (self.me.authority_path).write_text(
            '[[grant]]\ncontact = "olga"\nkind = "share"\nmay = "Summarise it."\n'
            '[[grant]]\ncontact = "olga"\nkind = "answer"\nmay = "Use the answer."\n'
            if who == "confirmed"
            else "",
            encoding="utf-8",
        )

    def deliver(self, src: Path, times: int = 1) -> Stored:
        stored = None
        for _ in range(times):
            if self.who == "unknown":
                stored = _place_without_registering(self.me, src)
            else:
                res = arrive(self.me, src)
                stored = listing.find(self.me, res.id)
        assert stored is not None
        return stored


@pytest.mark.parametrize("seen", SEEN)
@pytest.mark.parametrize("integrity", INTEGRITY)
@pytest.mark.parametrize("who", SENDERS)
def test_matrix(make_home, tmp_path: Path, who: str, integrity: str, seen: str) -> None:
    w = World(make_home, tmp_path, who)
    parent = None
    if seen == "reply":
        q, qdest = send.create(w.me, [_file(tmp_path, "q.txt", "what time?\n")], kind="question")
        store.import_bundle(w.olga, qdest)
        parent = q.id
    m, dest = send.create(
        w.olga,
        [_file(tmp_path, "notes.txt", "hello from olga\n")],
        kind="answer" if parent else "share",
        parent=parent,
        subject="olga's notes",
    )
    carried = _carry(dest, tmp_path / "transport", integrity)
    stored = w.deliver(carried, times=2 if seen == "repeated" else 1)
    assert stored.state == "pending"

    v = verdict_mod.compute(w.me, stored)
    j = v.to_json()

    # verdict
    expected = {"tampered": "invalid", "badsig": "invalid"}.get(integrity) or (
        "verified" if who == "confirmed" else "unverified"
    )
    assert j["verdict"] == expected

    # problems, each naming its file
    got = [(p["stage"], p["path"]) for p in j["problems"]]
    assert got == {
        "valid": [],
        "tampered": [("tampered", "payload/notes.txt")],
        "badsig": [("signature", "manifest.sig")],
    }[integrity]

    # sender: the status is a fact about the key in my contacts; a name only for a
    # confirmed key that really signed the manifest; the claimed name is never the name.
    s = j["sender"]
    assert s["key"] == key_text(w.olga.identity.key)
    assert s["status"] == who
    assert s["name"] == ("olga" if who == "confirmed" and integrity != "badsig" else None)
    assert s["claimed_name"] == "olga-claimed"
    assert s["signature_ok"] is (integrity != "badsig")

    # seen
    sj = j["seen"]
    if seen == "repeated":
        assert (sj["times_received"], sj["first"]) == (2, False)
        assert "already received" in " ".join(sj["summary"])
    else:
        assert (sj["times_received"], sj["first"]) == (1, True)
        assert "first time received" in sj["summary"]
    assert sj["sent_by_me"] is False
    if seen == "reply":
        assert (sj["parent"], sj["parent_status"], sj["reply_to_sent"]) == (parent, "sent-by-me", True)
    else:
        assert (sj["parent"], sj["parent_status"], sj["reply_to_sent"]) == (None, None, False)

    # authority: only for a verified bundle, from the contact named, of the kind named
    if expected == "verified":
        assert [g["may"] for g in j["authority"]] == (["Use the answer."] if parent else ["Summarise it."])
        assert j["authority_note"] is None
    else:
        assert j["authority"] == []
        assert j["authority_note"] == verdict_mod.NO_AUTHORITY


def test_import_registers_a_candidate_only_for_a_good_signature(make_home, tmp_path: Path) -> None:
    me, olga, eve = make_home("me"), make_home("olga"), make_home("eve")
    _, good = send.create(olga, [_file(tmp_path, "notes.txt", "a\n")], kind="share")
    _, bad = send.create(eve, [_file(tmp_path, "notes.txt", "b\n")], kind="share")
    arrive(me, good)
    arrive(me, _carry(bad, tmp_path / "t", "badsig"))
    vg = verdict_mod.compute(me, listing.find(me, good.name))
    vb = verdict_mod.compute(me, listing.find(me, bad.name))
    assert (vg.verdict, vg.sender.status, vg.sender.name) == ("unverified", "candidate", None)
    assert (vb.verdict, vb.sender.status, vb.sender.name) == ("invalid", "unknown", None)


def test_a_forged_bundle_naming_a_confirmed_key_is_never_shown_under_its_name(make_home, tmp_path: Path) -> None:
    """The manifest names olga's key, but the signature is not olga's: the frame must not say olga."""
    from gage.trust import frame

    me, olga = make_home("me"), make_home("sender-x")
    pair(me, "olga", olga)
    _, dest = send.create(olga, [_file(tmp_path, "notes.txt", "a\n")], kind="share")
    store.import_bundle(me, _carry(dest, tmp_path / "t", "badsig"))
    v = verdict_mod.compute(me, listing.find(me, dest.name))
    assert v.verdict == "invalid" and v.sender.name is None
    lines = list(frame.render(v, show_pending=True))
    sender = [ln for ln in lines if ln.startswith("sender:")]
    assert len(sender) == 1 and "NOT proven" in sender[0]
    assert "olga" not in "\n".join(lines) and "confirmed contact" not in "\n".join(lines)
    assert not any(ln.startswith("| ") for ln in lines)


def _reply_setup(make_home, tmp_path: Path) -> tuple[Home, Home, Home]:
    me, olga, third = make_home("me"), make_home("olga"), make_home("third")
    pair(me, "olga", olga)
    return me, olga, third


def test_parent_received_but_not_sent_by_me(make_home, tmp_path: Path) -> None:
    me, olga, third = _reply_setup(make_home, tmp_path)
    q, qdest = send.create(third, [_file(tmp_path, "q.txt", "q\n")], kind="question")
    store.import_bundle(me, qdest)
    store.import_bundle(olga, qdest)
    _, adest = send.create(olga, [_file(tmp_path, "a.txt", "a\n")], kind="answer", parent=q.id)
    store.import_bundle(me, adest)
    seen = verdict_mod.compute(me, listing.find(me, adest.name)).seen
    assert seen is not None
    assert (seen.parent, seen.parent_status) == (q.id, "received")
    assert seen.to_json()["reply_to_sent"] is False
    assert "not one I sent" in " ".join(seen.summary)


def test_parent_never_seen(make_home, tmp_path: Path) -> None:
    me, olga, third = _reply_setup(make_home, tmp_path)
    q, qdest = send.create(third, [_file(tmp_path, "q.txt", "q\n")], kind="question")
    store.import_bundle(olga, qdest)
    _, adest = send.create(olga, [_file(tmp_path, "a.txt", "a\n")], kind="answer", parent=q.id)
    store.import_bundle(me, adest)
    v = verdict_mod.compute(me, listing.find(me, adest.name))
    assert v.verdict == "verified"
    assert v.seen is not None and v.seen.parent_status == "unknown"
    assert "a parent I have never seen" in " ".join(v.seen.summary)


def test_my_own_bundle_is_sent_by_me_not_received(make_home, tmp_path: Path) -> None:
    me = make_home("me")
    m, _ = send.create(me, [_file(tmp_path, "a.txt", "a\n")], kind="share")
    v = verdict_mod.compute(me, listing.resolve(me, m.id))
    assert v.seen is not None
    assert (v.seen.sent_by_me, v.seen.times_received) == (True, 0)
    assert v.seen.to_json()["first"] is False


@pytest.mark.parametrize("to", ["me", "someone-else", "nobody", "me-and-else"])
def test_addressed_to_me_or_not(make_home, tmp_path: Path, to: str) -> None:
    me, olga, carl = make_home("me"), make_home("olga"), make_home("carl")
    pair(me, "olga", olga)
    pair(olga, "me", me)
    pair(olga, "carl", carl)
    names = {"me": ["me"], "someone-else": ["carl"], "nobody": [], "me-and-else": ["carl", "me"]}[to]
    _, dest = send.create(olga, [_file(tmp_path, "a.txt", "a\n")], kind="share", to=names)
    store.import_bundle(me, dest)
    v = verdict_mod.compute(me, listing.find(me, dest.name))
    assert v.addressed_to_me == {"me": True, "someone-else": False, "nobody": None, "me-and-else": True}[to]


def test_claimed_name_is_never_the_name(make_home, tmp_path: Path) -> None:
    """An unknown key that calls itself by my contact's local name gets no name."""
    me, olga, mallory = make_home("me"), make_home("olga"), make_home("olga2")
    pair(me, "olga", olga)
    # mallory's home claims exactly olga's local name.
    from gage.format.keys import Identity

    mallory._identity = Identity.from_secret("olga", mallory.identity.secret)
    _, dest = send.create(mallory, [_file(tmp_path, "a.txt", "a\n")], kind="share", subject="from olga, really")
    arrive(me, dest)
    v = verdict_mod.compute(me, listing.find(me, dest.name))
    assert v.sender.claimed_name == "olga"
    assert (v.verdict, v.sender.status, v.sender.name) == ("unverified", "candidate", None)
    assert v.sender.label().startswith("candidate key ")


def test_verdict_json_through_the_cli(make_home, tmp_path: Path, gage) -> None:
    me, olga = make_home("me"), make_home("olga")
    pair(me, "olga", olga)
    m, dest = send.create(olga, [_file(tmp_path, "a.txt", "a\n")], kind="share", subject="s")
    store.import_bundle(me, dest)
    r = gage(me, "verdict", m.id[:10], "--json")
    assert r.code == 0, r.err
    j = json.loads(r.out)
    assert set(j) >= {
        "id", "state", "verdict", "problems", "warnings", "sender", "kind", "subject", "created", "thread",
        "files", "seen", "addressed_to_me", "recipients", "authority", "authority_note", "authority_errors",
        "chain", "accepted_how",
    }  # fmt: skip
    assert (j["id"], j["state"], j["verdict"], j["kind"], j["subject"]) == (m.id, "pending", "verified", "share", "s")
    assert j["sender"] == {
        "key": key_text(olga.identity.key),
        "fingerprint": short_fingerprint(olga.identity.key),
        "name": "olga",
        "status": "confirmed",
        "claimed_name": "olga",
        "signature_ok": True,
        "is_me": False,
        "scheme": "hybrid",
    }
    assert j["files"] == [{"path": "a.txt", "size": 2, "sha256": m.files[0].sha256}]
    r = gage(me, "verdict", m.id)
    assert r.code == 0 and "VERIFIED" in r.out


def test_unreadable_manifest_is_invalid_with_no_sender(make_home, tmp_path: Path) -> None:
    me, olga = make_home("me"), make_home("olga")
    _, dest = send.create(olga, [_file(tmp_path, "a.txt", "a\n")], kind="share")
    t = tmp_path / "t" / dest.name
    shutil.copytree(dest, t)
    raw = (t / "manifest.json").read_bytes()
    (t / "manifest.json").write_bytes(raw.replace(b'"share"', b'"shout"'))
    v = verdict_mod.compute(me, t)
    assert v.verdict == "invalid"
    assert [(p.stage, p.path) for p in v.problems] == [("malformed", "manifest.json")]
    assert v.sender.to_json() == {"key": None, "fingerprint": None, "name": None, "status": "unknown", "claimed_name": None, "signature_ok": False, "is_me": False, "scheme": None}


def test_a_bundle_signed_with_my_own_key_is_shown_as_mine_not_as_unknown(make_home, tmp_path) -> None:
    """My own bundle come back (say, from a restored outbox) must not be described as from a key I do not know."""
    from gage.inbox import send, store
    from gage.trust import frame
    from gage.trust import verdict as verdict_mod

    me = make_home("me")
    src = tmp_path / "n.txt"
    src.write_text("mine\n")
    m, dest = send.create(me, [src], kind="share", copy_to=tmp_path / "wire")
    import shutil

    shutil.rmtree(dest)  # gone from the outbox, so it can arrive
    store.import_bundle(me, tmp_path / "wire" / m.id)
    v = verdict_mod.compute(me, listing.find(me, m.id))
    assert v.sender.is_me and v.to_json()["sender"]["is_me"] is True
    assert v.verdict == "unverified" and v.sender.name is None
    [line] = [f.value for f in frame.fields(v) if f.label == "sender"]
    assert line.startswith("me: this home's own key") and "does not know" not in line
