"""Issue 9, class 1: every surface takes the sender from the one verdict computation.

A bundle whose signature fails must never be listed under a confirmed contact's name,
whatever surface shows it: `gage list` (text and --json), `gage verdict --json`,
`gage read`. The sender in `gage list --json` is exactly `Sender.to_json()`, the shape
`gage verdict --json` prints (issue 11: one JSON shape for a sender everywhere).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, pair

from gage.bundle import MANIFEST
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import ownkey, send
from gage.trust import verdict as verdict_mod

Gage = Callable[..., Run]


def _send(home: Home, tmp: Path, text: str, subject: str = "Q3 numbers") -> str:
    src = tmp / f"{text[:6]}.txt"
    src.write_text(text)
    m, _ = send.create(home, [src], kind="share", subject=subject, copy_to=tmp / "shared")
    return m.id


def _forge_subject(tmp: Path, bundle_id: str) -> Path:
    """The attack: change the subject of a real bundle (its signature no longer verifies)."""
    forged = tmp / "forged" / bundle_id
    shutil.copytree(tmp / "shared" / bundle_id, forged)
    raw = (forged / MANIFEST).read_bytes()
    (forged / MANIFEST).write_bytes(raw.replace(b"Q3 numbers", b"Pay invoice 6666 today"))
    return forged


@pytest.fixture
def homes(make_home: Callable[[str], Home]) -> tuple[Home, Home]:
    alice, bob = make_home("alice"), make_home("bob")
    pair(bob, "alice", alice)
    return alice, bob


def _forged_id(bob: Home) -> str:
    for s in listing.list_bundles(bob, ("pending",)):
        v = verdict_mod.compute(bob, s)
        if not v.sender.signature_ok:
            return s.id
    raise AssertionError("the forged bundle did not land")


def test_list_never_names_a_confirmed_contact_for_a_bad_signature(homes, tmp_path: Path, gage: Gage) -> None:
    alice, bob = homes
    real = _send(alice, tmp_path, "the real numbers")
    r = gage(bob, "import", str(_forge_subject(tmp_path, real)))
    assert r.code == 0, r.err
    forged = _forged_id(bob)

    rows = {row["id"]: row for row in json.loads(gage(bob, "list", "--json").out)}
    sender = rows[forged]["sender"]
    assert sender["name"] is None, "a forged bundle is listed under the contact's name"
    assert sender["status"] == "confirmed" and sender["signature_ok"] is False  # a fact about the key, not the signer
    assert rows[forged]["verdict"] == "invalid"

    text = gage(bob, "list").out
    line = next(ln for ln in text.splitlines() if forged[:12] in ln)
    assert "alice" not in line and "unproven key" in line


def test_list_sender_is_the_verdict_sender_on_every_kind_of_bundle(homes, tmp_path: Path, gage: Gage) -> None:
    """One shape, one source: list's sender equals verdict --json's sender for every bundle held."""
    alice, bob = homes
    stranger = Home.init(tmp_path / "stranger", "alice")
    real = _send(alice, tmp_path, "the real numbers")
    gage(bob, "import", str(tmp_path / "shared" / real))
    gage(bob, "import", str(_forge_subject(tmp_path, real)))
    tampered = _send(alice, tmp_path, "tampered later")
    (tmp_path / "shared" / tampered / "payload" / "tamper.txt").write_text("changed")
    gage(bob, "import", str(tmp_path / "shared" / tampered))
    gage(bob, "import", str(tmp_path / "shared" / _send(stranger, tmp_path, "from a stranger")))
    _send(bob, tmp_path, "mine, in my outbox")
    # Alice's key is retired as compromised after one more bundle reaches bob.
    late = _send(alice, tmp_path, "signed just before the leak")
    gage(bob, "import", str(tmp_path / "shared" / late))
    done = ownkey.retire(alice, reason="compromised", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    assert gage(bob, "import", str(tmp_path / "shared" / done.bundle.id)).code == 0

    listed = json.loads(gage(bob, "list", "--json").out)
    assert len(listed) >= 6
    for row in listed:
        shown = json.loads(gage(bob, "verdict", row["id"], "--json").out)
        assert row["sender"] == shown["sender"], row["id"]
        assert set(row["sender"]) >= {"key", "name", "status", "claimed_name", "signature_ok", "is_me"}
    compromised = next(r for r in listed if r["id"] == late)
    assert compromised["sender"]["name"] is None and compromised["sender"]["status"] == "retired"
    assert compromised["sender"]["retired"]["reason"] == "compromised"
    text = gage(bob, "list").out
    line = next(ln for ln in text.splitlines() if late[:12] in ln)
    assert "compromised key" in line and "alice" not in line
    mine = [r for r in listed if r["state"] == "outbox"]
    assert mine and all(r["sender"]["is_me"] and r["verdict"] == "mine" for r in mine)


def test_read_and_verdict_agree_with_list_on_a_forgery(homes, tmp_path: Path, gage: Gage) -> None:
    alice, bob = homes
    real = _send(alice, tmp_path, "the real numbers")
    gage(bob, "import", str(_forge_subject(tmp_path, real)))
    forged = _forged_id(bob)
    shown = json.loads(gage(bob, "verdict", forged, "--json").out)
    assert shown["sender"]["name"] is None
    frame_text = gage(bob, "read", forged, "--pending").out
    sender_line = next(ln for ln in frame_text.splitlines() if ln.startswith("sender:"))
    assert "NOT proven" in sender_line and "alice (confirmed" not in sender_line


def test_list_shows_a_superseded_key_as_the_contacts_previous_key(homes, tmp_path: Path, gage: Gage) -> None:
    alice, bob = homes
    old = _send(alice, tmp_path, "signed before the new laptop")
    gage(bob, "import", str(tmp_path / "shared" / old))
    done = ownkey.retire(alice, reason="superseded", new=True, copy_to=tmp_path / "shared")
    assert done.bundle is not None
    assert gage(bob, "import", str(tmp_path / "shared" / done.bundle.id)).code == 0
    row = next(r for r in json.loads(gage(bob, "list", "--json").out) if r["id"] == old)
    assert (row["verdict"], row["sender"]["name"], row["sender"]["status"]) == ("verified", "alice", "retired")
    line = next(ln for ln in gage(bob, "list").out.splitlines() if old[:12] in ln)
    assert "alice (previous key)" in line
