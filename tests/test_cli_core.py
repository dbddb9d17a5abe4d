"""The foundation's commands as a user and a script see them: output, files written, exit codes.

Most tests run the CLI in-process (fast); a few run the real `gage` process, because the
exit code a shell sees is part of the contract (spec/cli.md).
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, pair, run_gage_process

from gage import bundle as bundle_mod
from gage.bundle import making as bundle_build
from gage.format import strictjson
from gage.format.errors import Exit
from gage.format.keys import key_shown, key_text, parse_key, short_fingerprint
from gage.format.keys.file import KeyFile
from gage.format.manifest import FileEntry, Manifest, is_id
from gage.format.words import derive
from gage.home import listing
from gage.home.identity import load_key_file
from gage.inbox import gate, send, store
from gage.inbox.opening import open_home

Gage = Callable[..., Run]
HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture
def alice(gage: Gage, tmp_path: Path) -> Path:
    root = tmp_path / "alice"
    r = gage(root, "init", "--name", "alice")
    assert r.code == 0, r.err
    return root


@pytest.fixture
def bob(gage: Gage, tmp_path: Path) -> Path:
    root = tmp_path / "bob"
    assert gage(root, "init", "--name", "bob").code == 0
    return root


def files(tmp_path: Path, spec: dict[str, str]) -> Path:
    base = tmp_path / "work"
    for rel, text in spec.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    return base


def make(gage: Gage, home: Path, *paths: Path, kind: str = "share", extra: tuple[str, ...] = ()) -> str:
    r = gage(home, "bundle", *map(str, paths), "--kind", kind, *extra)
    assert r.code == 0, r.err
    last = r.out.strip().splitlines()[-1]
    assert HEX64.match(last), r.out
    return last


# --- init, id, key export ---------------------------------------------------------------


def test_init_makes_the_home_with_a_private_identity(gage: Gage, tmp_path: Path) -> None:
    root = tmp_path / "h"
    r = gage(root, "init", "--name", "alice")
    assert r.code == 0
    ident = root / "identity.json"
    assert ident.stat().st_mode & 0o777 == 0o600
    assert root.stat().st_mode & 0o777 == 0o700
    for d in ("inbox/pending", "inbox/accepted", "inbox/rejected", "outbox"):
        assert (root / d).is_dir()
    home = open_home(root)
    assert key_shown(home.identity.key) in r.out  # a hybrid key by its fingerprint; the whole key in --json
    assert [e["event"] for e in home.journal.entries()] == ["init"]


def test_init_refuses_to_replace_an_identity(gage: Gage, alice: Path) -> None:
    ident = alice / "identity.json"
    before = ident.read_bytes()
    stat_before = ident.stat()
    for name in ("alice", "mallory"):
        r = gage(alice, "init", "--name", name)
        assert r.code == Exit.REFUSED == 9
        assert "already exists" in r.err and "identity" in r.err
    assert ident.read_bytes() == before
    assert ident.stat().st_mtime_ns == stat_before.st_mtime_ns
    assert ident.stat().st_mode & 0o777 == 0o600


def test_init_rejects_a_bad_name(gage: Gage, tmp_path: Path) -> None:
    r = gage(tmp_path / "h", "init", "--name", "bad\x1bname")
    assert r.code == Exit.USAGE
    assert not (tmp_path / "h/identity.json").exists()


def test_id_json_shape(gage: Gage, alice: Path) -> None:
    r = gage(alice, "id", "--json")
    assert r.code == 0
    obj = json.loads(r.out)
    assert set(obj) == {"name", "key", "fingerprint", "words"}
    assert obj["name"] == "alice"
    key = parse_key(obj["key"])
    assert obj["fingerprint"] == short_fingerprint(key)
    assert obj["key"] == open_home(alice).identity.key_text
    assert isinstance(obj["words"], list) and len(obj["words"]) == 4
    assert all(isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) for w in p) for p in obj["words"])
    assert obj["words"] == [list(p) for p in derive(key)]
    plain = gage(alice, "id")
    assert plain.code == 0 and "-".join(obj["words"][0]) in plain.out
    # A hybrid key's 3984 characters are named by its fingerprint, with where the whole key is (issue 18 polish).
    assert obj["key"] not in plain.out and short_fingerprint(key) in plain.out and "gage key export" in plain.out
    assert max(len(line) for line in plain.out.splitlines()) < 160


def test_id_without_a_home_says_to_init(gage: Gage, tmp_path: Path) -> None:
    r = gage(tmp_path / "nothing", "id")
    assert r.code == Exit.IO
    assert "gage init" in r.err


def test_key_export_round_trips(gage: Gage, alice: Path, tmp_path: Path) -> None:
    me = open_home(alice).identity
    r = gage(alice, "key", "export")
    assert r.code == 0
    kf = KeyFile.parse(r.out.encode())
    assert kf.key == me.key and kf.name == "alice"
    assert "secret" not in r.out and me.secret.seed_bytes.hex()[:64] not in r.out and me.secret.seed_bytes.hex()[64:] not in r.out
    out = tmp_path / "alice.gagekey"
    r = gage(alice, "key", "export", "-o", str(out))
    assert r.code == 0
    assert load_key_file(out) == kf
    assert out.read_bytes() == kf.to_bytes()


# --- bundle -------------------------------------------------------------------------------


def test_bundle_prints_id_last_records_sent_and_verifies(gage: Gage, alice: Path, tmp_path: Path) -> None:
    src = files(tmp_path, {"report.txt": "hello\n"})
    out_dir = tmp_path / "wire"
    bid = make(gage, alice, src / "report.txt", extra=("--subject", "the report", "-o", str(out_dir)))
    home = open_home(alice)
    stored = home.state_dir("outbox") / bid
    assert bundle_mod.check(stored, expect_name=True).ok
    sent = [e for e in home.journal.entries() if e["event"] == "sent"]
    assert len(sent) == 1 and sent[0]["bundle"] == bid and sent[0]["kind"] == "share"
    assert (out_dir / bid).is_dir()
    assert sorted(os.listdir(out_dir)) == [bid], "no temporary name left in the transport folder"
    r = gage(None, "verify", str(out_dir / bid))
    assert r.code == 0 and f"ok: {bid}" in r.out
    m = bundle_mod.read_manifest(stored)[1]
    assert m.subject == "the report" and m.sender.key == home.identity.key


def test_bundle_keeps_relative_paths_of_folders(gage: Gage, alice: Path, tmp_path: Path) -> None:
    src = files(tmp_path, {"proj/README": "r", "proj/src/main.py": "m", "proj/src/util/x.py": "x", "loose.txt": "l"})
    bid = make(gage, alice, src / "proj", src / "loose.txt")
    stored = open_home(alice).state_dir("outbox") / bid
    m = bundle_mod.read_manifest(stored)[1]
    assert [f.path for f in m.files] == ["loose.txt", "proj/README", "proj/src/main.py", "proj/src/util/x.py"]
    assert (stored / "payload/proj/src/util/x.py").read_text() == "x"


@pytest.mark.parametrize("what", ["symlink-file", "symlink-inside", "missing"])
def test_bundle_refuses_bad_sources(gage: Gage, alice: Path, tmp_path: Path, what: str) -> None:
    src = files(tmp_path, {"d/a.txt": "a", "target.txt": "t"})
    if what == "symlink-file":
        (src / "link.txt").symlink_to(src / "target.txt")
        arg = src / "link.txt"
    elif what == "symlink-inside":
        (src / "d/link.txt").symlink_to(src / "target.txt")
        arg = src / "d"
    else:
        arg = src / "nope"
    r = gage(alice, "bundle", str(arg), "--kind", "share")
    assert r.code == (Exit.IO if what == "missing" else Exit.USAGE)
    assert str(arg.name) in r.err or "symlink" in r.err
    assert os.listdir(alice / "outbox") == []
    assert os.listdir(alice / "tmp") == []


def test_answer_needs_a_parent(gage: Gage, alice: Path, tmp_path: Path) -> None:
    src = files(tmp_path, {"a.txt": "a"})
    r = gage(alice, "bundle", str(src / "a.txt"), "--kind", "answer")
    assert r.code == Exit.USAGE and "--parent" in r.err


def test_parent_by_unique_prefix(gage: Gage, alice: Path, tmp_path: Path) -> None:
    src = files(tmp_path, {"q.txt": "q", "a.txt": "a"})
    q = make(gage, alice, src / "q.txt", kind="question")
    a = make(gage, alice, src / "a.txt", kind="answer", extra=("--parent", q[:10].upper()))
    m = bundle_mod.read_manifest(alice / "outbox" / a)[1]
    assert m.parent == q and m.thread == q


def _ids_with_shared_first_digit(gage: Gage, home: Path, tmp_path: Path) -> tuple[list[str], str]:
    """Make bundles until two ids share a first hex digit (at most 17 by pigeonhole)."""
    by_digit: dict[str, list[str]] = {}
    for i in range(17):
        f = tmp_path / f"f{i}.txt"
        f.write_text(str(i))
        bid = make(gage, home, f)
        by_digit.setdefault(bid[0], []).append(bid)
        if len(by_digit[bid[0]]) == 2:
            return by_digit[bid[0]], bid[0]
    raise AssertionError("unreachable")


def test_ambiguous_and_unknown_prefixes(gage: Gage, alice: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pair, digit = _ids_with_shared_first_digit(gage, alice, tmp_path)
    src = files(tmp_path, {"a.txt": "a"})
    # Fewer than 4 hex digits are refused while more than one bundle is held (issue 18).
    r = gage(alice, "bundle", str(src / "a.txt"), "--kind", "answer", "--parent", digit)
    assert r.code == Exit.NOT_FOUND and "at least 4 hex digits" in r.err

    monkeypatch.setattr(listing, "MIN_PREFIX", 1)  # to reach the ambiguity a short prefix has
    r = gage(alice, "bundle", str(src / "a.txt"), "--kind", "answer", "--parent", digit)
    assert r.code == Exit.NOT_FOUND == 8
    assert "ambiguous" in r.err and pair[0][:12] in r.err and pair[1][:12] in r.err
    # A longer prefix that tells them apart resolves.
    n = next(i for i in range(1, 64) if pair[0][:i] != pair[1][:i])
    bid = make(gage, alice, src / "a.txt", kind="answer", extra=("--parent", pair[0][:n]))
    assert bundle_mod.read_manifest(alice / "outbox" / bid)[1].parent == pair[0]
    absent = pair[0][:-1] + ("0" if pair[0][-1] != "0" else "1")  # a full id no bundle here has
    assert absent not in os.listdir(alice / "outbox")
    for bad in (absent, "xyz"):
        r = gage(alice, "bundle", str(src / "a.txt"), "--kind", "answer", "--parent", bad)
        assert r.code == Exit.NOT_FOUND, (bad, r.err)


# --- verify --------------------------------------------------------------------------------


@pytest.fixture
def sent(gage: Gage, alice: Path, tmp_path: Path) -> Path:
    """A good bundle copied out of alice's outbox into a transport folder."""
    src = files(tmp_path, {"docs/a.txt": "alpha\n", "docs/b.txt": "beta\n"})
    bid = make(gage, alice, src / "docs", extra=("-o", str(tmp_path / "wire")))
    return tmp_path / "wire" / bid


