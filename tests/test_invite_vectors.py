"""spec/vectors/invite.json (spec/relay.md section 10) against gage's invite code: the codes read and
refused, the rendezvous subjects, the SPAKE2 parameters and the boxes each side seals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gage.carriers.relay import invite, rendezvous
from gage.format.errors import MalformedError, UsageError

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors"
V = json.loads((SPEC / "invite.json").read_text(encoding="utf-8"))


def test_the_generator_still_writes_these_vectors() -> None:
    res = subprocess.run([sys.executable, str(SPEC / "generate_invite.py"), "--check"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_codes() -> None:
    for typed, text in V["codes"]["valid"].items():
        assert rendezvous.parse_code(typed).text == text
    for bad in V["codes"]["refused"]:
        with pytest.raises(UsageError):
            rendezvous.parse_code(bad)


def test_subjects_come_from_the_number_alone() -> None:
    for s in V["subjects"]:
        assert rendezvous.Code(s["nameplate"], ("tiger", "guitarist")).subject(s["side"]) == s["subject"]


def test_spake2_identities_and_the_boxes_each_side_seals() -> None:
    sp = V["spake2"]
    assert (invite.ID_A.decode(), invite.ID_B.decode()) == (sp["idA"], sp["idB"])
    b = V["boxes"]
    # Each side's box key is HKDF-SHA256 of the SPAKE2 key (spec/relay.md section 10), not a bare hash.
    assert invite.box_key(bytes.fromhex(b["key"]), "i").hex() == b["box_key_i"]
    assert invite.box_key(bytes.fromhex(b["key"]), "j").hex() == b["box_key_j"]
    assert invite.session_id(bytes.fromhex(sp["msg_a"]), bytes.fromhex(sp["msg_b"])).hex() == V["route"]["session"]
    joiner = invite.Session(bytes.fromhex(b["key"]), "j")
    assert joiner.open(b["sealed_by_i"]) == json.loads(b["plaintext"])
    # What the joiner seals, the inviter opens; a wrong code's key opens neither.
    inviter = invite.Session(bytes.fromhex(b["key"]), "i")
    assert inviter.open(joiner.seal({"kind": "x"})) == {"kind": "x"}
    with pytest.raises(MalformedError):
        inviter.open(b["sealed_by_i"])  # its own box is not the other side's: no reflection
    with pytest.raises(MalformedError):
        invite.Session(bytes.fromhex(sp["key_wrong"]), "j").open(b["sealed_by_i"])


def test_the_route_is_signed_for_one_exchange_and_one_relay() -> None:
    from gage.format import signing
    from gage.format.keys import parse_key

    r = V["route"]
    key, sig = parse_key(r["signing_key"]), bytes.fromhex(r["signature"])
    session = bytes.fromhex(r["session"])
    signed = invite.route_bytes(session, r["mailbox"], r["relay"])
    assert signed.hex() == r["signed_bytes"]
    assert signing.verifies(key, invite.ROUTE_CONTEXT, signed, sig)
    # Another relay, or the same route in another exchange (someone in the middle runs two), does not verify.
    assert not signing.verifies(key, invite.ROUTE_CONTEXT, invite.route_bytes(session, r["mailbox"], r["swapped_relay"]), sig)
    assert not signing.verifies(key, invite.ROUTE_CONTEXT, invite.route_bytes(bytes.fromhex(r["session_other"]), r["mailbox"], r["relay"]), sig)
