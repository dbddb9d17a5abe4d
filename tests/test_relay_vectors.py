"""Run spec/vectors/relay.json against gage's relay code (spec/relay.md)."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyrage import x25519

from gage.carriers.relay import dirrecord, envelope, seal
from gage.carriers.relay.envelope import EnvelopeError
from gage.format.errors import MalformedError, RefusedError
from gage.format.keys import parse_key
from gage.home import sealing

SPEC = Path(__file__).resolve().parent.parent / "spec" / "vectors"
V: dict[str, Any] = json.loads((SPEC / "relay.json").read_text())

# What gage's messages say for each refusal the vectors name.
WHY = {
    "magic": "not a gage envelope",
    "link": "a link",
    "absolute": "absolute path",
    "dotdot": "'..'",
    "duplicate": "duplicate",
    "order": "where the manifest lists",
    "unlisted": "does not list",
    "size": "the manifest says",
    "missing": "ends before",
    "truncated": "ends early",
    "trailing": "after the end",
    "signature-length": "key signs with 64",
    "manifest": "malformed",
}


def test_the_vectors_are_current() -> None:
    res = subprocess.run([sys.executable, str(SPEC / "generate_relay.py"), "--check"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("who", sorted(V["keys"]))
def test_keys_and_addresses(who: str) -> None:
    k = V["keys"][who]
    secret, public = bytes.fromhex(k["x25519_secret"]), bytes.fromhex(k["x25519_public"])
    assert sealing.identity_text(secret) == k["identity"] and sealing.recipient_text(public) == k["recipient"]
    assert sealing.parse_recipient(k["recipient"]) == public
    assert str(x25519.Identity.from_str(k["identity"]).to_public()) == k["recipient"]  # age agrees
    assert sealing.mailbox_address(k["recipient"]) == k["mailbox"]


@pytest.mark.parametrize("b", V["bindings"], ids=lambda b: b["of"])
def test_bindings_verify_and_parse(b: dict[str, str]) -> None:
    parsed = sealing.parse_carried({"binding": b["binding"], "signature": b["signature"]})
    assert parsed.verifies()
    assert parsed.signing_key == parse_key(V["keys"][b["of"]]["signing_key"])
    assert parsed.sealing_key == V["keys"][b["of"]]["recipient"]


@pytest.mark.parametrize("b", V["bad_bindings"], ids=lambda b: b["why"])
def test_bad_bindings_do_not_verify(b: dict[str, str]) -> None:
    assert not sealing.binding_verifies(parse_key(b["signing_key"]), b["binding"].encode(), bytes.fromhex(b["signature"]))


def test_the_envelope_opens_to_the_bundle(tmp_path: Path) -> None:
    e = V["envelope"]
    m = envelope.read_bytes(base64.b64decode(e["plaintext_b64"]), tmp_path / "b")
    assert m.id == e["bundle_id"]
    assert (tmp_path / "b" / "manifest.json").read_bytes() == base64.b64decode(e["manifest_b64"])
    assert (tmp_path / "b" / "manifest.sig").read_bytes().hex() == e["signature_hex"]
    for f in e["files"]:
        assert (tmp_path / "b" / "payload" / f["path"]).read_bytes() == base64.b64decode(f["data_b64"])


@pytest.mark.parametrize("r", V["refused"], ids=lambda r: r["why"])
def test_refused_plaintexts(r: dict[str, str], tmp_path: Path) -> None:
    assert set(WHY) == {x["why"] for x in V["refused"]}
    with pytest.raises(EnvelopeError, match=WHY[r["why"]].replace(".", r"\.")):
        envelope.read_bytes(base64.b64decode(r["plaintext_b64"]), tmp_path / "b")


def test_the_sealed_envelope_opens_with_bobs_identity(tmp_path: Path) -> None:
    reader = envelope.Reader(tmp_path / "b")
    seal.open_into(io.BytesIO(base64.b64decode(V["sealed"]["age_b64"])), V["keys"]["bob"]["identity"], reader)
    assert reader.finish().id == V["envelope"]["bundle_id"]
    with pytest.raises(seal.OpenError):
        seal.open_into(io.BytesIO(base64.b64decode(V["sealed"]["age_b64"])), V["keys"]["alice"]["identity"], envelope.Reader(tmp_path / "c"))


@pytest.mark.parametrize("r", V["records"], ids=lambda r: r["name"])
def test_records(r: dict[str, str]) -> None:
    data = base64.b64decode(r["data_b64"])
    if r["expect"] == "valid":
        rec = dirrecord.parse(data, handle=r["handle"])
        assert rec.signing_key == parse_key(r["signing_key"]) and rec.binding.sealing_key == r["sealing_key"] and rec.mailbox == r["mailbox"]
        return
    err = {"refused": RefusedError, "malformed": MalformedError}[r["expect"]]
    with pytest.raises(err) as caught:
        dirrecord.parse(data, handle=r["handle"])
    assert type(caught.value) is err  # a refusal is not reported as malformed, nor the other way


@pytest.mark.parametrize("r", V["replays"], ids=lambda r: r["name"])
def test_replays(r: dict[str, str]) -> None:
    """What a reader refuses after it has seen a record: one its key published earlier (a replay)."""
    from gage.home import dirseen

    seen = dirrecord.parse(base64.b64decode(r["seen_b64"]), handle=r["handle"])
    then = dirrecord.parse(base64.b64decode(r["then_b64"]), handle=r["handle"])  # valid on its own
    assert then.signing_key == seen.signing_key
    problem = dirseen.replay_problem(seen.published_at, then.published_at)
    assert (problem is None) == (r["expect"] == "valid")


def test_a_protected_sealing_file_opens_with_the_binders_key(tmp_path: Path) -> None:
    import nacl.signing

    from gage.format.keys import Identity

    s = V["sealing_file"]
    k = V["keys"][s["of"]]
    assert sealing.file_key(bytes.fromhex(k["seed"])).hex() == s["file_key"]
    (tmp_path / sealing.FILE_NAME).write_text(s["file"])
    (tmp_path / sealing.FILE_NAME).chmod(0o600)
    me = Identity(name=s["of"], signing_key=nacl.signing.SigningKey(bytes.fromhex(k["seed"])))
    locked = sealing.load(tmp_path, me.key)
    assert locked is not None and locked.sealed and locked.recipient == k["recipient"]
    opened = sealing.unlock(tmp_path, me)
    assert opened is not None and opened.secret.hex() == k["x25519_secret"] and opened.identity == k["identity"]


def test_a_big_envelopes_message_and_the_meta_its_reader_takes() -> None:
    """spec/relay.md section 4: the message fixes the object (name, size, SHA-256); the reader takes the
    first meta under the name that says the same, and what gage writes is that meta, byte for byte."""
    from gage.carriers.relay import objects, objread

    big = V["big_envelope"]
    headers = big["message"]["headers"]
    named = objread.named(headers)
    assert (named.name, named.size, named.sha256.hex() if named.sha256 else None) == (headers["Gage-Object"], big["envelope"]["size"], big["envelope"]["sha256"])
    metas = [base64.b64decode(m["data_b64"]) for m in big["metas"]]
    taken = [i for i, raw in enumerate(metas) if objread.matches(raw, i + 1, big["bucket"], named, 1 << 30) is not None]
    assert taken[0] == big["taken"]
    sender = json.loads(metas[big["taken"]])
    assert objects.meta(big["bucket"], named.name, sender["nuid"], named.size, len(big["chunk_sizes"]), named.sha256, objects.CHUNK) == sender
    assert objects.meta_subject(big["bucket"], named.name) == big["meta_subject"]
    assert objects.chunk_subject(big["bucket"], sender["nuid"]) == big["chunk_subject"]
    assert [min(objects.CHUNK, named.size - i) for i in range(0, named.size, objects.CHUNK)] == big["chunk_sizes"]
    older = objread.named(big["older_message"]["headers"])
    assert older.size is None and older.sha256 is None
    first = objread.check_meta(metas[big["older_message"]["taken"]], big["bucket"], older.name, 1, 1 << 30)
    assert first.size == json.loads(metas[0])["size"]


@pytest.mark.parametrize("r", V["big_envelope"]["refused_headers"], ids=lambda r: r["why"])
def test_a_message_naming_its_object_wrongly_is_dropped_unread(r: dict[str, Any]) -> None:
    from gage.carriers.relay import objread

    with pytest.raises(objread.ObjectError):
        objread.named(r["headers"])
