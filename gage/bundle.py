"""Bundles on disk: making them, and checking any directory that claims to be one.

Checking never trusts the directory: it opens nothing through a symlink, streams every
payload file through SHA-256 (memory stays flat whatever the file size), and reports
every problem it finds, each with the stage that caught it and the file it concerns.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import atomic, progress
from .errors import (
    BadSignatureError,
    GageError,
    GageIOError,
    MalformedError,
    TamperedError,
    UsageError,
)
from .keys import SIGNATURE_LEN, Identity, verify_manifest_signature
from .manifest import (
    MANIFEST_LIMIT,
    FileEntry,
    Hop,
    Manifest,
    Party,
    check_path,
    fold_path,
    is_id,
)
from .sanitize import json_text

MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"
PAYLOAD = "payload"
CHUNK = 1 << 20
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: opening a FIFO without it blocks until a writer appears, so a hostile folder
# could hang a check for ever. On a regular file it changes nothing; on anything else the
# fstat that follows every open refuses it.
_O_SAFE = os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)

# The order in which stages are checked; the first failing stage decides the exit code.
STAGE_ORDER = ("malformed", "signature", "tampered")
# Entries that are not part of the bundle (files the manifest does not list, and the folders
# holding them) cost a hostile sender one write each, and whoever walks them a stat each:
# one check or copy looks at no more than EXTRAS_LOOKED_AT of them (more is a problem of its
# own), and names at most NAMED_EXTRAS_LIMIT one by one, counting the rest in one line.
EXTRAS_LOOKED_AT = 10_000
NAMED_EXTRAS_LIMIT = 100


@dataclass
class Problem:
    stage: str
    path: str | None
    message: str
    field: str | None = None

    def to_json(self) -> dict[str, str | None]:
        # A name read from disk that is not UTF-8 holds lone surrogates, which no strict JSON
        # reader (gage's own included) accepts: each such byte is U+FFFD here (spec/cli.md).
        return {
            "stage": self.stage,
            "path": json_text(self.path) if self.path is not None else None,
            "field": self.field,
            "message": json_text(self.message),
        }

    def __str__(self) -> str:
        where = self.path or ""
        if self.field:
            where = f"{where}: field {self.field}" if where else f"field {self.field}"
        return f"{where}: {self.message}" if where else self.message

    def to_error(self) -> GageError:
        cls = {"malformed": MalformedError, "signature": BadSignatureError, "tampered": TamperedError, "io": GageIOError}.get(
            self.stage, GageError
        )
        return cls(self.message, path=self.path, field=self.field)

    @classmethod
    def of(cls, err: GageError) -> Problem:
        return cls(stage=err.stage, path=err.path, message=err.message, field=err.field)


@dataclass
class Check:
    """What a directory turned out to be. `manifest` is None when it could not be parsed."""

    path: Path
    manifest: Manifest | None = None
    signature: bytes | None = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    # True only once the signature has been checked and verified. A manifest.sig that
    # cannot be read safely (a symlink, a FIFO, a directory) is a `tampered` problem, not
    # a `signature` one, yet proves nothing: the stages alone cannot say it verified.
    signature_verified: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def id(self) -> str | None:
        return self.manifest.id if self.manifest else None

    @property
    def signature_ok(self) -> bool:
        return self.manifest is not None and self.signature_verified

    def first_error(self) -> GageError | None:
        for stage in STAGE_ORDER:
            for p in self.problems:
                if p.stage == stage:
                    return p.to_error()
        return self.problems[0].to_error() if self.problems else None

    def to_json(self) -> dict[str, object]:
        return {
            "path": json_text(str(self.path)),
            "id": self.id,
            "ok": self.ok,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [p.to_json() for p in self.warnings],
        }


def _read_small(path: Path, limit: int) -> bytes:
    """Read a regular file without following a symlink, refusing anything over `limit`."""
    fd = os.open(path, _O_SAFE)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TamperedError("is not a regular file", path=path.name)
        if st.st_size > limit:
            raise MalformedError(f"is {st.st_size} bytes, over the limit of {limit}", path=path.name)
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(CHUNK, remaining))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise MalformedError(f"is over the limit of {limit} bytes", path=path.name)
        return data
    finally:
        os.close(fd)


def hash_file(path: Path, *, limit: int | None = None) -> tuple[int, str]:
    """Stream a regular file (never through a symlink) and return its size and SHA-256.

    `limit`: read no more than `limit` + 1 bytes (enough to tell the file is longer), so a
    file that grows while it is read, or reads past its size, costs no more than that.
    """
    fd = os.open(path, _O_SAFE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TamperedError("is not a regular file")
        h = hashlib.sha256()
        size = 0
        while limit is None or size <= limit:
            chunk = os.read(fd, CHUNK if limit is None else min(CHUNK, limit + 1 - size))
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
            progress.advance(len(chunk))
        return size, h.hexdigest()
    finally:
        os.close(fd)


def _entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    """The entries of `directory`, one at a time (a folder may hold millions)."""
    it = os.scandir(directory)
    try:
        yield from it
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def _top_extras(root: Path, budget: list[int]) -> tuple[list[os.DirEntry[str]], bool]:
    """The entries of a bundle folder other than the manifest, the signature and `payload`
    (at most `budget[0]` of them, which they use up), and whether there were more.
    Raises OSError if the folder cannot be listed."""
    found: list[os.DirEntry[str]] = []
    for e in _entries(root):
        if e.name in (MANIFEST, SIGNATURE, PAYLOAD):
            continue
        if budget[0] <= 0:
            return sorted(found, key=lambda e: e.name), True
        budget[0] -= 1
        found.append(e)
    return sorted(found, key=lambda e: e.name), False


@dataclass
class _Found:
    """One thing a walk of `payload` found. `kind`: `listed` (a path the manifest lists, with
    its lstat), `extra` (anything else that is not a folder: a file, a symlink, a device),
    `vanished` (could not be looked at: `error`), `unlistable` (a folder that cannot be
    listed), `more` (the walk stopped looking for extras in `rel` and after it)."""

    kind: str
    rel: str
    st: os.stat_result | None = None
    error: OSError | None = None


def _walk_payload(payload: Path, layout: dict[str, tuple[set[str], set[str]]], budget: list[int]) -> Iterator[_Found]:
    """Walk `payload` without recursion: every listed path (looked up by name), and every
    other entry until `budget[0]` of them have been looked at.

    Folders on the way to a listed file are always entered. Other folders are walked only
    for what is in them (an empty one is no problem) and only while the budget lasts; once
    it is spent, one `more` is yielded, nothing else is listed, and only listed paths are
    still looked up. So the cost is bounded by the manifest plus the budget, however deep
    or wide a tree a sender leaves there. A path that is not listed is never opened.
    """
    stack: list[tuple[str, bool]] = [("", True)]  # (prefix, on the way to a listed file)
    spent = False
    while stack:
        prefix, on_way = stack.pop()
        if spent and not on_way:
            continue
        directory = payload / prefix if prefix else payload
        files, dirs = layout.get(prefix, (set(), set())) if on_way else (set(), set())
        found: list[_Found] = []
        below: list[tuple[str, bool]] = []
        # Listed names first, by name: the listing below may stop early.
        for name in sorted(files | dirs):
            rel = prefix + name
            try:
                st = os.lstat(directory / name)
            except FileNotFoundError:
                continue  # missing: reported once the walk is done
            except OSError as exc:
                found.append(_Found("vanished", rel, error=exc))
                continue
            if name in files:
                found.append(_Found("listed", rel, st))
            elif stat.S_ISDIR(st.st_mode):
                below.append((rel + "/", True))
            else:
                found.append(_Found("extra", rel, st))  # a file, symlink or device where a folder should be
        others: list[os.DirEntry[str]] = []
        stopped = False
        if not spent:
            try:
                for e in _entries(directory):
                    if e.name in files or e.name in dirs:
                        continue
                    if budget[0] <= 0:
                        stopped = True
                        break
                    budget[0] -= 1
                    others.append(e)
            except OSError as exc:
                found.append(_Found("unlistable", prefix, error=exc))
        for e in sorted(others, key=lambda e: e.name):
            rel = prefix + e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as exc:
                found.append(_Found("vanished", rel, error=exc))
                continue
            if stat.S_ISDIR(st.st_mode):
                below.append((rel + "/", False))
            else:
                found.append(_Found("extra", rel, st))
        if stopped:
            spent = True
            found.append(_Found("more", prefix))
        yield from found
        stack.extend(reversed(below))


def _layout(manifest: Manifest) -> dict[str, tuple[set[str], set[str]]]:
    """Every folder on the way to a listed file ("" is `payload` itself, "a/b/" a folder below
    it), with the names of the listed files and of the folders directly inside it. A walk
    that enters only these folders is bounded by the manifest, not by what is on disk."""
    out: dict[str, tuple[set[str], set[str]]] = {"": (set(), set())}
    for f in manifest.files:
        parts = f.path.split("/")
        prefix = ""
        for part in parts[:-1]:
            out[prefix][1].add(part)
            prefix = f"{prefix}{part}/"
            out.setdefault(prefix, (set(), set()))
        out[prefix][0].add(parts[-1])
    return out


def read_manifest(root: Path) -> tuple[bytes, Manifest]:
    """Read and parse just the manifest: enough to know the id and what is claimed."""
    mpath = root / MANIFEST
    if not root.is_dir() or root.is_symlink():
        raise MalformedError("is not a directory", path=str(root))
    if not (mpath.exists() or mpath.is_symlink()):
        raise MalformedError("is not a gage bundle: it has no manifest.json", path=str(root))
    try:
        raw = _read_small(mpath, MANIFEST_LIMIT)
    except OSError as exc:
        if mpath.is_symlink():
            raise TamperedError("is a symlink", path=MANIFEST) from exc
        raise GageIOError(f"cannot read: {exc.strerror}", path=MANIFEST) from exc
    return raw, Manifest.parse(raw)


def read_signature(root: Path) -> tuple[bytes | None, Problem | None]:
    """`manifest.sig` as both a check and an import read it, so both give the same stage.

    Absent, or a regular file over its cap (256 bytes): stage `signature`, since neither
    can be a 64-byte signature however large it is. A symlink (never followed), FIFO,
    device, socket or directory: stage `tampered`.
    """
    try:
        return _read_small(root / SIGNATURE, SIGNATURE_LEN * 4), None
    except FileNotFoundError:
        return None, Problem("signature", SIGNATURE, "is missing")
    except MalformedError as exc:
        # Too big to be read is still a signature of the wrong length: the signature stage.
        return None, Problem("signature", SIGNATURE, f"{exc.message}; a signature is {SIGNATURE_LEN} bytes")
    except GageError as exc:
        return None, Problem(exc.stage, SIGNATURE, exc.message, exc.field)
    except OSError as exc:
        return None, Problem("tampered", SIGNATURE, f"cannot be read safely ({exc.strerror})")


def check(root: Path, *, expect_name: bool = False) -> Check:
    """Check structure, signature and integrity of the directory `root`.

    `expect_name`: the directory lives in a gage home, where it must be named by its id.
    """
    result = Check(path=root)
    try:
        raw, manifest = read_manifest(root)
    except GageError as exc:
        if exc.path is None:
            exc.path = MANIFEST
        result.problems.append(Problem.of(exc))
        return result
    result.manifest = manifest

    # Signature.
    sig, problem = read_signature(root)
    if problem is not None:
        result.problems.append(problem)
    else:
        assert sig is not None
        result.signature = sig
        try:
            verify_manifest_signature(manifest.sender.key, raw, sig)
            result.signature_verified = True
        except GageError as exc:
            if exc.path is None:
                exc.path = SIGNATURE
            result.problems.append(Problem.of(exc))

    # The directory name.
    if root.name != manifest.id:
        if expect_name or is_id(root.name):
            result.problems.append(
                Problem("tampered", root.name, f"directory name does not match the bundle id {manifest.id}")
            )
        else:
            result.warnings.append(Problem("name", root.name, f"directory is not named by its id {manifest.id}"))

    with progress.phase("checking", manifest.total_size):
        _check_payload(root, manifest, result)
    return result


def _check_payload(root: Path, manifest: Manifest, result: Check) -> None:
    expected = {f.path: f for f in manifest.files}
    seen: set[str] = set()
    budget = [EXTRAS_LOOKED_AT]
    named = 0
    unnamed = 0

    def extra(path: str, message: str) -> None:
        # Entries that are not part of the bundle: named one by one up to a limit, then counted.
        nonlocal named, unnamed
        if named < NAMED_EXTRAS_LIMIT:
            named += 1
            result.problems.append(Problem("tampered", path, message))
        else:
            unnamed += 1

    # Top level: only the manifest, the signature and the payload folder.
    try:
        top, more = _top_extras(root, budget)
    except OSError as exc:
        result.problems.append(Problem("tampered", str(root), f"cannot list directory ({exc.strerror})"))
        return
    for entry in top:
        extra(entry.name, "is not part of a bundle (not in the manifest)")
    if more:
        result.problems.append(Problem("tampered", root.name, f"holds more than {EXTRAS_LOOKED_AT} entries that are not part of a bundle"))
    payload = root / PAYLOAD
    if payload.is_symlink():
        result.problems.append(Problem("tampered", PAYLOAD, "is a symlink"))
        return
    if payload.exists() and not payload.is_dir():
        result.problems.append(Problem("tampered", PAYLOAD, "is not part of a bundle (not in the manifest)"))
        result.problems.append(Problem("tampered", PAYLOAD, "is not a directory"))
    elif payload.is_dir():
        for f in _walk_payload(payload, _layout(manifest), budget):
            shown = f"{PAYLOAD}/{f.rel}"
            if f.kind == "unlistable":
                assert f.error is not None
                result.problems.append(Problem("tampered", shown, f"cannot list ({f.error.strerror})"))
                continue
            if f.kind == "vanished":
                # Listed a moment ago, gone or unreadable now: changed while being checked
                # (or too deep for the OS to name: a path longer than it allows).
                assert f.error is not None
                why = "changed while being checked" if isinstance(f.error, FileNotFoundError) else "cannot be looked at"
                result.problems.append(Problem("tampered", shown, f"{why} ({f.error.strerror})"))
                continue
            if f.kind == "more":
                result.problems.append(
                    Problem(
                        "tampered",
                        shown,
                        f"holds more than {EXTRAS_LOOKED_AT} entries not in the manifest; the rest were not looked at",
                    )
                )
                continue
            assert f.st is not None
            mode = f.st.st_mode
            if f.kind == "extra":
                if stat.S_ISLNK(mode):
                    extra(shown, "is a symlink; bundles hold regular files only")
                elif not stat.S_ISREG(mode):
                    extra(shown, "is a device, FIFO or socket, not a regular file")
                else:
                    extra(shown, "is not in the manifest")
                continue
            # A listed path.
            want = expected[f.rel]
            if stat.S_ISLNK(mode):
                result.problems.append(Problem("tampered", shown, "is a symlink; bundles hold regular files only"))
                continue
            if stat.S_ISDIR(mode):
                result.problems.append(Problem("tampered", shown, "is a folder; the manifest lists a file here"))
                continue
            if not stat.S_ISREG(mode):
                result.problems.append(Problem("tampered", shown, "is a device, FIFO or socket, not a regular file"))
                continue
            seen.add(f.rel)
            if f.st.st_size != want.size:
                result.problems.append(Problem("tampered", shown, f"is {f.st.st_size} bytes; the manifest says {want.size}"))
                continue
            try:
                size, digest = hash_file(payload / f.rel, limit=want.size)
            except (OSError, GageError) as exc:
                result.problems.append(Problem("tampered", shown, f"cannot be read safely ({exc})"))
                continue
            if size != want.size or digest != want.sha256:
                result.problems.append(Problem("tampered", shown, "content does not match its SHA-256 in the manifest"))
    if unnamed:
        result.problems.append(
            Problem("tampered", None, f"and {unnamed} more entries not part of the bundle (not named one by one)")
        )
    # A set, not a scan of the problem list per file: 10,000 listed files that are all
    # missing would otherwise cost 50 million comparisons on every check.
    reported = {p.path for p in result.problems}
    for path in sorted(set(expected) - seen):
        if f"{PAYLOAD}/{path}" not in reported:
            result.problems.append(Problem("tampered", f"{PAYLOAD}/{path}", "is listed in the manifest but missing"))


def verify(root: Path, *, expect_name: bool = False) -> Check:
    """Check, and raise the first failing stage's error. Returns the check when all holds."""
    result = check(root, expect_name=expect_name)
    err = result.first_error()
    if err is not None:
        raise err
    return result


