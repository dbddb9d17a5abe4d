"""Run spec/vectors/verdicts.json against gage's verdict code.

For each case a receiver home is built with the vector's identity; contacts are confirmed
through the ceremony with the right words, candidates added, journal facts appended, the
authority file written, and the bundle's exact bytes placed in inbox/pending/<id>.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

from gage.format.keys import Identity, key_text, parse_key
from gage.format.manifest import bundle_id
from gage.format.words import derive
from gage.home import listing
from gage.home.identity import save_identity
from gage.home.layout import Home
from gage.trust import ceremony
from gage.trust import verdict as verdict_mod

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors"
VECTORS = json.loads((SPEC / "verdicts.json").read_text("utf-8"))
PEOPLE = {p["name"]: p for p in VECTORS["people"]}


def _receiver_home(root: Path) -> Home:
    """A home whose identity is the vector's receiver (a fixed seed), laid out as `gage init` does."""
    me = PEOPLE[VECTORS["receiver"]]
    root.mkdir(mode=0o700)
    home = Home(root)
    home.ensure_layout()
    ident = Identity(name=me["name"], signing_key=nacl.signing.SigningKey(bytes.fromhex(me["seed"])))
    assert ident.key_text == me["key"]
    save_identity(ident, home.identity_path)
    home.journal.append("init", name=ident.name, key=ident.key_text)
    return home


def _set_up(home: Home, receiver: dict[str, Any]) -> None:
    for c in receiver["confirmed"]:
        k = parse_key(c["key"])
        words = " ".join(w for pair in PEOPLE[c["name"]]["words"] for w in pair)
        outcome = ceremony.confirm(home, c["name"], k, words)
        assert outcome.confirmed, outcome.message
    for c in receiver["candidates"]:
        assert ceremony.add_candidate(home, parse_key(c["key"]), c["claimed_name"], c["source"])
    for e in receiver["journal"]:
        home.journal.append(e["event"], bundle=e["bundle"], thread=e["bundle"])
    if receiver["authority"] is not None:
        home.authority_path.write_text(receiver["authority"], encoding="utf-8")
    else:
        home.authority_path.unlink(missing_ok=True)


def _place(home: Home, b: dict[str, Any]) -> listing.Stored:
    raw = base64.b64decode(b["manifest"])
    assert bundle_id(raw) == b["id"]
    d = home.state_dir("pending") / b["id"]
    (d / "payload").mkdir(parents=True)
    (d / "manifest.json").write_bytes(raw)
    (d / "manifest.sig").write_bytes(bytes.fromhex(b["signature"]))
    for path, data in b["files"].items():
        p = d / "payload" / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(base64.b64decode(data))
    found = listing.find(home, b["id"])
    assert found is not None
    return found


def test_people_keys_and_words() -> None:
    for p in VECTORS["people"]:
        sk = nacl.signing.SigningKey(bytes.fromhex(p["seed"]))
        assert key_text(bytes(sk.verify_key)) == p["key"]
        assert [list(x) for x in derive(bytes(sk.verify_key))] == p["words"]


def test_vectors_are_reproducible() -> None:
    spec = importlib.util.spec_from_file_location("generate_verdicts", SPEC / "generate_verdicts.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.render() == (SPEC / "verdicts.json").read_text("utf-8")


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_verdict_vector(tmp_path: Path, case: dict[str, Any]) -> None:
    home = _receiver_home(tmp_path / "me")
    _set_up(home, case["receiver"])
    stored = _place(home, case["bundle"])
    v = verdict_mod.compute(home, stored)
    got = v.to_json()
    want = case["expected"]

    assert got["verdict"] == want["verdict"]
    assert sorted((p["stage"], p["path"]) for p in got["problems"]) == sorted(
        (p["stage"], p["path"]) for p in want["problems"]
    )
    assert got["sender"] == want["sender"]
    if want["seen"] is None:
        assert got["seen"] is None
    else:
        assert {k: got["seen"][k] for k in want["seen"]} == want["seen"]
    assert got["addressed_to_me"] == want["addressed_to_me"]
    assert [g["may"] for g in got["authority"]] == want["authority"]
    assert len(got["authority_errors"]) == want.get("authority_errors", 0)
    assert [{k: c[k] for k in w} for c, w in zip(got["chain"], want["chain"], strict=True)] == want["chain"]
    if got["verdict"] != "verified":
        assert got["authority"] == []
