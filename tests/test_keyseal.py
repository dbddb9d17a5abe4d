"""The passphrase seal over identity.json (spec/keys.md section 11): the vector, and what a
protected identity refuses to do without its passphrase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gage.format.errors import MalformedError, PassphraseError
from gage.format.keys import seal as keyseal
from gage.home import unlock
from gage.home.identity import load_identity
from gage.home.layout import Home
from gage.inbox.opening import open_home

VECTOR = json.loads((Path(__file__).parent.parent / "spec" / "vectors" / "sealed-identity.json").read_text())


@pytest.fixture(autouse=True)
def cheap_seal(monkeypatch: pytest.MonkeyPatch) -> None:
    """New seals at libsodium's minimum cost, so the tests do not spend seconds in Argon2id."""
    monkeypatch.setattr(keyseal, "OPSLIMIT", 1)
    monkeypatch.setattr(keyseal, "MEMLIMIT", 8192)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "identity.json"
    p.write_text(text)
    p.chmod(0o600)
    return p


def test_the_vector_opens_with_its_passphrase_and_gives_the_plain_identity(tmp_path: Path) -> None:
    locked = load_identity(_write(tmp_path, VECTOR["file"]))
    assert locked.locked and locked.protected and locked.key_text == VECTOR["public_key"]
    assert locked.retired[0].secret is None  # no retired secret in the clear
    opened = locked.unlock(VECTOR["passphrase"].encode())
    plain = load_identity(_write(tmp_path, VECTOR["plain"]))
    assert bytes(opened.signing_key) == bytes(plain.signing_key)
    assert opened.retired == plain.retired and opened.retired[0].secret is not None
    assert opened.seal_key is not None and opened.seal_key.key.hex() == VECTOR["derived_key"]


def test_gage_seals_the_vector_to_the_same_bytes(tmp_path: Path) -> None:
    sealed = keyseal.Sealed.from_json(json.loads(VECTOR["file"])["sealed"])
    key = keyseal.derive(VECTOR["passphrase"].encode(), sealed.salt, opslimit=sealed.opslimit, memlimit=sealed.memlimit)
    assert keyseal.seal(VECTOR["plain"].encode(), key, nonce=sealed.nonce) == sealed
    assert keyseal.open_sealed(sealed, VECTOR["passphrase"].encode())[0] == VECTOR["plain"].encode()


def test_a_wrong_passphrase_is_its_own_error(tmp_path: Path) -> None:
    locked = load_identity(_write(tmp_path, VECTOR["file"]))
    with pytest.raises(PassphraseError, match="wrong passphrase"):
        locked.unlock(VECTOR["wrong"].encode())


def test_a_changed_box_is_refused_like_a_wrong_passphrase_and_a_bad_field_is_malformed(tmp_path: Path) -> None:
    obj = json.loads(VECTOR["file"])
    box = bytearray(keyseal.Sealed.from_json(obj["sealed"]).box)
    box[-1] ^= 1
    import base64

    obj["sealed"]["box"] = base64.b64encode(bytes(box)).decode()
    with pytest.raises(PassphraseError):
        load_identity(_write(tmp_path, json.dumps(obj))).unlock(VECTOR["passphrase"].encode())
    for field, value in (("memlimit", 1 << 40), ("opslimit", 0), ("kdf", "scrypt"), ("salt", "00")):
        bad = json.loads(VECTOR["file"])
        bad["sealed"][field] = value
        with pytest.raises(MalformedError, match=f"sealed|{field}"):
            load_identity(_write(tmp_path, json.dumps(bad)))


def test_a_file_with_both_a_seal_and_a_clear_secret_is_refused(tmp_path: Path) -> None:
    obj = json.loads(VECTOR["file"])
    obj["secret"] = "00" * 32
    with pytest.raises(MalformedError, match="in the clear"):
        load_identity(_write(tmp_path, json.dumps(obj)))


def test_a_locked_key_signs_nothing_and_the_home_still_knows_who_it_is(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "a", "alice", passphrase=b"pass phrase")
    text = home.identity_path.read_text()
    assert '"secret"' not in text and "sealed" in text
    again = open_home(home.root)
    ident = again.identity
    assert ident.locked and ident.owns(home.identity.key)
    with pytest.raises(PassphraseError):
        ident.sign(b"anything")
    with pytest.raises(PassphraseError):
        bytes(ident.signing_key)
    with pytest.raises(PassphraseError, match="passphrase-file"):
        unlock.signing_identity(again)  # no way to ask: a clear error, not a signature by another key
    asked: list[str] = []
    unlock.set_asker(again, lambda prompt: asked.append(prompt) or b"pass phrase")
    signer = unlock.signing_identity(again)
    assert not signer.locked and signer.key == ident.key
    assert unlock.signing_identity(again) is signer and len(asked) == 1  # asked once per process
    assert "alice" in asked[0]