# --- making bundles ------------------------------------------------------------------


def collect_sources(sources: list[Path]) -> list[tuple[str, Path]]:
    """Map the files and folders a user named to payload paths, keeping relative paths.

    A file contributes its own name; a folder contributes its name and everything below
    it. Symlinks and special files are refused rather than followed.
    """
    out: list[tuple[str, Path]] = []
    for src in sources:
        src = Path(src)
        if src.is_symlink():
            raise UsageError(f"{src} is a symlink; gage bundles regular files only")
        if not src.exists():
            raise UsageError(f"{src} does not exist")
        base = src.resolve().name
        if src.is_file():
            out.append((base, src))
        elif src.is_dir():
            for dirpath, dirnames, filenames in os.walk(src):
                dirnames.sort()
                rel_dir = os.path.relpath(dirpath, src)
                for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    full = Path(dirpath) / name
                    if full.is_symlink():
                        raise UsageError(f"{full} is a symlink; gage bundles regular files only")
                    if not full.is_file():
                        raise UsageError(f"{full} is not a regular file")
                    rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                    out.append((f"{base}/{rel}".replace(os.sep, "/"), full))
        else:
            raise UsageError(f"{src} is not a regular file or folder")
    seen: dict[str, Path] = {}
    for rel, src in out:
        try:
            check_path(rel, "path")
        except MalformedError as exc:
            raise UsageError(f"{src}: {exc.message}") from exc
        key = fold_path(rel)
        if key in seen:
            raise UsageError(f"{src} and {seen[key]} would both be {rel!r} in the bundle")
        seen[key] = src
    return out


