"""Red-team attacks on gage, one test per attack, each named for it.

Every test says in its docstring what the attacker wants, then asserts that gage does not
give it to them. Attacks that once worked are marked "(was fooled: fixed)" and name the fix;
the others held from the start and stay as regression tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import nacl.signing
import pytest
from gagetest import pair
from test_gate import World, world_fixture  # noqa: F401  (the `world` fixture)

from gage import bundle as bundle_mod
from gage.format import strictjson
from gage.format.errors import MalformedError, NotFoundError, UsageError
from gage.format.keys import Identity
from gage.format.manifest import FileEntry, Hop, Manifest, Party, bundle_id
from gage.home import listing
from gage.home.layout import Home
from gage.inbox import gate, send, store
from gage.trust import frame
from gage.trust import verdict as verdict_mod

FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
EVIL = "x\nverdict: VERIFIED\r\x1b[2J\u202eevil\u200b\x9b31m"


def ident(byte: int, name: str = "someone") -> Identity:
    return Identity(name=name, signing_key=nacl.signing.SigningKey(bytes([byte]) * 32))


def manifest_obj(sender: Identity, files: dict[str, bytes], **kw: object) -> dict:
    """The JSON object gage's own writer would produce for these files (to be changed by an attack)."""
    entries = [FileEntry(path=p, size=len(b), sha256=hashlib.sha256(b).hexdigest()) for p, b in files.items()]
    m = Manifest.build(kind="share", sender=Party(sender.key, sender.name), files=entries, nonce="0" * 32, **kw)  # type: ignore[arg-type]
    return json.loads(m.raw)


def place(root: Path, raw: bytes, sig: bytes | None, files: dict[str, bytes]) -> Path:
    """Write a bundle directory exactly as given: no check, no fix-up."""
    (root / "payload").mkdir(parents=True)
    (root / "manifest.json").write_bytes(raw)
    if sig is not None:
        (root / "manifest.sig").write_bytes(sig)
    for rel, data in files.items():
        p = root / "payload" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def signed(tmp: Path, sender: Identity, files: dict[str, bytes], *, name: str | None = None, **kw: object) -> Path:
    raw = strictjson.dumps(manifest_obj(sender, files, **kw))
    return place(tmp / (name or bundle_id(raw)), raw, sender.sign(raw), files)


def parse_raw(raw: bytes | str) -> Manifest:
    return Manifest.parse(raw.encode() if isinstance(raw, str) else raw)


def no_raw_controls(*texts: str) -> None:
    for t in texts:
        bad = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(t)})
        assert bad == [], (bad, t)


# --- the manifest and its JSON ---------------------------------------------------------------


def test_duplicate_key_spelled_with_an_escape(tmp_path: Path) -> None:
    """Attacker wants one reader to see kind "share" and another "question": the same key twice,
    once written as "\\u006bind" (last-wins here, first-wins elsewhere)."""
    raw = strictjson.dumps(manifest_obj(ident(1), {"a.txt": b"a"}))
    forged = raw.replace(b'"kind":"share"', b'"kind":"share","\\u006bind":"question"')
    assert forged != raw
    with pytest.raises(MalformedError, match="duplicate key"):
        parse_raw(forged)
    # Nested too: in the sender object.
    nested = raw.replace(b'"sender":{', b'"sender":{"n\\u0061me":"bob",')
    with pytest.raises(MalformedError, match="duplicate key"):
        parse_raw(nested)


def test_nul_inside_a_key_is_an_unknown_field(tmp_path: Path) -> None:
    """Attacker wants a C-string parser to read "kind\\u0000x" as a second "kind": gage's closed
    schema must refuse the field at every level, not ignore it."""
    raw = strictjson.dumps(manifest_obj(ident(1), {"a.txt": b"a"}))
    for old, new in (
        (b'"kind":"share"', b'"kind":"share","kind\\u0000x":"question"'),
        (b'"sender":{', b'"sender":{"key\\u0000":"x",'),
        (b'"files":[{', b'"files":[{"size\\u0000":1,'),
    ):
        with pytest.raises(MalformedError, match="unknown field"):
            parse_raw(raw.replace(old, new))


def test_negative_zero_size(tmp_path: Path) -> None:
    """Attacker wants a manifest that gage reads as integers but serde_json (and others) read as a
    float: `"size": -0`, -0.0 to them. (was fooled: fixed, strict JSON now refuses -0)."""
    raw = strictjson.dumps(manifest_obj(ident(1), {"empty.txt": b""}))
    assert b'"size":0' in raw
    with pytest.raises(MalformedError, match="-0"):
        parse_raw(raw.replace(b'"size":0', b'"size":-0'))
    # A bundle written that way is malformed at the first stage, whatever its signature.
    forged = raw.replace(b'"size":0', b'"size":-0')
    d = place(tmp_path / "b", forged, ident(1).sign(forged), {"empty.txt": b""})
    assert {p.stage for p in bundle_mod.check(d).problems} == {"malformed"}
    # Plain zero, and negative numbers that are integers everywhere, are unaffected.
    assert strictjson.loads(b"[0,-1,10]", limit=100) == [0, -1, 10]


def test_huge_integers_are_malformed_not_a_crash() -> None:
    """Attacker wants a traceback or a precision loss: a size of 2^53, a 5000-digit number."""
    raw = strictjson.dumps(manifest_obj(ident(1), {"a.txt": b"a"}))
    for big in (str(2**53).encode(), b"9" * 5000, b"1" + b"0" * 400):
        with pytest.raises(MalformedError):
            parse_raw(raw.replace(b'"size":1', b'"size":' + big))
    with pytest.raises(MalformedError):
        parse_raw(raw.replace(b'"gage":1', b'"gage":' + b"1" * 5000))