def test_protect_and_unprotect_round_trip_and_a_seed_never_lands_in_the_clear(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "a", "alice")
    seed = bytes(home.identity.signing_key).hex()
    unlock.protect(home, b"first")
    assert seed not in home.identity_path.read_text()
    fresh = open_home(home.root)
    unlock.set_asker(fresh, lambda _p: b"first")
    unlock.protect(fresh, b"second")  # a change of passphrase: the old one opens it first
    other = open_home(home.root)
    unlock.set_asker(other, lambda _p: b"first")
    before = home.identity_path.read_bytes()
    with pytest.raises(PassphraseError):
        unlock.unprotect(other)
    assert home.identity_path.read_bytes() == before  # nothing written
    last = open_home(home.root)
    unlock.set_asker(last, lambda _p: b"second")
    unlock.unprotect(last)
    assert seed in home.identity_path.read_text()
    assert not open_home(home.root).identity.protected


def test_an_empty_passphrase_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    with pytest.raises(PassphraseError, match="empty"):
        Home.init(tmp_path / "a", "alice", passphrase=b"")
    assert not (tmp_path / "a").exists()


def test_the_vector_file_is_what_its_generator_writes() -> None:
    import subprocess
    import sys

    gen = Path(__file__).parent.parent / "spec" / "vectors" / "generate_sealed.py"
    assert subprocess.run([sys.executable, str(gen), "--check"], timeout=60).returncode == 0


def test_every_signing_path_asks_for_the_passphrase(tmp_path: Path) -> None:
    """send.create, forward, key statements (retire, escalate, countersign, publish): each reaches
    the secret only through unlock.signing_identity, so a locked home with no way to ask signs nothing."""
    from gagetest import arrive, pair

    from gage.format.keys.file import KeyFile
    from gage.inbox import ownkey, send

    me = Home.init(tmp_path / "me", "me", passphrase=b"pw")
    bob = Home.init(tmp_path / "bob", "bob")
    pair(me, "bob", bob)
    (tmp_path / "f.txt").write_text("f")
    m, dest = send.create(bob, [tmp_path / "f.txt"], kind="share")
    arrive(me, dest)
    other = Home.init(tmp_path / "new", "me")

    def locked() -> Home:
        return open_home(me.root)  # a fresh process's view: no asker, nothing unlocked

    attempts = {
        "bundle": lambda h: send.create(h, [tmp_path / "f.txt"], kind="share"),
        "forward": lambda h: send.forward(h, m.id, to=["bob"]),
        "retire": lambda h: ownkey.retire(h, reason="superseded", new=True),
        "retire elsewhere": lambda h: ownkey.retire(h, reason="superseded", replacement=KeyFile(other.identity.key, "me")),
    }
    for what, attempt in attempts.items():
        before = sorted(p.name for p in (me.root / "outbox").iterdir()), me.identity_path.read_bytes()
        with pytest.raises(PassphraseError):
            attempt(locked())
        after = sorted(p.name for p in (me.root / "outbox").iterdir()), me.identity_path.read_bytes()
        assert after == before, what
    # With the passphrase, retiring works; then escalating and publishing need it again.
    h = locked()
    unlock.set_asker(h, lambda _p: b"pw")
    done = ownkey.retire(h, reason="superseded", new=True)
    old = done.signed.statement.key.hex()
    for what, attempt in {
        "escalate": lambda h: ownkey.escalate(h, old),
        "publish": lambda h: ownkey.publish(h, old),
    }.items():
        with pytest.raises(PassphraseError):
            attempt(locked())
        assert what
    # Countersigning, in a protected home named as the replacement.
    newhome = Home.init(tmp_path / "n2", "me", passphrase=b"pw2")
    plain = Home.init(tmp_path / "p2", "me")
    st = ownkey.retire(plain, reason="superseded", replacement=KeyFile(newhome.identity.key, "me"))
    with pytest.raises(PassphraseError):
        ownkey.countersign(open_home(newhome.root), st.signed.to_bytes())