def test_verify_good(gage: Gage, sent: Path) -> None:
    r = gage(None, "verify", str(sent))
    assert r.code == 0
    assert f"ok: {sent.name}" in r.out and "signature good" in r.out


def test_verify_not_a_bundle(gage: Gage, tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    r = gage(None, "verify", str(tmp_path / "photos"))
    assert r.code == Exit.MALFORMED == 3
    assert "not a gage bundle" in r.err and "manifest.json" in r.err


def test_verify_unknown_version(gage: Gage, alice: Path, sent: Path) -> None:
    obj = strictjson.loads((sent / "manifest.json").read_bytes(), limit=1 << 20)
    obj["gage"] = 2
    raw = strictjson.dumps(obj)
    (sent / "manifest.json").write_bytes(raw)
    (sent / "manifest.sig").write_bytes(open_home(alice).identity.sign(raw))
    r = gage(None, "verify", str(sent))
    assert r.code == Exit.MALFORMED
    assert "manifest.json" in r.err and "version" in r.err


def test_verify_tampered_names_the_file(gage: Gage, sent: Path) -> None:
    (sent / "payload/docs/b.txt").write_text("BETA\n")
    r = gage(None, "verify", str(sent))
    assert r.code == Exit.TAMPERED == 4
    assert "payload/docs/b.txt" in r.err and "tampered" in r.err


def test_verify_bad_signature_names_the_file(gage: Gage, sent: Path) -> None:
    sig = bytearray((sent / "manifest.sig").read_bytes())
    sig[10] ^= 1
    (sent / "manifest.sig").write_bytes(bytes(sig))
    r = gage(None, "verify", str(sent))
    assert r.code == Exit.BAD_SIGNATURE == 5
    assert "manifest.sig" in r.err


def test_verify_truncated_signature(gage: Gage, sent: Path) -> None:
    (sent / "manifest.sig").write_bytes((sent / "manifest.sig").read_bytes()[:31])
    r = gage(None, "verify", str(sent))
    assert r.code == Exit.BAD_SIGNATURE
    assert "31 bytes" in r.err


def test_verify_reports_every_problem_but_exits_by_the_first_stage(gage: Gage, sent: Path) -> None:
    sig = bytearray((sent / "manifest.sig").read_bytes())
    sig[0] ^= 1
    (sent / "manifest.sig").write_bytes(bytes(sig))
    (sent / "payload/docs/a.txt").write_text("changed")
    (sent / "payload/extra").write_text("x")
    r = gage(None, "verify", str(sent))
    assert r.code == Exit.BAD_SIGNATURE
    for name in ("manifest.sig", "payload/docs/a.txt", "payload/extra"):
        assert name in r.err


def test_verify_json(gage: Gage, sent: Path) -> None:
    r = gage(None, "verify", str(sent), "--json")
    assert r.code == 0
    obj = json.loads(r.out)
    signer = obj.pop("signer")  # who signed, named as every screen names a key (issue 27); no home here
    assert obj == {"path": str(sent), "id": sent.name, "ok": True, "problems": [], "warnings": []}
    m = Manifest.parse((sent / "manifest.json").read_bytes())
    assert signer == {
        "key": key_text(m.sender.key), "fingerprint": short_fingerprint(m.sender.key), "name": None,
        "claimed_name": m.sender.name, "signature_ok": True,
    }
    (sent / "payload/docs/a.txt").write_text("changed")
    r = gage(None, "verify", str(sent), "--json")
    assert r.code == Exit.TAMPERED
    obj = json.loads(r.out)
    assert obj["ok"] is False and obj["id"] == sent.name
    assert obj["problems"] == [
        {"stage": "tampered", "path": "payload/docs/a.txt", "field": None, "message": obj["problems"][0]["message"]}
    ]


def test_verify_json_name_warning(gage: Gage, sent: Path) -> None:
    renamed = sent.with_name("from-alice")
    sent.rename(renamed)
    r = gage(None, "verify", str(renamed), "--json")
    assert r.code == 0
    obj = json.loads(r.out)
    assert obj["ok"] is True and [w["stage"] for w in obj["warnings"]] == ["name"]


def test_verify_missing_directory(gage: Gage, tmp_path: Path) -> None:
    r = gage(None, "verify", str(tmp_path / "nope"))
    assert r.code == Exit.IO and "nope" in r.err


def test_exit_codes_of_the_real_process(sent: Path, tmp_path: Path) -> None:
    """What a shell script sees, through the installed entry point's module."""
    assert run_gage_process("verify", str(sent)).code == 0
    (tmp_path / "empty").mkdir()
    assert run_gage_process("verify", str(tmp_path / "empty")).code == 3
    (sent / "payload/docs/a.txt").write_text("changed")
    assert run_gage_process("verify", str(sent)).code == 4
    (sent / "manifest.sig").write_bytes(b"\x00" * 64)
    assert run_gage_process("verify", str(sent)).code == 5


# --- import ----------------------------------------------------------------------------------


def test_import_prints_the_id_and_lands_in_pending(gage: Gage, bob: Path, sent: Path) -> None:
    r = gage(bob, "import", str(sent))
    assert r.code == 0
    assert r.out.strip().splitlines()[-1] == sent.name
    assert "pending" in r.err
    assert os.listdir(bob / "inbox/pending") == [sent.name]
    assert os.listdir(bob / "inbox/accepted") == []
    r = gage(bob, "import", str(sent))
    assert r.code == 0 and "already there" in r.err
    assert os.listdir(bob / "inbox/pending") == [sent.name]


def test_import_not_a_bundle(gage: Gage, bob: Path, tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk/file").write_text("x")
    r = gage(bob, "import", str(tmp_path / "junk"))
    assert r.code == Exit.MALFORMED
    assert "not a gage bundle" in r.err and "junk" in r.err
    assert os.listdir(bob / "inbox/pending") == []


def test_import_io_failure_is_a_clear_error(gage: Gage, bob: Path, sent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(src: Path, dst: Path, *, fd: int | None = None, limit: int | None = None, sync: bool = True) -> FileEntry:
        if fd is not None:
            os.close(fd)
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(bundle_build, "_copy_hashing", broken)
    r = gage(bob, "import", str(sent))
    assert r.code == Exit.IO == 7
    assert "No space left" in r.err and "nothing was imported" in r.err
    assert os.listdir(bob / "inbox/pending") == [] and os.listdir(bob / "tmp") == []


def test_import_of_a_tampered_bundle_says_so(gage: Gage, bob: Path, sent: Path) -> None:
    (sent / "payload/docs/a.txt").write_text("changed")
    r = gage(bob, "import", str(sent))
    assert "does NOT verify" in r.err and "payload/docs/a.txt" in r.err
    assert os.listdir(bob / "inbox/pending") == [sent.name]


# --- list ---------------------------------------------------------------------------------------


def test_list_states_and_json(gage: Gage, alice: Path, bob: Path, tmp_path: Path) -> None:
    r = gage(bob, "list")
    assert r.code == 0 and "no bundles" in r.out
    src = files(tmp_path, {"a.txt": "a", "b.txt": "b"})
    from_alice = make(gage, alice, src / "a.txt", extra=("-o", str(tmp_path / "wire")))
    mine = make(gage, bob, src / "b.txt")
    assert gage(bob, "import", str(tmp_path / "wire" / from_alice)).code == 0

    rows = json.loads(gage(bob, "list", "--json").out)
    assert {(r["id"], r["state"]) for r in rows} == {(from_alice, "pending"), (mine, "outbox")}
    assert all(is_id(r["id"]) for r in rows)
    for state, expected in (("pending", [from_alice]), ("outbox", [mine]), ("accepted", []), ("rejected", [])):
        got = json.loads(gage(bob, "list", "--state", state, "--json").out)
        assert [r["id"] for r in got] == expected
        assert all(r["state"] == state for r in got)
    pending_row = next(r for r in rows if r["state"] == "pending")
    assert pending_row["sender"]["key"] == key_text(open_home(alice).identity.key)
    text = gage(bob, "list").out
    assert from_alice[:12] in text and mine[:12] in text
    only = gage(bob, "list", "--state", "outbox").out
    assert mine[:12] in only and from_alice[:12] not in only


def test_list_rejects_an_unknown_state(gage: Gage, bob: Path) -> None:
    with pytest.raises(SystemExit) as info:
        gage(bob, "list", "--state", "limbo")
    assert info.value.code == Exit.USAGE


# --- demo -----------------------------------------------------------------------------------------


def test_demo_makes_a_home_with_sample_bundles(gage: Gage, tmp_path: Path) -> None:
    r = gage(None, "demo", "--no-tui", "--dir", str(tmp_path / "demo"))
    assert r.code == 0
    root = Path(r.out.strip().splitlines()[-1])
    assert (root / "identity.json").exists()
    rows = json.loads(gage(root, "list", "--state", "pending", "--json").out)
    assert len(rows) >= 3
    verdicts = {r["verdict"] for r in rows}
    assert "invalid" in verdicts and "verified" in verdicts


# --- several paths, hostile names in errors, how a bundle was accepted --------------------


def test_import_reports_each_bad_path_and_still_imports_the_rest(gage: Gage, alice: Path, bob: Path, tmp_path: Path) -> None:
    src = files(tmp_path, {"a.txt": "a"})
    bid = make(gage, bob, src / "a.txt")
    not_a_bundle = tmp_path / "plain"
    not_a_bundle.mkdir()
    r = gage(alice, "import", str(not_a_bundle), str(bob / "outbox" / bid), str(tmp_path / "missing"))
    assert r.code == int(Exit.MALFORMED)
    assert "plain: is not a gage bundle" in r.err
    assert "missing: does not exist" in r.err
    assert r.out.strip().splitlines() == [bid]
    assert (alice / "inbox" / "pending" / bid).is_dir()


def test_error_messages_show_hostile_names_escaped(gage: Gage, alice: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "evil\x1b]0;pwned\x07\x1b[2J"
    hostile.mkdir()
    r = gage(alice, "import", str(hostile))
    assert r.code == int(Exit.MALFORMED)
    assert "\x1b" not in r.err and "\x07" not in r.err
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in r.err


def test_list_marks_an_unattended_accept(gage: Gage, alice: Path, bob: Path, tmp_path: Path) -> None:
    """Issue 4: an unattended accept is shown as such wherever the bundle is shown."""
    me, other = open_home(alice), open_home(bob)
    pair(me, "bob", other)
    pair(other, "alice", me)
    q = files(tmp_path, {"q.txt": "question"}) / "q.txt"
    qm, _ = send.create(me, [q], kind="question", to=["bob"], copy_to=tmp_path / "wire")
    store.import_bundle(other, tmp_path / "wire" / qm.id)
    a = tmp_path / "a.txt"
    a.write_text("answer")
    am, _ = send.create(other, [a], kind="answer", parent=qm.id, copy_to=tmp_path / "wire")
    store.import_bundle(me, tmp_path / "wire" / am.id)
    assert gate.accept_unattended(me, am.id, budget=1).ok
    r = gage(alice, "list", "--state", "accepted")
    assert "[accepted UNATTENDED]" in r.out and am.id[:12] in r.out
    [row] = json.loads(gage(alice, "list", "--state", "accepted", "--json").out)
    assert row["accepted_how"] == "unattended"


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    from gage import __version__
    from gage.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"gage {__version__}"
