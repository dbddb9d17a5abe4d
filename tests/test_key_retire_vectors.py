"""Run spec/vectors/key-statements.json against gage's key statement code (spec/keys.md).

Statements are parsed and their signatures checked; malformed files must be refused with
the field named; carriers must be told from ordinary bundles; and each case builds a
receiver, applies statements in order, and checks outcomes, key statuses and verdicts.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

from gage.format.errors import MalformedError, RefusedError
from gage.format.keys import Identity, key_text, parse_key, verify_manifest_signature
from gage.format.keys import statement as ks
from gage.format.manifest import Manifest
from gage.format.words import derive
from gage.home import listing
from gage.home.contacts import Contacts
from gage.home.identity import save_identity
from gage.home.layout import Home
from gage.trust import ceremony, retirement
from gage.trust import verdict as verdict_mod

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors"
VECTORS = json.loads((SPEC / "key-statements.json").read_text("utf-8"))
PEOPLE = {p["name"]: p for p in VECTORS["people"]}
KEYS = {name: parse_key(p["key"]) for name, p in PEOPLE.items()}


def _file(name: str) -> bytes:
    return base64.b64decode(VECTORS["statements"][name]["file"])


def _receiver(root: Path) -> Home:
    me = PEOPLE[VECTORS["receiver"]]
    root.mkdir(mode=0o700)
    home = Home(root)
    home.ensure_layout()
    save_identity(Identity(name="me", signing_key=nacl.signing.SigningKey(bytes.fromhex(me["seed"]))), home.identity_path)
    return home


def _confirm(home: Home, name: str, key_of: str) -> None:
    words = " ".join(" ".join(p) for p in derive(KEYS[key_of]))
    outcome = ceremony.confirm(home, name, KEYS[key_of], words)
    assert outcome.confirmed, outcome.message


def _place(home: Home, b: dict[str, Any]) -> listing.Stored:
    d = home.state_dir("pending") / b["id"]
    (d / "payload").mkdir(parents=True)
    (d / "manifest.json").write_bytes(base64.b64decode(b["manifest"]))
    (d / "manifest.sig").write_bytes(bytes.fromhex(b["signature"]))
    for path, data in b["files"].items():
        (d / "payload" / path).parent.mkdir(parents=True, exist_ok=True)
        (d / "payload" / path).write_bytes(base64.b64decode(data))
    return listing.Stored(id=b["id"], state="pending", path=d)


def test_the_vectors_are_what_the_generator_writes() -> None:
    res = subprocess.run([sys.executable, str(SPEC / "generate_keys.py"), "--check"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("name", sorted(VECTORS["statements"]))
def test_statement_parses_with_its_id_and_signatures(name: str) -> None:
    v = VECTORS["statements"][name]
    signed = ks.parse(_file(name))
    assert signed.statement.raw == base64.b64decode(v["statement"])
    assert signed.statement.id == v["id"]
    assert signed.signed_by_key() is v["signed_by_key"]
    assert signed.signed_by_replacement() is v["signed_by_replacement"]
    # What is written back is the same file, byte for byte (the statement is never re-serialised).
    assert signed.to_bytes() == _file(name)


@pytest.mark.parametrize("case", VECTORS["malformed"], ids=[c["label"] for c in VECTORS["malformed"]])
def test_malformed_files_are_refused_naming_the_field(case: dict[str, Any]) -> None:
    with pytest.raises(MalformedError) as caught:
        ks.parse(base64.b64decode(case["file"]))
    assert caught.value.field == case["field"]


def test_a_statement_signature_is_never_a_manifest_signature() -> None:
    """The same key over the same bytes: the contexts keep the two kinds of signature apart."""
    signed = ks.parse(_file("alice-superseded"))
    with pytest.raises(Exception):  # noqa: B017 - BadSignatureError, the type is the bundle's
        verify_manifest_signature(KEYS["alice"], signed.statement.raw, signed.signature)
    manifest_made = ks.parse(_file("manifest-context"))
    assert not manifest_made.signed_by_key()
    # and the manifest-context signature does verify as a manifest signature over those bytes
    verify_manifest_signature(KEYS["alice"], manifest_made.statement.raw, manifest_made.signature)


@pytest.mark.parametrize("row", VECTORS["carriers"], ids=[c["about"] for c in VECTORS["carriers"]])
def test_carrier_rule(row: dict[str, Any], tmp_path: Path) -> None:
    b = row["bundle"]
    m = Manifest.parse(base64.b64decode(b["manifest"]))
    assert retirement.is_statement_bundle(m) is row["statement_bundle"]
    home = _receiver(tmp_path / "me")
    held = _place(home, b)
    outcome = retirement.apply_bundle(home, held)
    if row["statement_bundle"]:
        assert outcome is not None and outcome.why == "unknown-key"  # alice is nobody here, but it was read
    else:
        assert outcome is None


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["label"] for c in VECTORS["cases"]])
def test_case(case: dict[str, Any], tmp_path: Path) -> None:
    home = _receiver(tmp_path / "me")
    for name in case["receiver"]["confirmed"]:
        _confirm(home, name, name)
    for name in case["receiver"]["candidates"]:
        assert ceremony.add_candidate(home, KEYS[name], name, "vector")
    for step in case["steps"]:
        if "apply" in step:
            outcome = retirement.apply_bytes(home, _file(step["apply"]))
            assert outcome.why == step["expect"], outcome.message
        else:
            if step["expect"] == "confirmed":
                _confirm(home, step["as"], step["pair"])
            else:
                with pytest.raises(RefusedError):
                    _confirm(home, step["as"], step["pair"])
    contacts = Contacts.load(home.contacts_path)
    for name, status in case["status_after"].items():
        assert contacts.status_of(KEYS[name]) == status, name
    for name, link in case["linked_after"].items():
        cand = contacts.candidates[KEYS[name]]
        assert cand.replaces == KEYS[link["replaces"]]
        assert cand.replaces_contact == link["contact"]
    for b in case["verdicts_after"]:
        v = verdict_mod.compute(home, _place(home, b))
        assert (v.verdict, v.sender.name, v.sender.status) == (b["verdict"], b["name"], b["status"]), b["signer"]
        assert v.sender.key is not None and key_text(v.sender.key) == PEOPLE[b["signer"]]["key"]
    # Every statement applied or refused is in the journal, in order, with its outcome.
    outcomes = [
        "applied" if e["event"] == "key-statement-applied" else e["why"]
        for e in home.journal.entries()
        if e["event"] in ("key-statement-applied", "key-statement-refused")
    ]
    assert outcomes == [s["expect"] for s in case["steps"] if "apply" in s]