_O_DIR = os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0)


def open_beneath(root: Path, rel: str) -> int:
    """Open `root/rel` for reading, following no symlink on the way, checked at each step.

    Checking the parent folders for symlinks and then opening by path leaves a gap in
    which a folder can be swapped for a link to somewhere else; opening each component
    relative to the descriptor of the one before, with O_NOFOLLOW, leaves none. Raises
    OSError (ELOOP, ENOTDIR) when any component is a symlink or not a folder.
    """
    fd = os.open(root, _O_DIR)
    try:
        for part in rel.split("/")[:-1]:
            nfd = os.open(part, _O_DIR, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return os.open(rel.split("/")[-1], _O_SAFE, dir_fd=fd)
    finally:
        os.close(fd)


def _copy_hashing(src: Path, dst: Path, *, fd: int | None = None, limit: int | None = None) -> FileEntry:
    """Copy `src` (or the already opened `fd`, which this closes) to `dst`, hashing as it goes.

    `limit`: the size the manifest declares. No more than that is ever written, and no more
    than one byte past it read: a file that turns out longer (it grew, or reads past its
    size) raises TamperedError, and `dst` is removed.
    """
    h = hashlib.sha256()
    size = 0
    if fd is None:
        fd = os.open(src, _O_SAFE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{src} is not a regular file")
        with open(dst, "xb") as out:
            while True:
                chunk = os.read(fd, CHUNK if limit is None else min(CHUNK, limit + 1 - size))
                if not chunk:
                    break
                if limit is not None and size + len(chunk) > limit:
                    out.close()
                    os.unlink(dst)
                    raise TamperedError(f"is longer than the {limit} bytes the manifest says; not copied")
                h.update(chunk)
                out.write(chunk)
                size += len(chunk)
                progress.advance(len(chunk))
            out.flush()
            os.fsync(out.fileno())
    finally:
        os.close(fd)
    return FileEntry(path="", size=size, sha256=h.hexdigest())


def _make_parents(base: Path, rel: str, made: set[str]) -> None:
    """Create the folders of `rel` below `base`, one level at a time (no recursion)."""
    prefix = ""
    for part in rel.split("/")[:-1]:
        prefix = f"{prefix}{part}/"
        if prefix not in made:
            (base / prefix).mkdir(exist_ok=True)
            made.add(prefix)


def _source_bytes(files: list[tuple[str, Path]]) -> int:
    """The bytes `build` will copy, as the sources' sizes say now (for a progress line only)."""
    total = 0
    for _rel, src in files:
        try:
            total += os.lstat(src).st_size
        except OSError:
            pass
    return total


def build(
    identity: Identity,
    files: list[tuple[str, Path]],
    *,
    staging: Path,
    kind: str,
    to: list[Party] | None = None,
    parent: str | None = None,
    thread: str | None = None,
    subject: str | None = None,
    chain: list[Hop] | None = None,
    sizes: dict[str, int] | None = None,
) -> tuple[Path, Manifest]:
    """Write a complete, signed bundle into a new directory under `staging`.

    The hashes come from the bytes as they were copied, so a source that changes while
    we read it cannot make the manifest disagree with the payload. The caller renames
    the returned directory into place. `sizes`: the most each payload path may hold (a
    forward copies files another manifest declared); a longer file raises TamperedError.
    """
    work = staging / f"build-{secrets.token_hex(8)}"
    work.mkdir(parents=True)
    try:
        entries: list[FileEntry] = []
        payload = work / PAYLOAD
        payload.mkdir()
        with progress.phase("bundling", lambda: _source_bytes(files)):
            for rel, src in files:
                dst = payload / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                e = _copy_hashing(src, dst, limit=sizes.get(rel) if sizes is not None else None)
                entries.append(FileEntry(path=rel, size=e.size, sha256=e.sha256))
        manifest = Manifest.build(
            kind=kind,
            sender=Party(key=identity.key, name=identity.name),
            files=entries,
            nonce=secrets.token_hex(16),
            thread=thread,
            parent=parent,
            to=to,
            subject=subject,
            chain=chain,
        )
        (work / MANIFEST).write_bytes(manifest.raw)
        (work / SIGNATURE).write_bytes(identity.sign(manifest.raw))
        atomic.fsync_tree(work)
        return work, manifest
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def copy_bundle(src: Path, manifest: Manifest, dst: Path) -> list[str]:
    """Copy the manifest, the signature and the listed payload files of `src` into `dst`.

    Only what the manifest names is copied (regular files, never through a symlink), and
    never more of a file than the manifest declares; anything else is left behind and
    returned (at most NAMED_EXTRAS_LIMIT names, then a count), so the caller can say so.
    A listed file that is missing, unsafe or longer than declared is skipped and will show
    as missing when checked; a read or write that fails part-way raises OSError, and the
    caller discards the copy. The walk enters only folders on the way to a listed file.
    """
    dst.mkdir(parents=True)
    for name, cap in ((MANIFEST, MANIFEST_LIMIT), (SIGNATURE, SIGNATURE_LEN * 4)):
        s = src / name
        if name == SIGNATURE:
            _sig, problem = read_signature(src)
            if problem is not None and problem.stage == "tampered":
                # A symlink or special file: refused at the stage `gage verify` gives it, as a
                # manifest.json of that kind is, since a copy could only show it as missing.
                raise problem.to_error()
        if s.is_symlink() or not s.exists():
            continue
        try:
            data = _read_small(s, cap)
        except GageError:
            continue  # not a regular file, or over its cap: left out, and the copy's check says so
        (dst / name).write_bytes(data)
    (dst / PAYLOAD).mkdir()
    with progress.phase("copying", manifest.total_size):
        _copy_listed(src, manifest, dst)
    atomic.fsync_tree(dst)
    try:
        return _left_behind(src, manifest)
    except OSError:
        return []  # only a report: a folder that turns unreadable while we look costs it, not the copy


def _copy_listed(src: Path, manifest: Manifest, dst: Path) -> None:
    """`copy_bundle`'s payload loop: each listed file, no longer than declared, never through a link."""
    made: set[str] = set()
    for entry in manifest.files:
        try:
            # Never through a symlink, at any depth, even one swapped in while we copy.
            fd = open_beneath(src, f"{PAYLOAD}/{entry.path}")
        except OSError:
            continue  # missing, a symlink, or under one: left out, and shown as missing when checked
        handed_over = False  # _copy_hashing closes the descriptor it is given
        try:
            st = os.fstat(fd)
            # Not a regular file, or longer than declared (a sparse file can claim any size
            # without using the disk it would fill here): never read, shown as missing. The
            # limit holds even if the file grows after this look (a racing writer).
            if stat.S_ISREG(st.st_mode) and st.st_size <= entry.size:
                _make_parents(dst / PAYLOAD, entry.path, made)
                handed_over = True
                _copy_hashing(src / PAYLOAD / entry.path, dst / PAYLOAD / entry.path, fd=fd, limit=entry.size)
        except (UsageError, TamperedError):
            continue  # not a regular file after all, or grew past its size: left out, shown as missing
        finally:
            if not handed_over:
                os.close(fd)
        # An OSError (a failed read or write) propagates: a partial copy must never land, since
        # it would take the bundle's id and shut out the whole bundle for good.


def _left_behind(src: Path, manifest: Manifest) -> list[str]:
    """What `copy_bundle` did not copy because the manifest does not name it, as paths below
    `src`, sorted: at most NAMED_EXTRAS_LIMIT of them, then "N more entries" (or "more
    entries, not looked at" once the walk's budget is spent). Walked as a check walks it,
    so bounded the same way; what cannot be listed is skipped."""
    budget = [EXTRAS_LOOKED_AT]
    out: list[str] = []
    more = False
    try:
        top, more = _top_extras(src, budget)
    except OSError:
        return []
    out.extend(e.name for e in top)
    payload = src / PAYLOAD
    if payload.is_symlink() or (payload.exists() and not payload.is_dir()):
        out.append(PAYLOAD)
    elif payload.is_dir():
        for f in _walk_payload(payload, _layout(manifest), budget):
            if f.kind == "extra":
                out.append(f"{PAYLOAD}/{f.rel}")
            elif f.kind == "more":
                more = True
    out.sort()
    shown = out[:NAMED_EXTRAS_LIMIT]
    if len(out) > len(shown) or more:
        extra = len(out) - len(shown)
        shown.append(f"{extra} more entries" + (", and more not looked at" if more else "") if extra else "more entries, not looked at")
    return shown