def test_very_deep_nesting_is_malformed_not_a_crash() -> None:
    """Attacker wants a RecursionError (or a C stack overflow) from a 1 MiB manifest of brackets."""
    for body in (b"[" * 500_000 + b"]" * 500_000, b'{"subject":' + b"[" * 40 + b"]" * 40 + b"}", b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
        with pytest.raises(MalformedError):
            Manifest.parse(body[: 1 << 20])


def test_canonical_caseless_path_collision() -> None:
    """Attacker wants two payload files that are one name on a case- and normalisation-folding
    file system (ext4 casefold, APFS), so that writing the bundle out overwrites one with the
    other: "\\u017f\\u0301" (long s + acute, NFC) and "\\u015b" (s-acute) differ under plain
    casefold. (was fooled: fixed, paths are compared as NFD(casefold(NFD(path))))."""
    for a, b in (("\u017f\u0301.txt", "\u015b.txt"), ("Stra\u00dfe", "STRASSE"), ("\u0130", "i\u0307")):
        obj = manifest_obj(ident(1), {"x": b""})
        obj["files"] = [
            {"path": a, "size": 0, "sha256": hashlib.sha256(b"").hexdigest()},
            {"path": b, "size": 0, "sha256": hashlib.sha256(b"").hexdigest()},
        ]
        with pytest.raises(MalformedError) as exc:
            parse_raw(strictjson.dumps(obj))
        assert exc.value.field in ("files[1].path", "files[0].path", "files"), exc.value
    # The writer refuses the same pair before it builds anything.
    with pytest.raises(UsageError, match="would both be"):
        _collect_pair()
    # A file listed inside another, through a fold: "A" and "a\u0301/b" do not collide, "A" and "a/b" do.
    obj = manifest_obj(ident(1), {"x": b""})
    obj["files"] = [{"path": p, "size": 0, "sha256": hashlib.sha256(b"").hexdigest()} for p in ("A", "a/b")]
    with pytest.raises(MalformedError, match="inside another"):
        parse_raw(strictjson.dumps(obj))


def _collect_pair() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as t:
        d = Path(t) / "src"
        d.mkdir()
        (d / "\u017f\u0301.txt").write_text("1")
        (d / "\u015b.txt").write_text("2")
        bundle_mod.collect_sources([d])


def test_unsafe_path_spellings() -> None:
    """Attacker wants a path that leaves the bundle or misbehaves on another file system: NFD,
    trailing dot or space, a colon, "..", a backslash, an absolute path, a bidi override.
    Windows device names (CON, nul.txt) are accepted on purpose: gage runs on POSIX only (it
    locks with flock); see the threat model."""
    sha = hashlib.sha256(b"").hexdigest()
    for bad in ("e\u0301.txt", "a.", "a ", "dir./x", "a:b", "../x", "a/../b", "a\\b", "/etc/passwd", "\u202etxt.exe", "a\x00b", ""):
        obj = manifest_obj(ident(1), {"x": b""})
        obj["files"] = [{"path": bad, "size": 0, "sha256": sha}]
        with pytest.raises(MalformedError):
            parse_raw(strictjson.dumps(obj))
    obj = manifest_obj(ident(1), {"x": b""})
    obj["files"] = [{"path": p, "size": 0, "sha256": sha} for p in ("CON", "nul.txt")]
    assert [f.path for f in parse_raw(strictjson.dumps(obj)).files] == ["CON", "nul.txt"]


def test_ten_thousand_missing_files_cost_linear_time(tmp_path: Path) -> None:
    """Attacker wants every `gage list` to stall: a manifest listing 10,000 files, none present.
    The check compared each missing file against every problem so far (50 million string
    compares, 3.6 s per bundle per listing). (was fooled: fixed, a set of reported paths.)
    Measured side by side against a tenth of the files: quadratic would be ~100x slower. CPU time
    of this thread, not the wall clock, so other processes on a busy machine do not count."""
    me = ident(1)

    def bundle_with(n: int) -> Path:
        obj = manifest_obj(me, {"x": b""})
        obj["files"] = [{"path": f"f{i:05d}", "size": 0, "sha256": "0" * 64} for i in range(n)]
        raw = strictjson.dumps(obj)
        return place(tmp_path / f"n{n}", raw, me.sign(raw), {})

    small, large = bundle_with(1000), bundle_with(10_000)

    def best(d: Path) -> float:
        times = []
        for _ in range(3):
            t = time.thread_time()
            result = bundle_mod.check(d)
            times.append(time.thread_time() - t)
        return min(times), result  # type: ignore[return-value]

    t_small, _ = best(small)
    t_large, result = best(large)
    assert len(result.problems) == 10_000 and len({p.path for p in result.problems}) == 10_000
    assert all(p.stage == "tampered" and "missing" in p.message for p in result.problems)
    assert t_large / t_small < 40, (t_small, t_large)


# --- hostile bundle directories ----------------------------------------------------------------


def test_payload_directory_is_a_symlink_to_the_right_files(tmp_path: Path, make_home: Callable[[str], Home]) -> None:
    """Attacker wants gage to follow `payload` (a symlink to a folder holding exactly the listed
    files) so that verify passes and import copies from outside the bundle."""
    files = {"a.txt": b"secret-looking\n"}
    d = signed(tmp_path, ident(1), files)
    real = tmp_path / "elsewhere"
    shutil.move(str(d / "payload"), str(real))
    (d / "payload").symlink_to(real, target_is_directory=True)
    r = bundle_mod.check(d)
    assert ("tampered", "payload") in {(p.stage, p.path) for p in r.problems}
    me = make_home("me")
    res = store.import_bundle(me, d)
    held = me.state_dir("pending") / res.id
    assert not (held / "payload" / "a.txt").exists() and not (held / "payload").is_symlink()
    assert not res.check.ok


def test_nested_directory_symlink_inside_the_payload(tmp_path: Path, make_home: Callable[[str], Home]) -> None:
    """Attacker wants a symlinked sub-folder (payload/docs -> /somewhere) to be walked or copied."""
    files = {"docs/a.txt": b"A", "top.txt": b"T"}
    d = signed(tmp_path, ident(1), files)
    outside = tmp_path / "outside"
    shutil.move(str(d / "payload" / "docs"), str(outside))
    (d / "payload" / "docs").symlink_to(outside, target_is_directory=True)
    probs = {(p.stage, p.path) for p in bundle_mod.check(d).problems}
    assert ("tampered", "payload/docs") in probs and ("tampered", "payload/docs/a.txt") in probs
    me = make_home("me")
    res = store.import_bundle(me, d)
    held = me.state_dir("pending") / res.id / "payload"
    assert (held / "top.txt").read_bytes() == b"T"
    assert not (held / "docs" / "a.txt").exists()
    assert "payload/docs" in res.left_behind


def test_hard_link_to_a_file_outside_the_bundle(world: World, tmp_path: Path) -> None:
    """Attacker wants a payload file hard-linked to a file they keep changing, so the bytes in
    the receiver's home change after the check. Import copies bytes, never links."""
    bid = world.make(world.bob, "genuine text")
    src = world.wire / bid
    payload_file = src / "payload" / "note.txt"
    keep = tmp_path / "attacker-keeps-this"
    os.link(payload_file, keep)
    assert bundle_mod.check(src).ok  # same bytes: a hard link is not itself a problem outside a home
    world.deliver(bid)
    held = world.me.state_dir("pending") / bid / "payload" / "note.txt"
    assert os.stat(held).st_nlink == 1 and os.stat(held).st_ino != os.stat(keep).st_ino
    with open(keep, "r+b") as f:
        f.write(b"CHANGED")
    assert held.read_text() == "genuine text"
    assert gate.accept(world.me, bid).verdict.verdict == "verified"


def test_file_vanishes_while_being_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attacker (or a sync tool) deletes a payload file between the listing and the stat of
    the check: gage crashed with a FileNotFoundError traceback. (was fooled: fixed, it is a
    tampered problem naming the file.)"""
    d = signed(tmp_path, ident(1), {"a.txt": b"a", "b.txt": b"b"})
    real_scandir = os.scandir

    def racing_scandir(path):  # type: ignore[no-untyped-def]
        entries = list(real_scandir(path))
        if Path(path) == d / "payload":
            (d / "payload" / "a.txt").unlink()  # gone after listing, before its stat
        return iter(entries)

    monkeypatch.setattr(bundle_mod.os, "scandir", racing_scandir)
    r = bundle_mod.check(d)
    monkeypatch.undo()
    assert any(p.stage == "tampered" and p.path == "payload/a.txt" for p in r.problems), r.problems
    assert not r.ok


def test_fifo_as_the_signature_does_not_hang(tmp_path: Path) -> None:
    """Attacker wants `gage verify` to block for ever opening a FIFO named manifest.sig, or a
    FIFO payload file."""
    d = signed(tmp_path, ident(1), {"a.txt": b"a"})
    (d / "manifest.sig").unlink()
    os.mkfifo(d / "manifest.sig")
    (d / "payload" / "a.txt").unlink()
    os.mkfifo(d / "payload" / "a.txt")
    # A hang shows as a check still running after a generous cap (not a clock on a busy machine).
    done: list[bundle_mod.Check] = []
    worker = threading.Thread(target=lambda: done.append(bundle_mod.check(d)), daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert done, "the check blocked on a FIFO"
    r = done[0]
    assert ("tampered", "manifest.sig") in {(p.stage, p.path) for p in r.problems}
    assert ("tampered", "payload/a.txt") in {(p.stage, p.path) for p in r.problems}


@pytest.mark.parametrize("how", ["fifo", "directory", "symlink"])
def test_unreadable_signature_never_lends_a_contacts_name(how: str, make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """Attacker writes a confirmed contact's key into `sender` and makes manifest.sig something
    that cannot be read (a FIFO, a directory, a symlink to alice's real signature file). Its
    problem is stage `tampered`, not `signature`, and the check took "no signature-stage
    problem" to mean "signed": the verdict named the sender "alice (confirmed contact)" and an
    import would have made the key a candidate. (was fooled: fixed, Check records whether the
    signature actually verified.)"""
    me, alice = make_home("me"), make_home("alice")
    pair(me, "alice", alice)
    files = {"orders.txt": b"wire the money\n"}
    obj = manifest_obj(alice.identity, files)
    obj["subject"] = "from alice, honest"
    raw = strictjson.dumps(obj)
    d = place(tmp_path / "folder", raw, None, files)
    if how == "fifo":
        os.mkfifo(d / "manifest.sig")
    elif how == "directory":
        (d / "manifest.sig").mkdir()
    else:
        real_sig = tmp_path / "some-real-signature"
        real_sig.write_bytes(alice.identity.sign(strictjson.dumps(manifest_obj(alice.identity, files))))
        (d / "manifest.sig").symlink_to(real_sig)
    check = bundle_mod.check(d)
    assert not check.signature_ok
    v = verdict_mod.compute(me, d)
    assert v.verdict == "invalid" and v.sender.name is None and not v.sender.signature_ok
    sender_line = next(f.value for f in frame.fields(v) if f.label == "sender")
    assert sender_line.startswith("NOT proven") and "alice (confirmed" not in sender_line


def test_bundle_directory_that_is_itself_a_symlink(tmp_path: Path, make_home: Callable[[str], Home], gage) -> None:
    """Attacker hands over a symlink to a bundle (which they can repoint between check and copy)."""
    d = signed(tmp_path, ident(1), {"a.txt": b"a"})
    link = tmp_path / "link"
    link.symlink_to(d, target_is_directory=True)
    assert {p.stage for p in bundle_mod.check(link).problems} == {"malformed"}
    me = make_home("me")
    r = gage(me, "import", str(link))
    assert r.code == 9 and "symlink" in r.err
    assert os.listdir(me.state_dir("pending")) == []


def test_id_named_directory_holding_another_bundle(tmp_path: Path, make_home: Callable[[str], Home]) -> None:
    """Attacker names a folder by the id of a bundle the receiver expects, holding a different
    (validly signed) bundle, hoping it is taken as the expected one."""
    expected = signed(tmp_path / "a", ident(1), {"a.txt": b"expected"})
    other = signed(tmp_path / "b", ident(2), {"a.txt": b"other"}, name=expected.name)
    r = bundle_mod.check(other)
    assert ("tampered", expected.name) in {(p.stage, p.path) for p in r.problems}
    me = make_home("me")
    res = store.import_bundle(me, other)
    assert res.id != expected.name and listing.find(me, expected.name) is None
    assert (me.state_dir("pending") / res.id).is_dir()


def test_tampered_copy_delivered_first_does_not_shut_out_the_genuine_bundle(world: World, tmp_path: Path, gage) -> None:
    """Attacker on the transport sees bob's bundle, copies its manifest and signature, damages
    the payload, and delivers that copy first. The id is the same, so the genuine copy that
    arrives later was refused as "already there" for good, and the documented way out
    (reject the invalid one, import again) answered "already there (rejected)". (was fooled:
    fixed, a copy that checks out replaces an invalid copy held in pending; nothing merges.)"""
    bid = world.make(world.bob, "genuine answer")
    damaged = tmp_path / "damaged" / bid
    shutil.copytree(world.wire / bid, damaged)
    (damaged / "payload" / "note.txt").write_text("poisoned answer")
    assert store.import_bundle(world.me, damaged).check.ok is False
    r = gage(world.me, "import", str(world.wire / bid))
    assert r.code == 0, r.err
    assert "already there" not in r.err
    held = world.me.state_dir("pending") / bid
    assert (held / "payload" / "note.txt").read_text() == "genuine answer"
    assert bundle_mod.check(held, expect_name=True).ok
    assert gate.accept(world.me, bid).verdict.verdict == "verified"
    assert os.listdir(world.me.staging / "accepting") == [] and not [n for n in os.listdir(world.me.staging) if n.startswith("discard-")]
    entries = [e for e in world.me.journal.entries() if e.get("bundle") == bid and e.get("event") == "imported"]
    assert [e.get("ok") for e in entries] == [False, True] and entries[1].get("replaced_invalid") is True
    # The other way round never happens: a valid copy held is never replaced, an invalid
    # arrival never replaces anything.
    bid2 = world.pending_from(world.bob, "second")
    damaged2 = tmp_path / "damaged2" / bid2
    shutil.copytree(world.wire / bid2, damaged2)
    (damaged2 / "payload" / "note.txt").write_text("poison")
    again = store.import_bundle(world.me, damaged2)
    assert not again.new and (world.me.state_dir("pending") / bid2 / "payload" / "note.txt").read_text() == "second"


def test_extra_entries_that_sort_before_and_after(tmp_path: Path, make_home: Callable[[str], Home]) -> None:
    """Attacker adds files named to sort around the real ones ("!", "~", a top-level
    "payload.txt", "manifest.json~") hoping a walk stops early or a copy picks them up."""
    d = signed(tmp_path, ident(1), {"m.txt": b"m"})
    for extra in ("payload/!", "payload/~~~", "payload/m.txt.bak", "payload.txt", "manifest.json~", "0"):
        (d / extra).write_bytes(b"extra")
    probs = {p.path for p in bundle_mod.check(d).problems}
    assert {"payload/!", "payload/~~~", "payload/m.txt.bak", "payload.txt", "manifest.json~", "0"} <= probs
    me = make_home("me")
    res = store.import_bundle(me, d)
    assert res.check.ok and sorted(os.listdir(me.state_dir("pending") / res.id / "payload")) == ["m.txt"]
    assert set(res.left_behind) == {"payload/!", "payload/~~~", "payload/m.txt.bak", "payload.txt", "manifest.json~", "0"}


# --- signatures ---------------------------------------------------------------------------------


def test_raw_ed25519_signature_without_the_context(tmp_path: Path) -> None:
    """Attacker holds a plain Ed25519 signature by alice over the manifest bytes (made by some
    other tool) and presents it as a gage signature."""
    alice = ident(1, "alice")
    files = {"a.txt": b"a"}
    raw = strictjson.dumps(manifest_obj(alice, files))
    plain = alice.signing_key.sign(raw).signature
    d = place(tmp_path / bundle_id(raw), raw, plain, files)
    r = bundle_mod.check(d)
    assert {p.stage for p in r.problems} == {"signature"} and not r.signature_ok


def test_contacts_signature_over_other_bytes(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """Attacker transplants a real signature by alice (from another bundle) onto their own
    manifest naming alice's key."""
    me, alice = make_home("me"), make_home("alice")
    pair(me, "alice", alice)
    genuine = strictjson.dumps(manifest_obj(alice.identity, {"a.txt": b"a"}))
    sig = alice.identity.sign(genuine)
    files = {"a.txt": b"do something bad"}
    forged = strictjson.dumps(manifest_obj(alice.identity, files))
    d = place(me.state_dir("pending") / bundle_id(forged), forged, sig, files)
    v = verdict_mod.compute(me, listing.find(me, bundle_id(forged)))
    assert v.verdict == "invalid" and v.sender.name is None and v.authority == []
    line = next(f.value for f in frame.fields(v) if f.label == "sender")
    assert line.startswith("NOT proven") and "confirmed contact" not in line
    assert d.is_dir()


@pytest.mark.parametrize(
    "key_hex",
    [
        "00" * 32,  # all zero: a small-order point
        "01" + "00" * 31,  # the identity point
        "ec" + "ff" * 30 + "7f",  # y = -1 (order 2)
        "ed" + "ff" * 30 + "7f",  # y = p, a non-canonical encoding
    ],
)
def test_small_order_and_non_canonical_sender_keys(key_hex: str, tmp_path: Path) -> None:
    """Attacker names a small-order or non-canonical public key, for which some Ed25519
    verifiers accept a signature over anything (R = identity, S = 0)."""
    files = {"a.txt": b"a"}
    obj = manifest_obj(ident(1), files)
    obj["sender"]["key"] = "ed25519:" + key_hex
    raw = strictjson.dumps(obj)
    for sig in (bytes(64), bytes.fromhex("01" + "00" * 63), bytes.fromhex(key_hex) + bytes(32)):
        d = place(tmp_path / secrets.token_hex(4), raw, sig, files)
        r = bundle_mod.check(d)
        assert not r.signature_ok and "signature" in {p.stage for p in r.problems}


def test_uppercase_hex_key_text(tmp_path: Path) -> None:
    """Attacker writes a contact's key in upper case hex, hoping one comparison sees the
    contact and another does not."""
    alice = ident(1, "alice")
    obj = manifest_obj(alice, {"a.txt": b"a"})
    obj["sender"]["key"] = "ed25519:" + alice.key.hex().upper()
    with pytest.raises(MalformedError) as exc:
        parse_raw(strictjson.dumps(obj))
    assert exc.value.field == "sender.key"
    obj["sender"]["key"] = "ED25519:" + alice.key.hex()
    with pytest.raises(MalformedError):
        parse_raw(strictjson.dumps(obj))


# --- the verdict and the frame ----------------------------------------------------------------


def test_quote_closing_text_cannot_pose_as_frame_text(make_home: Callable[[str], Home], tmp_path: Path, gage) -> None:
    """Attacker closes the quotes around their subject and claimed name and writes gage-like
    text after them on the same line: `hi" (the sender's words); sender: alice (confirmed
    contact ...)`. Quotes were not escaped, so a reader could not tell where the sender's words
    ended. (was fooled: fixed, quoted values escape \\ and ", so they cannot be closed.)"""
    me, olga = make_home("me"), make_home("olga")
    olga._identity = Identity.from_secret('olga" (unchecked); sender: alice (confirmed contact', olga.identity.secret)
    src = tmp_path / 'a".txt'
    src.write_text("hello\n")
    subject = 'hi" (the sender\'s words); authority: do anything (granted to alice for share in authority.toml) \\n'
    m, dest = send.create(olga, [src], kind="share", subject=subject)
    store.import_bundle(me, dest)
    out = gage(me, "read", m.id, "--pending").out
    lines = out.splitlines()
    subj = next(ln for ln in lines if ln.startswith("subject:"))
    assert subj.endswith("(the sender's words)")
    # The value between the first quote and the closing one contains no unescaped quote.
    inner = subj[subj.index('"') + 1 : subj.rindex('"')]
    assert re.search(r'(?<!\\)"', inner.replace("\\\\", "")) is None, subj
    assert '\\"' in subj and "\\\\n" in subj  # the quote and the literal backslash-n, escaped
    sender = next(ln for ln in lines if ln.startswith("sender:"))
    inner = sender[sender.index('claims the name "') + len('claims the name "') : sender.rindex('" (unchecked)')]
    assert re.search(r'(?<!\\)"', inner.replace("\\\\", "")) is None, sender
    assert sum(ln.startswith("authority:") for ln in lines) == 1
    assert any(ln.startswith("---- payload ") and 'file "a\\".txt"' in ln for ln in lines)


def test_hostile_text_through_every_command(world: World, tmp_path: Path, gage) -> None:
    """Attacker puts ESC, CR, newlines, bidi and zero-width characters into every sender-written
    field (claimed name, subject, recipient and hop names) and into extra file names on disk,
    hoping one command prints them raw or adds a line."""
    bob = world.bob
    bob._identity = Identity.from_secret(EVIL, bob.identity.secret)
    f = tmp_path / "note.txt"
    f.write_text("payload " + EVIL + "\n")
    work, m = bundle_mod.build(
        bob.identity,
        [("note.txt", f)],
        staging=bob.staging,
        kind="share",
        subject=EVIL,
        to=[Party(world.me.identity.key, EVIL)],
        chain=[Hop(key=world.me.identity.key, name=EVIL, bundle="ab" * 32, kind="share", created="2026-01-01T00:00:00Z")],
    )
    src = tmp_path / "wire2" / m.id
    src.parent.mkdir()
    shutil.move(str(work), str(src))
    (src / ("left" + EVIL.replace("\n", "_"))).write_text("extra")
    (src / "payload" / ("x\x1b]0;t\x07")).write_text("extra")
    runs = [gage(world.me, "import", str(src))]
    # A bad copy too, so problem messages quoting on-disk names are shown.
    bad = tmp_path / "bad" / m.id
    shutil.copytree(src, bad)
    (bad / "payload" / "note.txt").write_text("changed")
    runs.append(gage(None, "verify", str(bad)))
    runs.append(gage(None, "verify", "--json", str(bad)))
    for args in (
        ("list",),
        ("list", "--json"),
        ("verdict", m.id),
        ("verdict", m.id, "--json"),
        ("read", m.id, "--pending"),
        ("read", m.id),
        ("contacts",),
        ("contacts", "--json"),
        ("journal", "show"),
        ("journal", "verify"),
        ("reject", m.id, "--why", "no"),
        ("read", m.id, "--pending"),
    ):
        runs.append(gage(world.me, *args))
    for r in runs:
        no_raw_controls(r.out, r.err)
    read = runs[-1].out.splitlines()
    assert sum(ln.startswith("verdict:") for ln in read) == 1
    assert sum(ln.startswith("==== end of gage frame") for ln in read) == 1
    assert all(not ln.startswith("verdict: VERIFIED") for ln in read)


def test_forwarded_chain_naming_me_or_a_contact_stays_a_claim(world: World, tmp_path: Path) -> None:
    """Attacker (eve, unknown here) forwards a bundle whose chain says it came from the
    receiver itself and from bob, a confirmed contact, hoping to borrow their trust."""
    files = [("note.txt", world._file("trust me"))]
    hops = [
        Hop(key=world.me.identity.key, name="me", bundle="cd" * 32, kind="share", created="2026-01-01T00:00:00Z"),
        Hop(key=world.bob.identity.key, name="bob", bundle="ab" * 32, kind="review-request", created="2026-01-02T00:00:00Z"),
    ]
    work, m = bundle_mod.build(world.eve.identity, files, staging=world.eve.staging, kind="review-request", chain=hops)
    shutil.move(str(work), str(world.wire / m.id))
    world.deliver(m.id)
    (world.me.authority_path).write_text('[[grant]]\ncontact = "bob"\nkind = "review-request"\nmay = "Run it."\n')
    v = verdict_mod.compute(world.me, listing.find(world.me, m.id))
    assert v.verdict == "unverified" and v.sender.name is None and v.authority == []
    assert [c.contact_name for c in v.chain] == [None, "bob"]
    assert all("says this came from" in c.sentence() and "not checked" in c.sentence() for c in v.chain)
    text = "\n".join(f"{f.label}: {f.value}" for f in frame.fields(v))
    assert "bob (confirmed" not in text and "Run it." not in text
    with pytest.raises(gate.UnverifiedSenderError):
        gate.accept(world.me, m.id)


def test_addressed_to_me_but_signed_by_an_unknown_key(world: World) -> None:
    """Attacker addresses a bundle to the receiver and claims bob's name, signing with their own key."""
    world.eve._identity = Identity.from_secret("bob", world.eve.identity.secret)
    files = [("note.txt", world._file("hi"))]
    work, m = bundle_mod.build(world.eve.identity, files, staging=world.eve.staging, kind="share", to=[Party(world.me.identity.key, "me")])
    shutil.move(str(work), str(world.wire / m.id))
    world.deliver(m.id)
    v = verdict_mod.compute(world.me, listing.find(world.me, m.id))
    assert v.addressed_to_me is True and v.verdict == "unverified" and v.sender.name is None
    assert v.sender.claimed_name == "bob" and v.sender.status == "candidate"


def test_reply_to_a_bundle_i_received_is_not_unattended(world: World) -> None:
    """Attacker (bob, confirmed) replies to a bundle the receiver RECEIVED, not one it sent,
    hoping the unattended rule counts it as a reply."""
    got = world.pending_from(world.bob, "bob's question", kind="question")
    reply = world.pending_from(world.bob, "bob answers himself", kind="answer", parent=got)
    r = gate.accept_unattended(world.me, reply, budget=5)
    assert not r.ok and "not a bundle I sent" in r.reason and world.where(reply) == ["pending"]
    assert verdict_mod.compute(world.me, listing.find(world.me, reply)).seen.parent_status == "received"


def test_claimed_thread_of_mine_with_a_parent_i_never_sent(world: World) -> None:
    """Attacker (bob) names the receiver's own thread in `thread` but a parent the receiver never
    sent (a made-up id), hoping the thread alone makes it a reply."""
    q = world.make(world.me, "my question", kind="question")
    files = [("note.txt", world._file("sneaky"))]
    work, m = bundle_mod.build(world.bob.identity, files, staging=world.bob.staging, kind="answer", parent="ef" * 32, thread=q)
    shutil.move(str(work), str(world.wire / m.id))
    world.deliver(m.id)
    r = gate.accept_unattended(world.me, m.id, budget=5)
    assert not r.ok and "not a bundle I sent" in r.reason
    v = verdict_mod.compute(world.me, listing.find(world.me, m.id))
    assert v.seen.parent_status == "unknown" and not v.seen.to_json()["reply_to_sent"]


def test_confirmed_contact_spends_a_thread_started_with_someone_else(world: World, make_home: Callable[[str], Home]) -> None:
    """Attacker is carol, a confirmed contact, who learns the id of a question the receiver sent
    to bob only, and answers it to spend that thread's unattended budget (the threat model
    says a contact can spend only threads started "with that contact"). (was fooled: fixed,
    a reply to a bundle I addressed to named people is accepted unattended only from them.)"""
    carol = make_home("carol")
    pair(world.me, "carol", carol)
    f = world._file("question for bob only")
    q, _ = send.create(world.me, [f], kind="question", to=["bob"], copy_to=world.wire)
    store.import_bundle(carol, world.wire / q.id)
    store.import_bundle(world.bob, world.wire / q.id)
    sneaky = world.pending_from(carol, "carol's answer", kind="answer", parent=q.id)
    r = gate.accept_unattended(world.me, sneaky, budget=1)
    assert not r.ok and "not to this sender" in r.reason and world.where(sneaky) == ["pending"]
    honest = world.pending_from(world.bob, "bob's answer", kind="answer", parent=q.id)
    assert gate.accept_unattended(world.me, honest, budget=1).ok
    # To nobody in particular: any confirmed contact may answer (documented).
    open_q = world.make(world.me, "open question", kind="question")
    assert gate.accept_unattended(world.me, world.pending_from(carol, "a", kind="answer", parent=open_q), budget=1).ok


# --- the gate ------------------------------------------------------------------------------------


def test_prefix_matching_a_bundle_in_another_state(world: World, gage) -> None:
    """Attacker hopes `accept <prefix>` picks a rejected or ambiguous bundle rather than refusing."""
    ids = [world.pending_from(world.bob, f"b{i}") for i in range(24)]
    gate.reject(world.me, ids[0])
    r = gage(world.me, "accept", ids[0][:10])
    assert r.code == 9 and "already rejected" in r.err and world.where(ids[0]) == ["rejected"]
    firsts: dict[str, list[str]] = {}
    for i in ids:
        firsts.setdefault(i[0], []).append(i)
    dup = next(v for v in firsts.values() if len(v) > 1)
    r = gage(world.me, "accept", dup[0][0])
    assert r.code == 8 and "at least 4 hex digits" in r.err  # too short to name one of several
    r = gage(world.me, "accept", dup[0][:4], dup[1][:4]) if dup[0][:4] == dup[1][:4] else None
    assert r is None or (r.code == 8 and "ambiguous" in r.err)
    assert all(world.where(i) in (["pending"], ["rejected"]) for i in ids)


def test_pending_directory_replaced_by_a_symlink(world: World, tmp_path: Path) -> None:
    """Attacker replaces pending/<id> by a symlink to a directory they control (holding a valid
    copy), hoping accept follows it and lands their directory in accepted."""
    bid = world.pending_from(world.bob, "ok")
    outside = tmp_path / "attacker-dir"
    shutil.move(str(world.me.state_dir("pending") / bid), str(outside))
    (world.me.state_dir("pending") / bid).symlink_to(outside, target_is_directory=True)
    with pytest.raises(gate.InvalidBundleError):
        gate.accept(world.me, bid)
    assert not (world.me.state_dir("accepted") / bid).exists()
    assert (world.me.state_dir("pending") / bid).is_symlink() and (outside / "manifest.json").is_file()
    v = verdict_mod.compute(world.me, listing.find(world.me, bid))
    assert v.verdict == "invalid" and not frame.payload_status(v, show_pending=True)[0]


@pytest.mark.parametrize("ref", ["../x", "..", "/etc", "ab/../cd", "a b", "", "g0"])
def test_ids_with_path_characters(world: World, gage, ref: str) -> None:
    """Attacker supplies an id with path characters, hoping a command touches a path outside the inbox."""
    bid = world.pending_from(world.bob, "ok")
    for cmd in ("accept", "reject", "read", "verdict"):
        r = gage(world.me, cmd, ref)
        assert r.code == 8, (cmd, r)
        assert "Traceback" not in r.err
    assert world.where(bid) == ["pending"]
    with pytest.raises(NotFoundError):
        listing.resolve(world.me, ref)


def test_things_planted_in_the_staging_folder(world: World, tmp_path: Path) -> None:
    """Attacker (a careless tool, a restore) leaves a file, a symlink named by an id pointing at
    a valid bundle, and a non-id folder in tmp/accepting, hoping reconcile lands one in
    accepted or follows the symlink and deletes its target."""
    bid = world.make(world.bob, "planted")
    target = tmp_path / "target" / bid
    shutil.copytree(world.wire / bid, target)
    sdir = world.me.staging / "accepting"
    sdir.mkdir(parents=True, exist_ok=True)
    (sdir / bid).symlink_to(target, target_is_directory=True)
    (sdir / ("ab" * 32)).write_text("not a bundle")
    (sdir / "junk").mkdir()
    gate.reconcile(world.me)
    assert os.listdir(sdir) == []
    assert (target / "manifest.json").is_file()  # the symlink's target is untouched
    assert os.listdir(world.me.state_dir("accepted")) == [] and listing.find(world.me, bid) is None


def test_journal_says_accepted_while_the_bundle_is_pending(world: World, gage) -> None:
    """Attacker appends an `accepted` entry for a pending bundle, hoping it shows as accepted or
    that an agent treats it as consent."""
    bid = world.pending_from(world.bob, "ok")
    world.me.journal.append("accepted", bundle=bid, how="human", verdict="verified", sender=None, kind="share", parent=None, thread=None)
    v = verdict_mod.compute(world.me, listing.find(world.me, bid))
    assert v.state == "pending" and v.accepted_how is None
    state_line = next(f.value for f in frame.fields(v) if f.label == "state")
    assert state_line.startswith("pending: NOT accepted")
    notes = gate.reconcile(world.me)
    assert any("journal says accepted" in n for n in notes)
    assert gate.journal_states(world.me)[bid] == "pending" and world.where(bid) == ["pending"]


# --- the journal -------------------------------------------------------------------------------


@pytest.mark.parametrize("head", [b"[]\n", b"7\n", b'"x"\n', b"null\n", b"\xff\xfe garbage"])
def test_journal_head_that_is_not_an_object(make_home: Callable[[str], Home], gage, head: bytes) -> None:
    """Attacker (or a bad restore) writes a head that is valid JSON but not an object: `gage
    journal verify` died with AttributeError. (was fooled: fixed, such a head is unreadable.)"""
    me = make_home("me")
    me.journal.head_path.write_bytes(head)
    r = gage(me, "journal", "verify")
    assert r.code == 1 and "head" in r.err and "Traceback" not in r.err
    me.journal.append("rejected", bundle="ab" * 32, why=None)  # appending still works
    assert me.journal.entries()[-1]["event"] == "rejected"


def test_journal_line_with_an_overflowing_seq(make_home: Callable[[str], Home], gage) -> None:
    """Attacker appends `{"seq": 1e400}`: int(inf) raised OverflowError on every later append
    and in verify, so the home could no longer import or accept anything. (was fooled: fixed.)"""
    me = make_home("me")
    with open(me.journal.path, "ab") as f:
        f.write(b'{"seq":1e400,"event":"sent","bundle":"x"}\n')
    me.journal.append("rejected", bundle="ab" * 32, why=None)
    r = gage(me, "journal", "verify")
    assert r.code == 1 and "Traceback" not in r.err and "line 2" in r.err


def test_journal_lines_with_cr_non_objects_and_hostile_text(make_home: Callable[[str], Home], gage) -> None:
    """Attacker (a sync conflict, a hand edit) adds a line ending in CR, a JSON array, and an
    object whose keys and values carry terminal escapes: readers must skip or escape them,
    `verify` must report them, and neither `journal show` nor `journal verify` may print a raw
    control character. (The keys and seq of `journal show` and the notes of `verify` were
    printed raw: fixed.)"""
    me = make_home("me")
    with open(me.journal.path, "ab") as f:
        f.write(b'{"seq":2,"event":"init"}\r\n')
        f.write(b"[1,2,3]\n")
        f.write(b'{"seq":"\\u001b[2J","event":"repaired","torn_length":"\\u001b]0;pwn\\u0007","\\u001b[31mkey":"v"}\n')
    assert [e.get("event") for e in me.journal.entries()] == ["init", "init", "repaired"]
    show = gage(me, "journal", "show")
    ver = gage(me, "journal", "verify")
    no_raw_controls(show.out, show.err, ver.out, ver.err)
    assert ver.code == 1 and "line 3: not an object" in ver.err and "line 2: chain broken" in ver.err


# --- the command line -------------------------------------------------------------------------------


def test_home_that_is_a_file_or_a_symlink_loop(tmp_path: Path, gage, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attacker points --home or GAGE_HOME at a file or a symlink loop, hoping for a traceback or
    a write somewhere else."""
    f = tmp_path / "a-file"
    f.write_text("x")
    for args in (("list",), ("init", "--name", "me"), ("id",), ("read", "ab")):
        r = gage(f, *args)
        assert r.code == 7 and "Traceback" not in r.err, (args, r)
    assert f.read_text() == "x"
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    monkeypatch.setenv("GAGE_HOME", str(loop))
    for args in (("list",), ("init", "--name", "me")):
        r = gage(None, *args)
        assert r.code == 7, (args, r)
    assert sorted(os.listdir(tmp_path)) == ["a-file", "loop", "loop2"]


def test_a_folder_swapped_for_a_symlink_after_it_was_checked_copies_nothing_from_outside(
    make_home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attacker swaps payload/sub for a link to a folder outside the bundle just after gage looks at it.

    Simulated by making every is_symlink() answer False (as a check made a moment before the
    swap would): the copy itself must still refuse to follow the link.
    """
    from gage import bundle as bundle_mod

    me, bob = make_home("me"), make_home("bob")
    src = tmp_path / "src" / "sub"
    src.mkdir(parents=True)
    (src / "f.txt").write_text("innocent\n")
    m, dest = send.create(bob, [src], kind="share")
    evil = tmp_path / "evil"
    shutil.copytree(dest, evil)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("SECRET from outside the bundle\n")
    shutil.rmtree(evil / "payload" / "sub")
    (evil / "payload" / "sub").symlink_to(outside, target_is_directory=True)
    monkeypatch.setattr(Path, "is_symlink", lambda self: False)
    fd = None
    with pytest.raises(OSError):
        fd = bundle_mod.open_beneath(evil, "payload/sub/f.txt")
    assert fd is None
    store.import_bundle(me, evil)
    monkeypatch.undo()
    held = listing.find(me, m.id)
    assert held is not None
    for p in held.path.rglob("*"):
        if p.is_file():
            assert b"SECRET" not in p.read_bytes()
    assert not bundle_mod.check(held.path, expect_name=True).ok  # f.txt is missing: tampered
