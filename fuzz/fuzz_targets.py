"""Fuzz targets: one function per reader, each taking arbitrary bytes.

A target returns normally when gage did the right thing with the input (took it, or refused it
with a typed `GageError`) and raises anything else: a crash (an exception gage did not mean to
raise) or an `AssertionError` for a broken invariant. The same targets run under atheris
(coverage-guided, `fuzz/run.py`) and hypothesis (`tests/test_fuzz_*.py`, and `fuzz/run.py`
without atheris).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gage.format import strictjson
from gage.format.errors import MalformedError
from gage.format.keys import KEYFILE_LIMIT
from gage.format.keys.file import KeyFile
from gage.format.manifest import (
    MAX_COMPONENT,
    MAX_PATH,
    Manifest,
    check_path,
    fold_path,
)
from gage.home import listing
from gage.home.journal.verify import verify as verify_journal

# --- strict JSON ----------------------------------------------------------------------------


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _scalars_ok(value: Any) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            k.encode("utf-8")
            _scalars_ok(v)
    elif isinstance(value, list):
        for v in value:
            _scalars_ok(v)
    elif isinstance(value, str):
        value.encode("utf-8")  # no lone surrogate got through
    else:
        assert value is None or isinstance(value, bool) or isinstance(value, int), f"a {type(value).__name__} got through"
        if isinstance(value, int) and not isinstance(value, bool):
            assert abs(value) <= strictjson.MAX_INTEGER


def strict_json(data: bytes) -> None:
    try:
        value = strictjson.loads(data, limit=1 << 16, what="fuzz")
    except MalformedError:
        return
    # Accepted: what a lenient reader sees too, strict in every part, and written back the same.
    assert len(data) <= 1 << 16 and not data.startswith(b"\xef\xbb\xbf")
    assert json.loads(data.decode("utf-8")) == value
    assert _depth(value) <= strictjson.MAX_DEPTH
    _scalars_ok(value)
    again = strictjson.loads(strictjson.dumps(value), limit=1 << 20)
    assert again == value


# --- the manifest ---------------------------------------------------------------------------


def manifest(data: bytes) -> None:
    try:
        m = Manifest.parse(data)
    except MalformedError:
        return
    assert m.raw == data
    folded = [fold_path(f.path) for f in m.files]
    assert len(set(folded)) == len(folded), "two paths that fold together were accepted"
    names = set(folded)
    for key in folded:
        parts = key.split("/")
        for i in range(1, len(parts)):
            assert "/".join(parts[:i]) not in names, "a path below another listed path was accepted"
    for f in m.files:
        assert check_path(f.path, "x") == f.path
    # A reader accepts only what a writer can write: the same fields build a manifest again.
    again = Manifest.build(
        kind=m.kind,
        sender=m.sender,
        files=list(m.files),
        nonce=m.nonce,
        created=m.created,
        thread=m.thread,
        parent=m.parent,
        to=list(m.to),
        subject=m.subject,
        chain=list(m.chain),
    )
    assert (again.kind, again.sender, again.to, again.subject, again.chain) == (m.kind, m.sender, m.to, m.subject, m.chain)
    assert sorted(again.files, key=lambda f: f.path) == sorted(m.files, key=lambda f: f.path)


# --- paths and their fold -------------------------------------------------------------------


def _path_ok(p: str) -> None:
    raw = p.encode("utf-8")
    assert 0 < len(raw) <= MAX_PATH and "\\" not in p and not p.startswith("/") and not p.endswith("/")
    assert unicodedata.normalize("NFC", p) == p
    for part in p.split("/"):
        assert part not in ("", ".", "..") and len(part.encode("utf-8")) <= MAX_COMPONENT
        assert not part.endswith((" ", ".")) and ":" not in part
        assert all(ord(c) >= 0x20 and c != "\x7f" for c in part)


def path(data: bytes) -> None:
    """Two paths (split at the first NUL, which no path may hold): each checked, and their fold compared."""
    text = data.decode("utf-8", "replace")
    first, _, second = text.partition("\x00")
    accepted = []
    for p in (first, second):
        try:
            assert check_path(p, "files[0].path") == p
        except MalformedError:
            continue
        _path_ok(p)
        f = fold_path(p)
        assert fold_path(f) == f, "the fold of a plain path is not a fixed point"
        accepted.append(p)
    if len(accepted) == 2 and accepted[0] != accepted[1]:
        # The manifest's own list check must agree with the fold.
        from gage.format.manifest_files import parse_files as _files

        entries = [{"path": p, "size": 0, "sha256": "0" * 64} for p in accepted]
        clash = fold_path(accepted[0]) == fold_path(accepted[1])
        a, b = fold_path(accepted[0]), fold_path(accepted[1])
        nested = a.startswith(b + "/") or b.startswith(a + "/")
        try:
            _files(entries)
            assert not clash and not nested, f"{accepted!r} fold together or nest, yet both were accepted"
        except MalformedError:
            assert clash or nested, f"{accepted!r} were refused although they neither fold together nor nest"


# --- the key file ---------------------------------------------------------------------------


def key_file(data: bytes) -> None:
    try:
        kf = KeyFile.parse(data)
    except MalformedError:
        return
    assert len(data) <= KEYFILE_LIMIT
    obj = json.loads(data)
    assert obj["gage-key"] == 1 and obj["gage-key"] is not True and set(obj) <= {"gage-key", "key", "name"}
    assert KeyFile.parse(kf.to_bytes()) == kf


# --- homes on disk (journal, verdict) -------------------------------------------------------

_WORLD: dict[str, Any] = {}


def _world() -> dict[str, Any]:
    """Homes made once per process: me, bob (a confirmed contact of mine) and eve (a stranger)."""
    if _WORLD:
        return _WORLD
    from gage.format.words import derive
    from gage.home.layout import Home
    from gage.inbox import send
    from gage.trust import ceremony

    root = Path(tempfile.mkdtemp(prefix="gage-fuzz-"))
    atexit.register(shutil.rmtree, root, True)
    me, bob, eve = (Home.init(root / n, n) for n in ("me", "bob", "eve"))
    words = " ".join(" ".join(p) for p in derive(bob.identity.key))
    assert ceremony.confirm(me, "bob", bob.identity.key, words).confirmed
    src = root / "note.txt"
    src.write_bytes(b"the numbers for Q3\n")
    m, out = send.create(bob, [src], kind="share", subject="Q3")
    base = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    _WORLD.update(root=root, me=me, bob=bob, eve=eve, base=base, manifest=m, n=0)
    return _WORLD


class Bytes:
    """Choices drawn from fuzz bytes (0 when they run out), like atheris' FuzzedDataProvider."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def int(self, n: int) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1] % n if n else 0

    def take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def journal(data: bytes) -> None:
    """Whatever a journal file holds, readers never crash, and `verify` says whether it is sound."""
    from gage.home.journal.log import Journal
    from gage.trust.verdict import JournalFacts

    w = _world()
    d = Path(tempfile.mkdtemp(dir=w["root"]))
    try:
        import contextlib

        j = Journal(d / "journal.jsonl", contextlib.nullcontext)
        (d / "journal.jsonl").write_bytes(data)
        entries = j.entries()
        assert all(isinstance(e, dict) for e in entries)
        JournalFacts(entries)

        class _H:
            journal = j

        listing.decisions(_H())  # type: ignore[arg-type]
        report = verify_journal(j)
        if report.ok:
            assert data == b"" or data.endswith(b"\n")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def verdict(data: bytes) -> None:
    """A real bundle from a confirmed contact, changed as the bytes say: verified exactly when unchanged."""
    from gage.format.manifest import Manifest as M
    from gage.format.manifest import Party
    from gage.trust import verdict as verdict_mod

    w = _world()
    me, base = w["me"], w["base"]
    tree = dict(base)
    fz = Bytes(data)
    for _ in range(fz.int(4)):
        op = fz.int(6)
        name = sorted(tree)[fz.int(len(tree))] if tree else "manifest.json"
        if op == 0 and tree.get(name):  # change one byte
            b = bytearray(tree[name])
            i = fz.int(256) * len(b) // 256
            b[i] ^= 1 + fz.int(255)
            tree[name] = bytes(b)
        elif op == 1:  # cut or extend
            tree[name] = tree.get(name, b"")[: fz.int(80)] + fz.take(fz.int(4))
        elif op == 2:  # drop a file
            tree.pop(name, None)
        elif op == 3:  # an extra file
            tree[f"payload/x{fz.int(3)}"] = fz.take(2)
        elif op == 4:  # the same manifest claims bob, signed by eve
            tree["manifest.sig"] = w["eve"].identity.sign(tree.get("manifest.json", b""))
        elif op == 5:  # a new manifest naming bob's key, signed by eve
            m = w["manifest"]
            forged = M.build(kind=m.kind, sender=Party(w["bob"].identity.key, "bob"), files=list(m.files), nonce=fz.take(16).hex().ljust(32, "0"))
            tree["manifest.json"] = forged.raw
            tree["manifest.sig"] = w["eve"].identity.sign(forged.raw)
    w["n"] += 1
    d = w["root"] / f"case-{w['n']}"
    try:
        for rel, content in tree.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_bytes(content)
        (d / "payload").mkdir(parents=True, exist_ok=True)
        v = verdict_mod.compute(me, d)
        unchanged = tree == base
        assert (v.verdict == "verified") == unchanged, f"verdict {v.verdict} for a {'un' if unchanged else ''}changed bundle"
        if v.sender.name is not None:
            assert v.sender.signature_ok and v.sender.name == "bob"
        if v.verdict == "verified":
            assert v.sender.name == "bob" and not v.problems
        strictjson.loads(strictjson.dumps(v.to_json()), limit=1 << 24)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- the relay's readers (spec/relay.md): the envelope plaintext and the directory record ----------


