"""Limits a receiver controls (issue 9; spec/settings.md): settings.toml `[limits]`, applied by
the one import path every carrier uses, before anything is written.

Each refusal is checked to leave the home as it was (pending, staging, journal), to name the
setting and the file to raise it in, and to exit 9 from the command line.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import pair

from gage.carriers.a2a import artifact
from gage.carriers.events import WatchEvent
from gage.carriers.watch import Watcher
from gage.format.errors import Exit, MalformedError
from gage.format.keys import short_fingerprint
from gage.format.manifest import FileEntry, Manifest, Party
from gage.home import listing, settings
from gage.home.layout import Home
from gage.home.settings import LimitError
from gage.inbox import gate, landmany, send, store
from gage.trust import limits


def set_limits(home: Home, **values: int) -> None:
    body = "[limits]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    settings.path_of(home).write_text(body)


def make_bundle(sender: Home, tmp: Path, files: dict[str, bytes] | None = None, subject: str = "hi") -> Path:
    files = files if files is not None else {"note.txt": b"hello\n"}
    src = tmp / f"src-{sender.identity.name}-{len(list(tmp.glob('src-*')))}"
    src.mkdir()
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    tops = sorted({f.split("/")[0] for f in files})
    _m, dest = send.create(sender, [src / t for t in tops], kind="share", subject=subject)
    return dest


def footprint(home: Home) -> tuple[object, ...]:
    listing = {s: sorted(os.listdir(home.state_dir(s))) for s in ("pending", "accepted", "rejected")}
    staging = sorted(os.listdir(home.staging)) if home.staging.exists() else []
    return listing, staging, len(home.journal.entries())


def refused(home: Home, src: Path, setting: str) -> LimitError:
    before = footprint(home)
    with pytest.raises(LimitError) as info:
        store.import_bundle(home, src)
    assert footprint(home) == before, "a refused import wrote something"
    exc = info.value
    assert exc.setting == f"limits.{setting}" and int(exc.exit_code) == 9
    assert f"limits.{setting}" in exc.message and str(settings.path_of(home)) in exc.message
    assert f"[limits] {setting} = " in exc.message and "nothing was imported" in exc.message
    return exc


# --- the settings file ----------------------------------------------------------------------


def test_defaults_without_a_file(make_home: Callable[[str], Home]) -> None:
    s = settings.load(make_home("me"))
    assert s.a2a_max_bytes == 64 << 20
    assert s.limits == settings.Limits()
    assert s.limits.max_files == 10_000 and s.limits.max_path_bytes == 1024
    assert s.limits.max_bundle_bytes == 4 << 30
    assert (s.limits.pending_per_key, s.limits.pending_bytes_per_key) == (100, 2 << 30)
    assert (s.limits.pending_unconfirmed, s.limits.pending_unconfirmed_bytes) == (1000, 8 << 30)


def test_limits_and_a2a_read_together(make_home: Callable[[str], Home]) -> None:
    home = make_home("me")
    settings.path_of(home).write_text("[a2a]\nmax_bytes = 2048\n\n[limits]\nmax_files = 3\npending_per_key = 0\n")
    s = settings.load(home)
    assert s.a2a_max_bytes == 2048 and s.limits.max_files == 3 and s.limits.pending_per_key == 0
    assert s.limits.max_path_bytes == 1024  # the rest keep their defaults


@pytest.mark.parametrize(
    ("text", "field", "says"),
    [
        ("[limits]\nmax_files = 10001\n", "limits.max_files", "from 0 to 10000"),
        ("[limits]\nmax_files = -1\n", "limits.max_files", "whole number"),
        ("[limits]\nmax_path_bytes = 0\n", "limits.max_path_bytes", "from 1 to 1024"),
        ("[limits]\nmax_bundle_bytes = 1023\n", "limits.max_bundle_bytes", "whole number"),
        ("[limits]\npending_per_key = true\n", "limits.pending_per_key", "whole number"),
        ("[limits]\npending_bytes_per_key = 1.5\n", "limits.pending_bytes_per_key", "whole number"),
        ('[limits]\npending_unconfirmed = "5"\n', "limits.pending_unconfirmed", "whole number"),
        ("[limits]\nmax_file = 3\n", "limits", "unknown setting 'max_file'"),
        ("limits = 3\n", "limits", "must be a table"),
        ("[a2a]\nmax_bytes = 10\n", "a2a.max_bytes", "1024"),
        ("[limit]\nmax_files = 3\n", None, "unknown section 'limit'"),
        ("[limits\n", None, "not valid TOML"),
    ],
)
def test_a_wrong_setting_names_the_file_and_the_setting(make_home: Callable[[str], Home], text: str, field: str | None, says: str) -> None:
    home = make_home("me")
    settings.path_of(home).write_text(text)
    with pytest.raises(MalformedError) as info:
        settings.load(home)
    assert info.value.path == str(settings.path_of(home)) and info.value.field == field
    assert says in info.value.message


def test_a_wrong_settings_file_stops_an_import_rather_than_fall_back(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    settings.path_of(me).write_text("[limits]\nmax_files = many\n")
    src = make_bundle(bob, tmp_path)
    before = footprint(me)
    with pytest.raises(MalformedError):
        store.import_bundle(me, src)
    assert footprint(me) == before


# --- limits of one bundle -------------------------------------------------------------------


def test_files_per_bundle(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    set_limits(me, max_files=2)
    ok = make_bundle(bob, tmp_path, {"a": b"1", "b": b"2"})
    assert store.import_bundle(me, ok).new  # at the limit: taken
    exc = refused(me, make_bundle(bob, tmp_path, {"a": b"1", "b": b"2", "c": b"3"}), "max_files")
    assert "lists 3 files" in exc.message and "max_files = 3" in exc.message


def test_path_length_in_bytes_not_characters(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    set_limits(me, max_path_bytes=12)
    assert store.import_bundle(me, make_bundle(bob, tmp_path, {"dir/abcd.txt": b"x"})).new  # 12 bytes
    # Six characters, twelve bytes plus the folder: over, although it is short in characters.
    exc = refused(me, make_bundle(bob, tmp_path, {"d/éééééé": b"x"}), "max_path_bytes")
    assert "path of 14 bytes (files[0].path)" in exc.message


def test_total_bytes_per_bundle_counts_declared_sizes(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    src = make_bundle(bob, tmp_path, {"big.bin": b"\0" * 5000})
    m = Manifest.parse((src / "manifest.json").read_bytes())
    total = limits.declared_bytes(m)
    assert total == len(m.raw) + len((src / "manifest.sig").read_bytes()) + 5000
    set_limits(me, max_bundle_bytes=total - 1)
    exc = refused(me, src, "max_bundle_bytes")
    assert f"holds {total} bytes" in exc.message
    set_limits(me, max_bundle_bytes=total)
    assert store.import_bundle(me, src).new


def test_a_sparse_claim_is_refused_before_the_copy(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """A manifest declaring a huge file is refused from the manifest alone: nothing is read or copied."""
    me, bob = make_home("me"), make_home("bob")
    src = tmp_path / "huge"
    (src / "payload").mkdir(parents=True)
    m = Manifest.build(kind="share", sender=Party(bob.identity.key, "bob"), files=[FileEntry("x.bin", 1 << 40, "0" * 64)], nonce="2" * 32)
    (src / "manifest.json").write_bytes(m.raw)
    (src / "manifest.sig").write_bytes(bob.identity.sign(m.raw))
    refused(me, src, "max_bundle_bytes")  # the payload file does not even exist


def test_limits_never_refuse_what_the_home_already_holds(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """A bundle held already is a replay (journaled `again`), not a new arrival to count."""
    me, bob = make_home("me"), make_home("bob")
    src = make_bundle(bob, tmp_path)
    assert store.import_bundle(me, src).new
    set_limits(me, pending_per_key=0, pending_unconfirmed=0)
    again = store.import_bundle(me, src)
    assert not again.new and again.state == "pending"


# --- pending per unconfirmed key ------------------------------------------------------------


def test_a_stranger_cannot_fill_pending(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, stranger, other = make_home("me"), make_home("stranger"), make_home("other")
    set_limits(me, pending_per_key=2)
    for _ in range(2):
        assert store.import_bundle(me, make_bundle(stranger, tmp_path)).new
    exc = refused(me, make_bundle(stranger, tmp_path), "pending_per_key")
    # A hybrid key is named by its fingerprint (its 3984 characters would bury the message).
    assert short_fingerprint(stranger.identity.key) in exc.message and "already has 2 bundles" in exc.message
    assert "gage pair" in exc.message and "pending_per_key = 3" in exc.message
    # Another key has its own count.
    assert store.import_bundle(me, make_bundle(other, tmp_path)).new
    # Deciding frees a place: a rejected bundle is no longer in pending.
    theirs = [s.id for s in listing.list_bundles(me, ("pending",)) if (m := s.manifest()) and m.sender.key == stranger.identity.key]
    gate.reject(me, theirs[0])
    assert store.import_bundle(me, make_bundle(stranger, tmp_path)).new
    assert _pending_by_sender(me) == {stranger.identity.key: 2, other.identity.key: 1}


def _pending_by_sender(home: Home) -> dict[bytes, int]:
    out: dict[bytes, int] = {}
    for s in listing.list_bundles(home, ("pending",)):
        m = s.manifest()
        assert m is not None
        out[m.sender.key] = out.get(m.sender.key, 0) + 1
    return out


def test_a_confirmed_contact_is_never_counted(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    set_limits(me, pending_per_key=0, pending_bytes_per_key=0, pending_unconfirmed=0, pending_unconfirmed_bytes=0)
    for _ in range(3):
        assert store.import_bundle(me, make_bundle(bob, tmp_path)).new


def test_naming_a_contacts_key_without_its_signature_is_still_counted(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """The key in a manifest is a claim: a forged bundle naming a contact's key counts as a stranger's."""
    me, bob, mallory = make_home("me"), make_home("bob"), make_home("mallory")
    pair(me, "bob", bob)
    set_limits(me, pending_unconfirmed=1)

    def forged(n: int) -> Path:
        src = tmp_path / f"forged-{n}"
        (src / "payload").mkdir(parents=True)
        (src / "payload" / "x.txt").write_bytes(b"x")
        from hashlib import sha256

        m = Manifest.build(
            kind="share", sender=Party(bob.identity.key, "bob"), files=[FileEntry("x.txt", 1, sha256(b"x").hexdigest())], nonce=f"{n:032x}"
        )
        (src / "manifest.json").write_bytes(m.raw)
        (src / "manifest.sig").write_bytes(mallory.identity.sign(m.raw))  # not bob's signature
        dest = tmp_path / "out" / m.id
        shutil.copytree(src, dest)
        return dest

    res = store.import_bundle(me, forged(1))
    assert res.new and res.check is not None and not res.check.ok  # arrives, invalid
    refused(me, forged(2), "pending_unconfirmed")
    # bob's own, signed, still comes in.
    assert store.import_bundle(me, make_bundle(bob, tmp_path)).new


def test_bytes_per_key(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, stranger = make_home("me"), make_home("stranger")
    first = make_bundle(stranger, tmp_path, {"a.bin": b"\1" * 3000})
    size = limits.declared_bytes(Manifest.parse((first / "manifest.json").read_bytes()))
    set_limits(me, pending_bytes_per_key=size + 1000)
    assert store.import_bundle(me, first).new
    exc = refused(me, make_bundle(stranger, tmp_path, {"b.bin": b"\2" * 3000}), "pending_bytes_per_key")
    assert f"has {size} bytes in pending" in exc.message


def test_keys_cost_nothing_so_strangers_together_are_capped(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """One fresh key per bundle gets round a per-key limit; the total over all unconfirmed keys does not."""
    me = make_home("me")
    set_limits(me, pending_unconfirmed=3)
    for i in range(3):
        assert store.import_bundle(me, make_bundle(make_home(f"s{i}"), tmp_path)).new
    exc = refused(me, make_bundle(make_home("s3"), tmp_path), "pending_unconfirmed")
    assert "already have 3 bundles" in exc.message


def test_unconfirmed_bytes_together(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, s1, s2 = make_home("me"), make_home("s1"), make_home("s2")
    a = make_bundle(s1, tmp_path, {"a.bin": b"\1" * 4000})
    size = limits.declared_bytes(Manifest.parse((a / "manifest.json").read_bytes()))
    set_limits(me, pending_unconfirmed_bytes=size + 100)
    assert store.import_bundle(me, a).new
    refused(me, make_bundle(s2, tmp_path, {"b.bin": b"\2" * 4000}), "pending_unconfirmed_bytes")


def test_a_race_between_two_imports_is_checked_again_under_the_lock(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before the copy can pass for two imports at once; the one under the lock stops the second."""
    me, stranger = make_home("me"), make_home("stranger")
    set_limits(me, pending_per_key=1)
    one, two = make_bundle(stranger, tmp_path), make_bundle(stranger, tmp_path)
    real_copy = landmany.bundle_mod.copy_bundle
    state = {"done": False}

    def copy_then_race(src, manifest, dest, **kw):  # type: ignore[no-untyped-def]
        left = real_copy(src, manifest, dest, **kw)
        if not state["done"]:
            state["done"] = True
            assert store.import_bundle(me, two).new  # lands while the first is between check and lock
        return left

    monkeypatch.setattr(landmany.bundle_mod, "copy_bundle", copy_then_race)
    before_journal = len(me.journal.entries())
    with pytest.raises(LimitError):
        store.import_bundle(me, one)
    assert sorted(os.listdir(me.state_dir("pending"))) == [two.name]
    assert len(me.journal.entries()) == before_journal + 1  # only the second's arrival
    assert os.listdir(me.staging) == []


