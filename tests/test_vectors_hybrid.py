"""gage against spec/vectors/hybrid.json, made by spec/vectors/generate_hybrid.py without gage's code.

Keys and their text, fingerprints and words; bundles (a valid hybrid one, a classical one, and
every stripped, swapped and cross-context signature, each a bad signature); the downgrade of a
bundle, a statement and a key file for a receiver who confirmed the hybrid key; and statements.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gage import bundle as bundle_mod
from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.format.errors import MalformedError
from gage.format.keys import Identity, parse_key, short_fingerprint
from gage.format.keys import statement as ks
from gage.format.keys.file import KeyFile
from gage.format.signing import SecretKey
from gage.format.words import derive
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import store
from gage.trust import ceremony, retirement
from gage.trust import verdict as verdict_mod

ROOT = Path(__file__).resolve().parent.parent
VECTORS: dict[str, Any] = json.loads((ROOT / "spec" / "vectors" / "hybrid.json").read_text(encoding="utf-8"))
PEOPLE = {p["label"]: p for p in VECTORS["people"]}


def test_the_committed_vectors_agree_with_their_independent_generator() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "spec" / "vectors" / "generate_hybrid.py"), "--check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("person", VECTORS["people"], ids=lambda p: p["label"])
def test_keys_from_seeds_their_text_fingerprint_and_words(person: dict[str, Any]) -> None:
    seeds = bytes.fromhex(person["ed25519_seed_hex"]) + bytes.fromhex(person["mldsa65_seed_hex"] or "")
    secret = SecretKey.from_seed_bytes(seeds)
    key = parse_key(person["key"])
    assert secret.public == key
    assert Identity.from_secret("x", secret).key_text == person["key"]
    assert short_fingerprint(key) == person["fingerprint"]
    assert short_fingerprint(parse_key(person["ed25519_half"])) == person["ed25519_half_fingerprint"]
    assert [list(p) for p in derive(key)] == person["words"]


def _write(case: dict[str, Any], where: Path) -> Path:
    out = where / case["id"]
    (out / PAYLOAD).mkdir(parents=True)
    for p, data in case["files"].items():
        (out / PAYLOAD / p).write_bytes(base64.b64decode(data))
    (out / MANIFEST).write_bytes(base64.b64decode(case["manifest"]))
    (out / SIGNATURE).write_bytes(base64.b64decode(case["signature"]))
    return out


@pytest.mark.parametrize("case", VECTORS["bundles"], ids=lambda c: c["name"])
def test_bundle_check_gives_the_vectors_stage(case: dict[str, Any], tmp_path: Path) -> None:
    path = _write(case, tmp_path)
    c = bundle_mod.check(path)
    assert c.manifest is not None and c.manifest.id == case["id"]
    if case["valid"]:
        assert c.ok, [str(p) for p in c.problems]
    else:
        first = c.first_error()
        assert first is not None and first.stage == case["stage"], [str(p) for p in c.problems]
        assert [p.stage for p in c.problems] == ["signature"]


def _receiver_who_confirmed_alice(tmp_path: Path) -> Home:
    me = Home.init(tmp_path / "me", "me")
    alice = parse_key(PEOPLE["alice"]["key"])
    outcome = ceremony.confirm(me, "alice", alice, " ".join(" ".join(p) for p in PEOPLE["alice"]["words"]))
    assert outcome.confirmed, outcome.message
    return me


@pytest.mark.parametrize("case", VECTORS["bundles"], ids=lambda c: c["name"])
def test_verdicts_for_a_receiver_who_confirmed_alices_hybrid_key(case: dict[str, Any], tmp_path: Path) -> None:
    me = _receiver_who_confirmed_alice(tmp_path)
    res = store.import_bundle(me, _write(case, tmp_path / "wire"))
    v = verdict_mod.compute(me, listing.resolve(me, res.id))
    if case["valid"] and not case["downgrade_for_a_receiver_who_confirmed_alice"]:
        assert v.verdict in ("verified", "unverified") and not v.problems
        sender = json.loads(base64.b64decode(case["manifest"]))["sender"]["key"]
        assert v.to_json()["sender"]["scheme"] == ("hybrid" if sender.startswith("ed25519+mldsa65:") else "classical-only")
    else:
        assert v.verdict == "invalid" and v.problems[0].stage == "signature"
        assert v.sender.name is None


@pytest.mark.parametrize("case", VECTORS["statements"], ids=lambda c: c["name"])
def test_statements_signatures_and_outcomes(case: dict[str, Any], tmp_path: Path) -> None:
    data = base64.b64decode(case["file"])
    signed = ks.parse(data)
    assert (signed.signed_by_key(), signed.signed_by_replacement()) == (case["signed_by_key"], case["signed_by_replacement"])
    if "id" in case:
        assert signed.statement.id == case["id"]
    if case["outcome"] is not None:
        me = _receiver_who_confirmed_alice(tmp_path)
        assert retirement.apply_bytes(me, data, source="vector").why == case["outcome"]


@pytest.mark.parametrize("case", VECTORS["key_files"], ids=lambda c: c["name"])
def test_key_files(case: dict[str, Any], tmp_path: Path) -> None:
    data = base64.b64decode(case["file"])
    if not case["valid"]:
        with pytest.raises(MalformedError) as info:
            KeyFile.parse(data)
        assert info.value.field == case["field"]
        return
    kf = KeyFile.parse(data)
    assert kf.key == parse_key(case["key"])
    if case.get("mismatch_for_a_receiver_who_confirmed_alice"):
        me = _receiver_who_confirmed_alice(tmp_path)
        down = ceremony.downgrade(me, kf.key)
        assert down is not None and "key mismatch" in ceremony.mismatch_message(down)