def _relay_vectors() -> dict[str, Any]:
    spec = Path(__file__).resolve().parents[1] / "spec" / "vectors" / "relay.json"
    loaded: dict[str, Any] = json.loads(spec.read_text())
    return loaded


def envelope(data: bytes) -> None:
    """The envelope reader takes a whole bundle or refuses with a GageError, and writes nothing
    outside its scratch folder whatever the bytes."""
    from gage.carriers.relay import envelope as env
    from gage.format.errors import GageError

    d = Path(tempfile.mkdtemp(prefix="gage-fuzz-envelope-"))
    try:
        dest = d / "scratch" / "b"
        try:
            m = env.read_bytes(data, dest)
        except GageError:
            m = None
        outside = [p for p in d.rglob("*") if not (p == d / "scratch" or str(p).startswith(str(d / "scratch" / "b")))]
        assert not outside, outside
        if m is not None:
            assert (dest / "manifest.json").read_bytes() == m.raw  # never re-serialised
            for f in m.files:
                assert (dest / "payload" / f.path).stat().st_size == f.size
    finally:
        shutil.rmtree(d, ignore_errors=True)


def directory_record(data: bytes) -> None:
    """A record is valid (and then holds together), malformed, or refused: never anything else."""
    from gage.carriers.relay import dirrecord
    from gage.format.errors import MalformedError, RefusedError

    try:
        rec = dirrecord.parse(data, handle="bob")
    except (MalformedError, RefusedError):
        return
    assert rec.handle == "bob" and rec.binding.signing_key == rec.signing_key and rec.binding.verifies()