# --- every carrier --------------------------------------------------------------------------


def test_cli_import_exits_9_and_names_the_limit(make_home: Callable[[str], Home], tmp_path: Path, gage) -> None:  # type: ignore[no-untyped-def]
    me, bob = make_home("me"), make_home("bob")
    set_limits(me, max_files=0)
    src = make_bundle(bob, tmp_path)
    run = gage(me, "import", str(src))
    assert run.code == Exit.REFUSED == 9
    assert "limits.max_files" in run.err and "settings.toml" in run.err and "[limits] max_files = 1" in run.err
    assert os.listdir(me.state_dir("pending")) == []


def test_the_watcher_reports_a_refusal_once_and_carries_on(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    set_limits(me, max_files=1)
    drop = tmp_path / "drop"
    drop.mkdir()
    big = make_bundle(bob, tmp_path, {"a": b"1", "b": b"2"})
    small = make_bundle(bob, tmp_path, {"a": b"3"})
    shutil.copytree(big, drop / "big")
    shutil.copytree(small, drop / "small")
    events: list[WatchEvent] = []
    w = Watcher(me, [drop], on_event=events.append, settle=0.1)
    w.scan()
    w.scan()
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1 and "limits.max_files" in errors[0].message and errors[0].path == drop / "big"
    assert [e.id for e in events if e.kind == "imported"] == [small.name]
    assert sorted(os.listdir(me.state_dir("pending"))) == [small.name]


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_a2a_import_applies_the_limits(make_home: Callable[[str], Home], tmp_path: Path, protocol: str) -> None:
    me, bob = make_home("me"), make_home("bob")
    set_limits(me, pending_per_key=1)
    first = artifact.export_artifact(make_bundle(bob, tmp_path), protocol=protocol)
    second = artifact.export_artifact(make_bundle(bob, tmp_path), protocol=protocol)
    assert artifact.receive(me, first)[0].new
    before = footprint(me)
    with pytest.raises(LimitError) as info:
        artifact.receive(me, second)
    assert info.value.setting == "limits.pending_per_key"
    listing, _staging, journal = footprint(me)
    assert (listing, journal) == (before[0], before[2])  # the scratch copy in tmp/ is gone too
    assert footprint(me)[1] == []


def test_a2a_serve_refuses_over_a_limit_and_says_which(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    from gage.carriers.a2a import client, server

    me, bob = make_home("me"), make_home("bob")
    set_limits(me, max_files=0)
    events: list[WatchEvent] = []
    srv = server.Server(me, host="127.0.0.1", port=0, on_event=events.append).start()
    try:
        with pytest.raises(client.A2ARefusedError) as info:
            client.send(bob, make_bundle(bob, tmp_path), srv.url)
    finally:
        srv.stop(timeout=5)
    assert info.value.exit_code == Exit.A2A_REFUSED
    assert "limits.max_files" in info.value.message and "[limits] max_files = 1" in info.value.message
    assert os.listdir(me.state_dir("pending")) == []
    assert any(e.kind == "error" and "limits.max_files" in e.message for e in events)


def test_a_bundle_no_setting_can_admit_says_so(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me, bob = make_home("me"), make_home("bob")
    src = tmp_path / "vast"
    (src / "payload").mkdir(parents=True)
    files = [FileEntry(f"f{i}", (1 << 53) - 1, "0" * 64) for i in range(200)]
    m = Manifest.build(kind="share", sender=Party(bob.identity.key, "bob"), files=files, nonce="3" * 32)
    (src / "manifest.json").write_bytes(m.raw)
    (src / "manifest.sig").write_bytes(bob.identity.sign(m.raw))
    before = footprint(me)
    with pytest.raises(LimitError) as info:
        store.import_bundle(me, src)
    assert footprint(me) == before
    assert "This home cannot take it" in info.value.message and f"goes up to {1 << 50}" in info.value.message


def test_an_a2a_task_with_one_bundle_over_a_limit_lands_none(make_home, tmp_path: Path) -> None:
    """Every bundle a task carries is checked before any is written."""
    from gage.carriers.a2a import artifact as art
    from gage.format.errors import RefusedError as Refused
    from gage.inbox import send as send_mod

    alice, bob = make_home("alice"), make_home("bob")
    (bob.root / "settings.toml").write_text("[limits]\nmax_files = 1\n")
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "a.txt").write_text("a")
    (two / "a.txt").write_text("a")
    (two / "b.txt").write_text("b")
    _m1, d1 = send_mod.create(alice, [one / "a.txt"], kind="share")
    _m2, d2 = send_mod.create(alice, [two / "a.txt", two / "b.txt"], kind="share")
    task = {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}, "artifacts": [art.export_artifact(d1), art.export_artifact(d2)]}
    lines = len(bob.journal.entries())
    with pytest.raises(Refused) as exc:
        art.receive(bob, task)
    assert "max_files" in str(exc.value)
    assert list(bob.state_dir("pending").iterdir()) == [] and len(bob.journal.entries()) == lines
    assert list(bob.staging.iterdir()) == []


def test_pending_held_in_memory_keeps_one_copy_of_each_senders_key(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """What a long fetch or a watcher holds for pending stays small: sums per sender, the sender's
    key (1,984 bytes for a hybrid one) held once, never an entry per bundle (10,000 bundles from
    one sender once held 20 MB of copies of one key, then 1.4 KB a bundle of entries)."""
    me, bob = make_home("me"), make_home("bob")
    srcs = [make_bundle(bob, tmp_path, {"a.txt": f"{i}\n".encode()}, subject=f"s{i}") for i in range(4)]
    landed = landmany.import_many(me, [landmany.Incoming(p) for p in srcs])
    assert all(not isinstance(r, Exception) and r.new for r in landed)
    pending = me.state_dir("pending")
    st = os.stat(pending)
    size = sum(limits.declared_bytes(store_manifest(pending / r.id)) for r in landed)  # type: ignore[union-attr]

    def held() -> list[tuple[bytes, bool, int, int]]:
        sums = limits._SUMS[(st.st_dev, st.st_ino)]
        assert sums.count == 4 and len(sums.digests) == 4 and sums.kinds[1:] == [(bob.identity.key, True)]
        return sums.counted()

    assert held() == [(bob.identity.key, True, 4, size)]  # as each was landed: one sum, the key once
    limits._SUMS.clear()  # as a new process reads pending from the disk
    limits.PendingTally(me, settings.load(me).limits)
    assert held() == [(bob.identity.key, True, 4, size)]


def store_manifest(path: Path) -> Manifest:
    from gage import bundle

    return bundle.read_manifest(path)[1]


def test_pending_is_read_again_only_when_it_changed_elsewhere(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sums kept for pending spare a batch reading every manifest the batches before it
    landed; a bundle decided, or a manifest changed in place, by anyone, is seen: pending is
    counted again as it is now, reading only what was not counted before."""
    me, stranger = make_home("me"), make_home("stranger")
    set_limits(me, pending_per_key=3)
    srcs = [make_bundle(stranger, tmp_path, {"a.txt": f"{i}\n".encode()}, subject=f"s{i}") for i in range(6)]
    landed = landmany.import_many(me, [landmany.Incoming(p) for p in srcs[:2]])
    assert all(not isinstance(r, Exception) and r.new for r in landed)
    reads: list[Path] = []
    real = limits._pending_facts

    def counted(path: Path) -> tuple[bytes, int, bool] | None:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(limits, "_pending_facts", counted)
    lims = settings.load(me).limits
    limits.PendingTally(me, lims)
    assert reads == []  # what the batch landed was added as it landed
    gate.reject(me, landed[0].id)  # type: ignore[union-attr]
    limits.PendingTally(me, lims)
    assert reads == []  # the one left was counted before
    # Counted as it is now: one in pending, so two more come in and a third is refused.
    got = landmany.import_many(me, [landmany.Incoming(p) for p in srcs[2:5]])
    assert [type(r).__name__ for r in got] == ["ImportResult", "ImportResult", "LimitError"]
    reads.clear()
    manifest = me.state_dir("pending") / landed[1].id / "manifest.json"  # type: ignore[union-attr]
    os.chmod(manifest, os.stat(manifest).st_mode)  # its ctime moves: the same bytes, read again to be sure
    limits.PendingTally(me, lims)
    assert reads == [manifest.parent]
    with pytest.raises(LimitError):
        limits.check_pending(me, store_manifest(srcs[5]), limits.signature_of(srcs[5]), lims)
