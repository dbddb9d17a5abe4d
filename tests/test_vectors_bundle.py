"""Every bundle and malformed-manifest vector in spec/vectors, checked against the code.

The vectors are the contract a second implementation is written from, so these tests
read the committed JSON and never regenerate it: if the code drifts from the spec, a
vector fails here rather than being silently rewritten.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

from gage import bundle as bundle_mod
from gage.format.errors import BadSignatureError, Exit, MalformedError
from gage.format.keys import (
    SIGNATURE_CONTEXT,
    key_text,
    parse_key,
    sign_manifest,
    verify_manifest_signature,
)
from gage.format.manifest import ID_CONTEXT, Manifest, bundle_id

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors"
BUNDLES = json.loads((VECTORS / "bundles.json").read_text(encoding="utf-8"))
MALFORMED = json.loads((VECTORS / "malformed-manifests.json").read_text(encoding="utf-8"))


def _manifest_bytes(case: dict[str, Any]) -> bytes:
    if "manifest_b64" in case:
        return base64.b64decode(case["manifest_b64"])
    parts = case["manifest_parts"]
    return (
        base64.b64decode(parts["prefix_b64"])
        + parts["repeat"].encode("ascii") * parts["repeat_count"]
        + base64.b64decode(parts["suffix_b64"])
    )


def _write_bundle(root: Path, raw: bytes, sig: bytes, files: list[dict[str, Any]]) -> Path:
    root.mkdir(parents=True)
    (root / "manifest.json").write_bytes(raw)
    (root / "manifest.sig").write_bytes(sig)
    (root / "payload").mkdir()
    for f in files:
        p = root / "payload" / f["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(base64.b64decode(f["content_b64"]))
    return root


def test_vector_files_are_present_and_nonempty() -> None:
    """A vector file that lost its cases would make every parametrised test vanish silently."""
    assert len(BUNDLES["bundles"]) >= 8
    assert sum(b["signature_valid"] for b in BUNDLES["bundles"]) >= 3
    assert sum(not b["signature_valid"] for b in BUNDLES["bundles"]) >= 4
    assert len(MALFORMED["manifests"]) >= 40


def test_contexts_match_the_code() -> None:
    assert bytes.fromhex(BUNDLES["id_context_hex"]) == ID_CONTEXT == b"gage/id/v1\x00"
    assert bytes.fromhex(BUNDLES["signature_context_hex"]) == SIGNATURE_CONTEXT == b"gage/manifest/v1\x00"


@pytest.mark.parametrize("case", BUNDLES["bundles"], ids=lambda c: c["name"])
def test_bundle_vector_bytes_and_id(case: dict[str, Any]) -> None:
    raw = _manifest_bytes(case)
    if "manifest_utf8" in case:
        assert raw == case["manifest_utf8"].encode("utf-8")
    assert bundle_id(raw) == case["id"]
    manifest = Manifest.parse(raw)
    assert manifest.raw == raw, "the parser must keep the exact bytes"
    assert manifest.id == case["id"]
    # Every payload file the vector carries is listed with its size and hash, and nothing else is.
    listed = {f.path: (f.size, f.sha256) for f in manifest.files}
    carried = {}
    for f in case["files"]:
        content = base64.b64decode(f["content_b64"])
        assert len(content) == f["size"]
        assert hashlib.sha256(content).hexdigest() == f["sha256"]
        carried[f["path"]] = (f["size"], f["sha256"])
    assert listed == carried


@pytest.mark.parametrize("case", BUNDLES["bundles"], ids=lambda c: c["name"])
def test_bundle_vector_signature(case: dict[str, Any]) -> None:
    raw = _manifest_bytes(case)
    sig = bytes.fromhex(case["signature_hex"])
    manifest = Manifest.parse(raw)
    signer = nacl.signing.SigningKey(bytes.fromhex(case["signed_by"]["seed_hex"]))
    assert key_text(bytes(signer.verify_key)) == case["signed_by"]["key"]
    if case["signature_valid"]:
        # Ed25519 is deterministic: gage's signer must produce exactly the vector's bytes.
        assert sign_manifest(signer, raw) == sig
        assert bytes(signer.verify_key) == manifest.sender.key
        verify_manifest_signature(manifest.sender.key, raw, sig)
    else:
        with pytest.raises(BadSignatureError) as info:
            verify_manifest_signature(manifest.sender.key, raw, sig)
        assert info.value.path == "manifest.sig"
        assert info.value.exit_code == Exit.BAD_SIGNATURE


@pytest.mark.parametrize("case", BUNDLES["bundles"], ids=lambda c: c["name"])
def test_bundle_vector_as_directory(case: dict[str, Any], tmp_path: Path) -> None:
    raw = _manifest_bytes(case)
    root = _write_bundle(tmp_path / case["id"], raw, bytes.fromhex(case["signature_hex"]), case["files"])
    result = bundle_mod.check(root, expect_name=True)
    assert result.id == case["id"]
    if case["signature_valid"]:
        assert result.ok, result.problems
        assert result.warnings == []
    else:
        assert not result.ok
        assert {p.stage for p in result.problems} == {case["expected_stage"]}
        err = result.first_error()
        assert err is not None and err.stage == "signature" and err.path == "manifest.sig"


@pytest.mark.parametrize("case", MALFORMED["manifests"], ids=lambda c: c["name"])
def test_malformed_manifest_is_rejected_by_the_parser(case: dict[str, Any]) -> None:
    assert case["expected_stage"] == "malformed"
    raw = _manifest_bytes(case)
    with pytest.raises(MalformedError) as info:
        Manifest.parse(raw)
    assert info.value.stage == "malformed"
    assert info.value.field == case["field"], info.value.message
    assert case["message_contains"] in info.value.message


@pytest.mark.parametrize("case", MALFORMED["manifests"], ids=lambda c: c["name"])
def test_malformed_manifest_in_a_bundle_stops_at_the_malformed_stage(case: dict[str, Any], tmp_path: Path) -> None:
    """Signed with a real key, so nothing but the manifest itself can be what is wrong."""
    raw = _manifest_bytes(case)
    signer = nacl.signing.SigningKey(hashlib.sha256(b"gage test vector seed\x00alice").digest())
    _write_bundle(tmp_path / "b", raw, sign_manifest(signer, raw), [])
    result = bundle_mod.check(tmp_path / "b")
    assert result.manifest is None
    assert [p.stage for p in result.problems] == ["malformed"]
    problem = result.problems[0]
    assert problem.path == "manifest.json"
    assert problem.field == case["field"]
    err = result.first_error()
    assert err is not None and err.exit_code == Exit.MALFORMED


def test_valid_manifests_between_1_mib_and_the_4_mib_cap_are_vectors() -> None:
    """Issue 19: a reader with the old 1 MiB cap must fail some vector."""
    sizes = sorted(len(_manifest_bytes(c)) for c in BUNDLES["bundles"] if c["signature_valid"])
    assert any(1 << 20 < s < 4 << 20 for s in sizes) and (4 << 20) in sizes
    for c in MALFORMED["manifests"]:
        assert "repeat_byte" not in c.get("manifest_parts", {})  # one recipe spelling: `repeat`


def test_vector_seeds_are_what_the_spec_says() -> None:
    """The seeds are sha256('gage test vector seed' NUL + label); a reader can rebuild them."""
    for case in BUNDLES["bundles"]:
        label = case["signed_by"]["seed_label"]
        assert case["signed_by"]["seed_hex"] == hashlib.sha256(b"gage test vector seed\x00" + label.encode()).hexdigest()
        parse_key(case["signed_by"]["key"])