TARGETS: dict[str, Callable[[bytes], None]] = {
    "strict_json": strict_json,
    "manifest": manifest,
    "path": path,
    "key_file": key_file,
    "journal": journal,
    "verdict": verdict,
    "envelope": envelope,
    "directory_record": directory_record,
}


def seeds(name: str) -> list[bytes]:
    """Valid inputs to start from: the project's own vectors where it has them."""
    spec = Path(__file__).resolve().parents[1] / "spec" / "vectors"
    out: list[bytes] = []
    if name == "strict_json":
        out += [b'{"a":[1,2,{"b":null}],"c":"\\u00e9"}', b"[]", b"-1", b'"x"']
    if name == "manifest":
        out.append(_world()["base"]["manifest.json"])
    if name == "key_file":
        out.append(KeyFile(key=bytes(32), name="alice").to_bytes())
    if name == "path":
        out += [b"docs/notes.md\x00DOCS/Notes.md", "Stra\u00dfe\x00STRASSE".encode(), b"a\x00a/b"]
    if name == "journal":
        me = _world()["me"]
        out.append(me.journal.path.read_bytes())
    if name == "verdict":
        out += [b"", b"\x01\x00\x00\x00", b"\x01\x04"]
    if name in ("envelope", "directory_record"):
        import base64

        try:
            v = _relay_vectors()
            if name == "envelope":
                out.append(base64.b64decode(v["envelope"]["plaintext_b64"]))
                out += [base64.b64decode(r["plaintext_b64"]) for r in v["refused"]]
            else:
                out += [base64.b64decode(r["data_b64"]) for r in v["records"]]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if name == "strict_json":
        import base64

        try:
            cases = json.loads((spec / "strict-json.json").read_text())["cases"]
            out += [base64.b64decode(c["json_b64"]) for c in cases]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return out



def budget(default: int) -> int:
    """Examples per property test: `GAGE_FUZZ_EXAMPLES` overrides the modest default."""
    import os

    return int(os.environ.get("GAGE_FUZZ_EXAMPLES", default))
