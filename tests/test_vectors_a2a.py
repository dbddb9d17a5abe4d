"""The A2A vectors in spec/vectors/a2a.json, checked against the code.

The vectors are the contract a second implementation is written from: gage's export of
the vector bundle must be the vector objects exactly, each vector object must import to
the vector bundle byte for byte, and each refused vector must be refused at its stage.
The tests read the committed JSON; one test checks the generator still writes it.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nacl.signing
import pytest

from gage.carriers.a2a import artifact
from gage.carriers.a2a.artifact import EXTENSION_URI, Limits
from gage.format.errors import GageError
from gage.format.keys import verify_manifest_signature
from gage.format.manifest import ID_CONTEXT, Manifest
from gage.home.layout import Home

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors"
VECTORS = json.loads((SPEC / "a2a.json").read_text("utf-8"))
BUNDLE = VECTORS["bundle"]
PROTOCOLS = ("1.0", "0.3")


def _bytes(b64: str) -> bytes:
    return base64.b64decode(b64, validate=True)


RAW = _bytes(BUNDLE["manifest_b64"])
SIG = _bytes(BUNDLE["signature_b64"])
FILES = {f["path"]: _bytes(f["content_b64"]) for f in BUNDLE["files"]}


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    """The vector bundle as a folder, named by its id, as `gage send` would leave it."""
    root = tmp_path / BUNDLE["id"]
    (root / "payload").mkdir(parents=True)
    (root / "manifest.json").write_bytes(RAW)
    (root / "manifest.sig").write_bytes(SIG)
    for path, data in FILES.items():
        p = root / "payload" / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def test_the_vector_bundle_is_a_good_bundle() -> None:
    """The bundle the vectors carry checks out on its own, and holds the awkward files."""
    assert hashlib.sha256(ID_CONTEXT + RAW).hexdigest() == BUNDLE["id"]
    m = Manifest.parse(RAW)
    assert m.id == BUNDLE["id"]
    verify_manifest_signature(m.sender.key, RAW, SIG)
    seed = hashlib.sha256(b"gage test vector seed\x00" + BUNDLE["sender_seed_label"].encode()).digest()
    assert bytes(nacl.signing.SigningKey(seed).verify_key) == m.sender.key
    assert [f.path for f in m.files] == [f["path"] for f in BUNDLE["files"]]
    for f in m.files:
        assert (len(FILES[f.path]), hashlib.sha256(FILES[f.path]).hexdigest()) == (f.size, f.sha256)
    assert b"" in FILES.values() and bytes(range(256)) in FILES.values()
    assert any(not p.isascii() for p in FILES) and any(p.count("/") >= 2 for p in FILES)
    assert len(VECTORS["refused"]) >= 30


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_export_equals_the_vectors(bundle_dir: Path, protocol: str) -> None:
    assert artifact.export_artifact(bundle_dir, protocol=protocol) == VECTORS["artifact"][protocol]
    msg = VECTORS["message"]
    assert artifact.export_message(bundle_dir, protocol=protocol, message_id=msg["message_id"], claims=msg["claims"]) == msg[protocol]


def _land(home: Home, obj: dict[str, Any]) -> None:
    landed = artifact.receive_bytes(home, json.dumps(obj).encode())
    assert [(x.id, x.state, x.new, x.ok, x.notes) for x in landed] == [(BUNDLE["id"], "pending", True, True, [])]
    root = home.state_dir("pending") / BUNDLE["id"]
    assert (root / "manifest.json").read_bytes() == RAW
    assert (root / "manifest.sig").read_bytes() == SIG
    got = {p.relative_to(root / "payload").as_posix(): p.read_bytes() for p in (root / "payload").rglob("*") if p.is_file()}
    assert got == FILES


@pytest.mark.parametrize("what", ("artifact", "message"))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_vector_object_imports_byte_for_byte(make_home: Callable[[str], Home], protocol: str, what: str) -> None:
    obj = VECTORS[what][protocol]
    assert artifact.detect_protocol(obj) == protocol
    _land(make_home("bob"), obj)
    if what == "message":
        (carried,) = artifact.parse(obj)
        assert carried.claims == VECTORS["message"]["claims"]


@pytest.mark.parametrize("case", VECTORS["refused"], ids=[c["name"] for c in VECTORS["refused"]])
def test_refused_vector(make_home: Callable[[str], Home], case: dict[str, Any]) -> None:
    limits = Limits(max_bytes=case["max_bytes"]) if "max_bytes" in case else Limits()
    want = case["error"]
    protocols = [None] if case["protocol"] is None else [None, case["protocol"]]
    for protocol in protocols:
        with pytest.raises(GageError) as info:
            artifact.parse(case["artifact"], protocol=protocol, limits=limits)
        assert info.value.stage == want["stage"], str(info.value)
        if want["field"] is not None:
            assert info.value.field == want["field"], str(info.value)
    # Through the home too: a refusal writes nothing.
    home = make_home("bob")
    before = home.journal.entries()
    with pytest.raises(GageError):
        artifact.receive_bytes(home, json.dumps(case["artifact"]).encode(), limits=limits)
    assert home.journal.entries() == before
    assert list(home.state_dir("pending").iterdir()) == [] and list(home.staging.iterdir()) == []


def test_refused_vectors_differ_from_the_good_artifact() -> None:
    """Each refused case is a real change (or a lower limit), so none is refused by accident of the test."""
    good = VECTORS["artifact"]
    for case in VECTORS["refused"]:
        if "max_bytes" in case:
            assert case["artifact"] == good["1.0"]
        else:
            assert case["artifact"] not in (good["1.0"], good["0.3"]), case["name"]
        assert case["error"]["stage"] in ("malformed", "refused")


def test_vector_metadata_is_strings_only() -> None:
    for obj in (*VECTORS["artifact"].values(), VECTORS["message"]["1.0"], VECTORS["message"]["0.3"]):
        assert obj["extensions"] == [EXTENSION_URI] == [VECTORS["extension_uri"]]
        assert all(isinstance(v, str) for v in obj["metadata"][EXTENSION_URI].values())


def test_the_generator_reproduces_the_committed_file() -> None:
    spec = importlib.util.spec_from_file_location("generate_a2a", SPEC / "generate_a2a.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.render() == (SPEC / "a2a.json").read_text("utf-8")
    assert gen.render() == gen.render()
