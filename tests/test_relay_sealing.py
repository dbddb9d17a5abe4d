"""The sealing key and its binding (spec/relay.md section 2), and age sealing both ways."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import nacl.signing
import pytest
from pyrage import x25519
from relaytest import bundle

from gage.carriers.relay import envelope, seal
from gage.carriers.relay.envelope import Reader
from gage.format.errors import MalformedError
from gage.format.keys import key_text
from gage.format.keys.file import KeyFile
from gage.home import sealing
from gage.home.identity import load_key_file
from gage.home.layout import Home


def test_the_sealing_key_is_age_and_bound_by_the_signing_key(make_home) -> None:
    home: Home = make_home("alice")
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    # age's own forms: pyrage reads the identity and derives the same recipient
    assert str(x25519.Identity.from_str(key.identity).to_public()) == key.recipient
    assert key.binding.signing_key == home.identity.key and key.binding.verifies()
    assert (home.root / "sealing.json").stat().st_mode & 0o077 == 0
    # the signing key is a different key from the sealing key
    assert sealing.parse_recipient(key.recipient) != home.identity.key
    again = sealing.ensure(home.root, home.identity.secret)
    assert again.recipient == key.recipient  # made once


def test_a_binding_cannot_be_moved_to_another_key_or_edited() -> None:
    sk, other = nacl.signing.SigningKey.generate(), nacl.signing.SigningKey.generate()
    mine = x25519.Identity.generate()
    b = sealing.build_binding(sk, str(mine.to_public()))
    assert b.verifies()
    # a different sealing key in the same statement: the signature no longer verifies
    swapped = b.raw.replace(b.sealing_key.encode(), str(x25519.Identity.generate().to_public()).encode())
    assert not sealing.binding_verifies(sk.verify_key.encode(), swapped, b.signature)
    # another key's binding presented as this key's: the signature is not this key's
    theirs = sealing.build_binding(other, str(mine.to_public()))
    assert not sealing.binding_verifies(bytes(sk.verify_key), theirs.raw, theirs.signature)
    # a manifest signature is never a binding signature (own context)
    assert not sealing.binding_verifies(bytes(sk.verify_key), b.raw, sk.sign(b"gage/manifest/v1\x00" + b.raw).signature)


def test_the_carried_form_is_closed_and_versioned() -> None:
    sk = nacl.signing.SigningKey.generate()
    b = sealing.build_binding(sk, str(x25519.Identity.generate().to_public()))
    c = b.to_carried()
    assert sealing.parse_carried(c).raw == b.raw
    with pytest.raises(MalformedError):
        sealing.parse_carried({**c, "extra": "x"})
    obj = json.loads(b.raw)
    obj["gage-sealing-binding"] = 2
    with pytest.raises(MalformedError, match="unknown binding version"):
        sealing.parse_carried({**c, "binding": json.dumps(obj)})
    with pytest.raises(MalformedError, match="age X25519 recipient"):
        sealing.parse_recipient("age1notbech32")


def test_a_key_file_carries_the_binding_and_a_reader_checks_its_form(make_home, gage, tmp_path: Path) -> None:
    home: Home = make_home("alice")
    assert "sealing" not in json.loads(KeyFile(home.identity.key, "alice").to_bytes())
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    r = gage(home, "key", "export", "-o", str(tmp_path / "a.key"))
    assert r.code == 0
    kf = load_key_file(tmp_path / "a.key")
    assert kf.key == home.identity.key and kf.sealing == key.binding.to_carried()
    bad = json.loads((tmp_path / "a.key").read_text())
    bad["sealing"]["signature"] = "zz"
    (tmp_path / "bad.key").write_text(json.dumps(bad))
    with pytest.raises(MalformedError, match="sealing.signature"):
        load_key_file(tmp_path / "bad.key")  # the binding's form is checked where key files are read
    assert key_text(kf.key) in (tmp_path / "a.key").read_text()


def test_sealed_streams_open_with_pyrage_and_refuse_the_wrong_key(make_home, tmp_path: Path) -> None:
    home: Home = make_home("alice")
    bid = bundle(home, tmp_path, data=b"x" * 200_000)
    root = home.state_dir("outbox") / bid
    me = x25519.Identity.generate()
    buf = io.BytesIO()
    seal.seal_bundle(root, str(me.to_public()), buf)
    ct = buf.getvalue()
    assert ct.startswith(b"age-encryption.org/v1\n")
    assert b"hello" not in ct and bid.encode() not in ct and b"alice" not in ct
    r = Reader(tmp_path / "opened")
    seal.open_into(io.BytesIO(ct), str(me), r)
    assert r.finish().id == bid
    with pytest.raises(seal.OpenError, match="does not open"):
        seal.open_into(io.BytesIO(ct), str(x25519.Identity.generate()), Reader(tmp_path / "o2"))
    with pytest.raises(seal.OpenError, match="not an age envelope"):
        seal.open_into(io.BytesIO(b"hello"), str(me), Reader(tmp_path / "o3"))
    damaged = bytearray(ct)
    damaged[-100] ^= 1
    with pytest.raises(seal.OpenError):
        seal.open_into(io.BytesIO(bytes(damaged)), str(me), Reader(tmp_path / "o4"))


@pytest.mark.skipif(shutil.which("age") is None, reason="the age command is not installed (.ci/run installs it)")
def test_age_d_with_the_homes_identity_opens_an_envelope(make_home, tmp_path: Path) -> None:
    home: Home = make_home("bob")
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    sender: Home = make_home("alice")
    bid = bundle(sender, tmp_path)
    env = tmp_path / "e.age"
    with open(env, "wb") as f:
        seal.seal_bundle(sender.state_dir("outbox") / bid, key.recipient, f)
    ident = tmp_path / "id.txt"
    ident.write_text(key.identity + "\n")
    ident.chmod(0o600)
    res = subprocess.run(["age", "-d", "-i", str(ident), str(env)], capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == envelope.to_bytes(sender.state_dir("outbox") / bid)


def test_a_hybrid_homes_binding_and_record_need_both_signatures(make_home) -> None:
    """A new home is hybrid (issue 22), so its sealing-key binding and directory record are signed by the
    one signing rule with both halves; cut down to the Ed25519 half, neither verifies."""
    from gage.carriers.relay import dirrecord
    from gage.format import signing

    home: Home = make_home("alice")
    assert home.identity.hybrid
    key = sealing.ensure(home.root, home.identity.secret)
    b = key.binding
    assert b.signing_key == home.identity.key and len(b.signature) == signing.HYBRID_SIG_LEN and b.verifies()
    half = b.signature[: signing.ED25519_SIG_LEN]
    assert not sealing.binding_verifies(b.signing_key, b.raw, half)
    # Carried with only the Ed25519 half: the statement names the whole hybrid key, so it never verifies.
    stripped = sealing.parse_carried({"binding": b.raw.decode(), "signature": half.hex()})
    assert stripped.signing_key == home.identity.key and not stripped.verifies()
    rec = dirrecord.build(home.identity.secret, "alice", b, None)
    assert rec.signing_key == home.identity.key and dirrecord.record_verifies(rec.signing_key, rec.raw, rec.signature)
    assert not dirrecord.record_verifies(rec.signing_key, rec.raw, rec.signature[: signing.ED25519_SIG_LEN])
    # A key file carrying it fits the key-file cap and reads back.
    kf = KeyFile(key=home.identity.key, name="alice", sealing=b.to_carried())
    path = home.root / "alice.key"
    path.write_bytes(kf.to_bytes())
    assert load_key_file(path).sealing == b.to_carried()
