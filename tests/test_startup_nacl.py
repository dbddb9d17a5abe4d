"""Start-up: a small command that signs, checks and shows no key (`gage list`, `gage verdict`)
loads none of PyNaCl's bindings and no `cryptography`; the identity's Ed25519 signing key is made
when something signs or the key is shown (`gage id`), and that is where the identity's key is held
to its seed: no path signs with, shows or gives a key that is not its seed's. Nor do the small
commands load `dataclasses` or `tomllib`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nacl.signing
import pytest
from gagetest import small_home_with_a_bundle

from gage.format.errors import MalformedError, PassphraseError
from gage.format.keys import (
    Identity,
    RetiredKey,
    key_text,
    short_fingerprint,
    verify_manifest_signature,
)
from gage.format.record import FrozenRecordError, replace
from gage.home.identity import load_identity
from gage.home.layout import Home

# What `import nacl.signing` (or any public PyNaCl module) brings: every libsodium binding, 8 to
# 11 ms; and the ML-DSA-65 library.
SIGNING_LIBRARY = ("nacl", "cryptography")

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


# Modules the small commands do not load: dataclasses (records instead: docs/architecture.md, the
# start path) and tomllib (contacts and authority are read from their kept parses in the row
# index's file: gage/home/cache/tomlparsed.py).
NOT_AT_START = ("dataclasses", "tomllib")


def test_small_commands_load_no_dataclasses_or_tomllib(tmp_path: Path) -> None:
    me, _them, m = small_home_with_a_bundle(tmp_path)
    _out, first = _run(me.root, "verify", str(tmp_path / "wire" / m.id))
    assert "dataclasses" in first  # the probe sees it where a command loads it
    _run(me.root, "id")  # stretches the key's words once and keeps them, as `gage init` does

    for argv in (["id"], ["id", "--json"], ["list"], ["list", "--json"], ["verdict", m.id[:12]]):
        out, mods = _run(me.root, *argv)
        assert sorted(mods & set(NOT_AT_START)) == [], argv
        assert m.id[:12] in out or argv[0] == "id", (argv, out)
    assert "VERIFIED" in out


def test_small_commands_on_a_hybrid_home_load_no_signing_library_and_the_home_still_signs(tmp_path: Path) -> None:
    me, them, m = small_home_with_a_bundle(tmp_path)
    assert me.identity.hybrid and them.identity.hybrid
    _out, first = _run(me.root, "verify", str(tmp_path / "wire" / m.id))
    assert "cryptography" in first  # the probe sees it where a hybrid signature is checked
    _out, first = _run(me.root, "id")  # stretches the key's words once and keeps them, as `gage init` does
    assert "nacl.pwhash" in first

    for argv in (["list"], ["list", "--json"], ["verdict", m.id[:12]]):
        out, mods = _run(me.root, *argv)
        assert _signing_library(mods) == [], (argv, _signing_library(mods))
        assert m.id[:12] in out, (argv, out)
    assert "VERIFIED" in out  # the verdict, from the kept check
    for argv in (["id"], ["id", "--json"]):
        out, mods = _run(me.root, *argv)
        # The key shown is held to its seed (the Ed25519 half, by making the signing key); the
        # ML-DSA-65 half waits for something to sign.
        assert "nacl.signing" in mods and "cryptography" not in mods, argv
        assert me.identity.key_text[:40] in out or short_fingerprint(me.identity.key) in out, (argv, out)

    # The same home signs: the key is made when asked for, and its bundle verifies.
    out, mods = _run(me.root, "bundle", str(tmp_path / "note.txt"), "-o", str(tmp_path / "out"), "--json")
    assert "nacl.signing" in mods  # the probe sees the library when a command loads it
    made = json.loads(out)["id"]
    folder = tmp_path / "out" / made
    verify_manifest_signature(me.identity.key, (folder / "manifest.json").read_bytes(), (folder / "manifest.sig").read_bytes())
    out, _mods = _run(me.root, "verify", str(folder), "--json")
    assert json.loads(out)["ok"] is True


def test_a_read_identity_makes_its_signing_key_when_first_asked_for(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "h", "alice")
    ident = load_identity(home.identity_path)
    assert ident._ed is None and ident._secret is None  # nothing made by reading
    assert ident.key == home.identity.key and ident == home.identity
    sig = ident.sign(b"{}")
    assert isinstance(ident._ed, nacl.signing.SigningKey) and ident.signing_key is ident._ed
    assert bytes(ident.signing_key) == ident.ed25519_seed == bytes(home.identity.signing_key)
    verify_manifest_signature(ident.key, b"{}", sig)


def _with_another_ed25519_half(home: Home) -> bytes:
    """Rewrite `home`'s identity file to name a key whose Ed25519 half is not its seed's; that key."""
    obj = json.loads(home.identity_path.read_text())
    other = bytes(nacl.signing.SigningKey(bytes(32)).verify_key)
    claimed = other + home.identity.key[32:]  # a hybrid key keeps its ML-DSA-65 half
    obj["key"] = key_text(claimed)
    home.identity_path.write_text(json.dumps(obj))
    return claimed


@pytest.mark.parametrize("hybrid", [False, True], ids=["classical", "hybrid"])
def test_an_identity_whose_ed25519_half_is_not_its_seeds_is_refused_when_it_signs_or_is_shown(tmp_path: Path, hybrid: bool) -> None:
    home = Home.init(tmp_path / "h", "alice", hybrid=hybrid)
    claimed = _with_another_ed25519_half(home)
    ident = load_identity(home.identity_path)  # read, not yet held to its seed
    assert ident.named_key == claimed and ident.owns(claimed) and ident.hybrid == hybrid
    damaged = "identity file is damaged: its key is not the key of its secret"
    for use in (lambda: ident.key, lambda: ident.key_text, lambda: ident.signing_key, lambda: ident.secret, lambda: ident.sign(b"{}"), ident.to_bytes):
        with pytest.raises(MalformedError, match=damaged):
            use()
    assert ident._ed is None and ident._secret is None  # nothing was kept to sign with


@pytest.mark.parametrize("argv", [["id"], ["id", "--json"], ["key", "export"], ["bundle", "NOTE", "-o", "OUT"]])
def test_no_command_shows_or_signs_with_a_key_that_is_not_its_seeds(tmp_path: Path, argv: list[str]) -> None:
    home = Home.init(tmp_path / "h", "alice", hybrid=False)
    claimed = _with_another_ed25519_half(home)
    (tmp_path / "note.txt").write_text("a note\n")
    argv = [str(tmp_path / "note.txt") if a == "NOTE" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    res = subprocess.run([sys.executable, "-m", "gage", *argv], capture_output=True, text=True, timeout=120, env={**os.environ, "GAGE_HOME": str(home.root)})
    assert res.returncode != 0, res.stdout
    said = res.stdout if "--json" in argv else res.stderr  # a JSON error is printed as the output
    assert "identity file is damaged" in said and "Traceback" not in res.stderr, res.stderr
    assert key_text(claimed) not in res.stdout and short_fingerprint(claimed) not in res.stdout
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


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


def test_the_interface_does_not_open_on_an_identity_whose_key_is_not_its_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import gage.tui.app
    from gage.cli.main import main

    home = Home.init(tmp_path / "h", "alice", hybrid=False)
    _with_another_ed25519_half(home)
    opened: list[object] = []
    monkeypatch.setattr(gage.tui.app, "run", lambda h, **_kw: opened.append(h) or 0)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["--home", str(home.root), "tui"]) == 3
    assert opened == [] and "identity file is damaged" in capsys.readouterr().err
    (tmp_path / "ok").mkdir()
    good = Home.init(tmp_path / "ok" / "h", "bob", hybrid=False)
    assert main(["--home", str(good.root), "tui"]) == 0 and len(opened) == 1
