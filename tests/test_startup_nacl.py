"""Start-up (issue 28): a small command that signs and checks nothing loads none of PyNaCl's
bindings; the identity's Ed25519 signing key is made when something signs, and reading the
identity file still checks its key against its seed. Nor do they load `typing` (gage's own
modules import it only for mypy), `dataclasses` or `tomllib`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nacl.signing
import pytest
from gagetest import small_home_with_a_bundle

from gage.format import ed25519
from gage.format.errors import MalformedError, PassphraseError
from gage.format.keys import Identity, RetiredKey, key_text, verify_manifest_signature
from gage.format.record import FrozenRecordError, replace
from gage.home.identity import load_identity
from gage.home.layout import Home

# What `import nacl.signing` (or any public PyNaCl module) brings: every libsodium binding, 8 to
# 11 ms. `nacl._sodium`, the compiled module under them, is what reading an identity may use.
SIGNING_LIBRARY = ("nacl.signing", "nacl.bindings", "nacl.public", "nacl.pwhash", "nacl.secret", "cryptography")

PROBE = (
    "import contextlib, io, json, sys\n"
    "from gage.cli import main as m\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    code = m.main(json.loads(sys.argv[1]))\n"
    "print(json.dumps({'code': code, 'out': out.getvalue(), 'modules': sorted(sys.modules)}))\n"
)


def _run(home: Path, *argv: str) -> tuple[str, set[str]]:
    """`gage ARGV` in a fresh process on `home`: what it printed, and the modules it loaded."""
    env = {**os.environ, "GAGE_HOME": str(home)}
    res = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(argv))], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.splitlines()[-1])
    assert got["code"] == 0, (argv, got["out"], res.stderr)
    return got["out"], set(got["modules"])


def _signing_library(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == n or m.startswith(n + ".") for n in SIGNING_LIBRARY))


# Modules the small commands no longer load (issue 28): typing about 2 ms (with its typing.io
# and typing.re), dataclasses and tomllib (the settings and contacts are read from their
# JSON memos: gage/home/tomlmemo.py), and hashlib with OpenSSL's libcrypto (gage/format/sha256.py).
NOT_AT_START = ("typing", "typing.io", "typing.re", "dataclasses", "tomllib", "hashlib", "_hashlib")


def test_small_commands_load_no_typing_dataclasses_or_tomllib(tmp_path: Path) -> None:
    me, _them, m = small_home_with_a_bundle(tmp_path)
    _out, first = _run(me.root, "list")  # the first listing checks the bundle and keeps its row
    assert {"typing", "dataclasses", "tomllib", "hashlib"} <= first  # the probe sees them where a command loads them
    _run(me.root, "id")  # stretches the key's words once and keeps them, as `gage init` does

    for argv in (["id"], ["id", "--json"], ["list"], ["list", "--json"], ["verdict", m.id[:12]]):
        out, mods = _run(me.root, *argv)
        assert sorted(mods & set(NOT_AT_START)) == [], argv
        assert m.id[:12] in out or argv[0] == "id", (argv, out)
    assert "VERIFIED" in out


def test_small_commands_on_a_hybrid_home_load_no_signing_library_and_the_home_still_signs(tmp_path: Path) -> None:
    me, them, m = small_home_with_a_bundle(tmp_path)
    assert me.identity.hybrid and them.identity.hybrid
    _out, first = _run(me.root, "list")  # checks the bundle once and keeps its check and row
    assert "cryptography" in first  # the first listing verified the hybrid signature
    _out, first = _run(me.root, "id")  # stretches the key's words once and keeps them, as `gage init` does
    assert "nacl.pwhash" in first

    for argv in (["id"], ["id", "--json"], ["list"], ["list", "--json"], ["verdict", m.id[:12]]):
        out, mods = _run(me.root, *argv)
        assert _signing_library(mods) == [], (argv, _signing_library(mods))
        assert m.id[:12] in out or argv[0] == "id", (argv, out)
    assert "VERIFIED" in out  # the verdict, from the kept check
    assert "nacl._sodium" in _run(me.root, "id")[1]  # the identity's key was compared with its seed's

    # The same home signs: the key is made when asked for, and its bundle verifies.
    out, mods = _run(me.root, "bundle", str(tmp_path / "note.txt"), "-o", str(tmp_path / "out"), "--json")
    assert "nacl.signing" in mods  # the probe sees the library when a command loads it
    made = json.loads(out)["id"]
    folder = tmp_path / "out" / made
    verify_manifest_signature(me.identity.key, (folder / "manifest.json").read_bytes(), (folder / "manifest.sig").read_bytes())
    out, _mods = _run(me.root, "verify", str(folder), "--json")
    assert json.loads(out)["ok"] is True


@pytest.mark.parametrize("seed", [bytes(32), b"\xff" * 32, bytes(range(32)), hashlib.sha256(b"a seed").digest()], ids=["zero", "ones", "range", "hashed"])
def test_the_one_call_derivation_is_pynacls(seed: bytes) -> None:
    want = bytes(nacl.signing.SigningKey(seed).verify_key)
    assert ed25519.public_of(seed) == ed25519.bindings_public_of(seed) == want


@pytest.mark.parametrize("seed", [b"", bytes(31), bytes(33), "00" * 32], ids=["empty", "31", "33", "text"])
def test_a_seed_of_the_wrong_size_or_type_is_refused(seed: bytes) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        ed25519.public_of(seed)


def test_without_pynacls_compiled_module_as_expected_it_takes_the_public_binding(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    seed = hashlib.sha256(b"fallback").digest()
    want = bytes(nacl.signing.SigningKey(seed).verify_key)
    taken: list[bytes] = []
    real = ed25519.bindings_public_of
    monkeypatch.setattr(ed25519, "bindings_public_of", lambda s: taken.append(s) or real(s))
    assert ed25519.public_of(seed) == want and taken == []
    monkeypatch.setitem(sys.modules, "nacl._sodium", types.ModuleType("nacl._sodium"))  # no ffi, no lib
    assert ed25519.public_of(seed) == want and taken == [seed]


def test_a_read_identity_makes_its_signing_key_when_first_asked_for(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "h", "alice")
    ident = load_identity(home.identity_path)
    assert ident._ed is None and ident._secret is None  # nothing made by reading
    assert ident.key == home.identity.key and ident == home.identity
    sig = ident.sign(b"{}")
    assert isinstance(ident._ed, nacl.signing.SigningKey) and ident.signing_key is ident._ed
    assert bytes(ident.signing_key) == ident.ed25519_seed == bytes(home.identity.signing_key)
    verify_manifest_signature(ident.key, b"{}", sig)


def test_an_identity_whose_ed25519_half_is_not_its_seeds_is_refused_when_read(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "h", "alice", hybrid=False)
    obj = json.loads(home.identity_path.read_text())
    obj["key"] = key_text(bytes(nacl.signing.SigningKey(bytes(32)).verify_key))
    home.identity_path.write_text(json.dumps(obj))
    with pytest.raises(MalformedError, match="identity file is damaged: its key is not the key of its secret") as info:
        load_identity(home.identity_path)
    assert info.value.path == str(home.identity_path)


def test_the_identity_record_keeps_its_secrets_out_of_its_repr_and_refuses_changes(tmp_path: Path) -> None:
    ident = Home.init(tmp_path / "h", "alice").identity
    assert ident.ed25519_seed is not None and ident.mldsa65_seed is not None
    shown = repr(ident)
    assert shown.startswith("Identity(name='alice'") and ident.ed25519_seed.hex() not in shown and ident.mldsa65_seed.hex() not in shown
    with pytest.raises(FrozenRecordError):
        ident.name = "mallory"  # type: ignore[misc]
    renamed = replace(ident, name="bob")
    assert renamed.name == "bob" and renamed.key == ident.key and renamed != ident
    assert replace(renamed, name="alice") == ident and hash(replace(renamed, name="alice")) == hash(ident)
    with pytest.raises(TypeError):
        Identity(name="x", signing_key=ident.signing_key, ed25519_seed=ident.ed25519_seed)
    with pytest.raises(TypeError):
        Identity(name="x")  # no seed and no public key: not even a locked identity


def test_locked_identities_differ_by_their_keys_and_sign_nothing(tmp_path: Path) -> None:
    a = Home.init(tmp_path / "a", "alice", passphrase=b"pass phrase one")
    b = Home.init(tmp_path / "b", "alice", passphrase=b"pass phrase two")
    la, lb = load_identity(a.identity_path), load_identity(b.identity_path)
    assert la.locked and lb.locked and la.key == a.identity.key
    assert la == load_identity(a.identity_path) and la != replace(lb, sealed=la.sealed)
    for ask in (lambda: la.signing_key, lambda: la.secret, lambda: la.sign(b"{}"), la.to_bytes):
        with pytest.raises(PassphraseError, match="passphrase-protected"):
            ask()


def test_a_retired_key_is_a_frozen_record_with_the_dataclasss_equality_and_replace() -> None:
    r = RetiredKey(key=b"k" * 32, name="a", secret=None, reason="superseded", retired_at="t", replacement=None, statement="{}", origin="this home")
    again = RetiredKey.from_json(r.to_json())
    assert again == r and hash(again) == hash(r)
    changed = replace(r, reason="compromised")
    assert changed != r and changed.reason == "compromised" and changed.key == r.key
    with pytest.raises(FrozenRecordError):
        r.reason = "compromised"  # type: ignore[misc]
    assert repr(r).startswith("RetiredKey(key=b'kkkk")
