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
from dataclasses import dataclass, field
from pathlib import Path

from . import atomic
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


@dataclass
class Problem:
    stage: str
    path: str | None
    message: str
    field: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"stage": self.stage, "path": self.path, "field": self.field, "message": self.message}

    def __str__(self) -> str:
        where = self.path or ""
        if self.field:
            where = f"{where}: field {self.field}" if where else f"field {self.field}"
        return f"{where}: {self.message}" if where else self.message

    def to_error(self) -> GageError:
        cls = {"malformed": MalformedError, "signature": BadSignatureError, "tampered": TamperedError}.get(
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
            "path": str(self.path),
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


def hash_file(path: Path) -> tuple[int, str]:
    """Stream a regular file (never through a symlink) and return its size and SHA-256."""
    fd = os.open(path, _O_SAFE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TamperedError("is not a regular file")
        h = hashlib.sha256()
        size = 0
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
        return size, h.hexdigest()
    finally:
        os.close(fd)


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
    spath = root / SIGNATURE
    try:
        sig = _read_small(spath, SIGNATURE_LEN * 4)
        result.signature = sig
        verify_manifest_signature(manifest.sender.key, raw, sig)
        result.signature_verified = True
    except FileNotFoundError:
        result.problems.append(Problem("signature", SIGNATURE, "is missing"))
    except MalformedError as exc:
        # Too big to be read is still a signature of the wrong length: the signature stage.
        result.problems.append(Problem("signature", SIGNATURE, f"{exc.message}; a signature is {SIGNATURE_LEN} bytes"))
    except GageError as exc:
        if exc.path is None:
            exc.path = SIGNATURE
        result.problems.append(Problem.of(exc))
    except OSError as exc:
        result.problems.append(Problem("tampered", SIGNATURE, f"cannot be read safely ({exc.strerror})"))

    # The directory name.
    if root.name != manifest.id:
        if expect_name or is_id(root.name):
            result.problems.append(
                Problem("tampered", root.name, f"directory name does not match the bundle id {manifest.id}")
            )
        else:
            result.warnings.append(Problem("name", root.name, f"directory is not named by its id {manifest.id}"))

    _check_payload(root, manifest, result)
    return result


def _check_payload(root: Path, manifest: Manifest, result: Check) -> None:
    expected = {f.path: f for f in manifest.files}
    seen: set[str] = set()

    # Top level: only the manifest, the signature and the payload folder.
    try:
        top = list(os.scandir(root))
    except OSError as exc:
        result.problems.append(Problem("tampered", str(root), f"cannot list directory ({exc.strerror})"))
        return
    for entry in top:
        if entry.name in (MANIFEST, SIGNATURE):
            continue
        if entry.name == PAYLOAD and entry.is_dir(follow_symlinks=False):
            continue
        result.problems.append(Problem("tampered", entry.name, "is not part of a bundle (not in the manifest)"))

    payload = root / PAYLOAD
    if payload.is_symlink():
        result.problems.append(Problem("tampered", PAYLOAD, "is a symlink"))
        return
    if payload.is_dir():
        stack = [(payload, "")]
        while stack:
            directory, prefix = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                result.problems.append(Problem("tampered", f"{PAYLOAD}/{prefix}", f"cannot list ({exc.strerror})"))
                continue
            for entry in entries:
                rel = f"{prefix}{entry.name}"
                shown = f"{PAYLOAD}/{rel}"
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    # Listed a moment ago, gone or unreadable now: changed while being checked.
                    result.problems.append(Problem("tampered", shown, f"changed while being checked ({exc.strerror})"))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append((Path(entry.path), rel + "/"))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    result.problems.append(Problem("tampered", shown, "is a symlink; bundles hold regular files only"))
                    continue
                if not stat.S_ISREG(st.st_mode):
                    result.problems.append(Problem("tampered", shown, "is a device, FIFO or socket, not a regular file"))
                    continue
                want = expected.get(rel)
                if want is None:
                    result.problems.append(Problem("tampered", shown, "is not in the manifest"))
                    continue
                seen.add(rel)
                if st.st_size != want.size:
                    result.problems.append(
                        Problem("tampered", shown, f"is {st.st_size} bytes; the manifest says {want.size}")
                    )
                    continue
                try:
                    size, digest = hash_file(Path(entry.path))
                except (OSError, GageError) as exc:
                    result.problems.append(Problem("tampered", shown, f"cannot be read safely ({exc})"))
                    continue
                if size != want.size or digest != want.sha256:
                    result.problems.append(Problem("tampered", shown, "content does not match its SHA-256 in the manifest"))
    elif payload.exists():
        result.problems.append(Problem("tampered", PAYLOAD, "is not a directory"))
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


def _copy_hashing(src: Path, dst: Path, *, fd: int | None = None) -> FileEntry:
    """Copy `src` (or the already opened `fd`, which this closes) to `dst`, hashing as it goes."""
    h = hashlib.sha256()
    size = 0
    if fd is None:
        fd = os.open(src, _O_SAFE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{src} is not a regular file")
        with open(dst, "xb") as out:
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                h.update(chunk)
                out.write(chunk)
                size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
    finally:
        os.close(fd)
    return FileEntry(path="", size=size, sha256=h.hexdigest())


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
) -> tuple[Path, Manifest]:
    """Write a complete, signed bundle into a new directory under `staging`.

    The hashes come from the bytes as they were copied, so a source that changes while
    we read it cannot make the manifest disagree with the payload. The caller renames
    the returned directory into place.
    """
    work = staging / f"build-{secrets.token_hex(8)}"
    work.mkdir(parents=True)
    try:
        entries: list[FileEntry] = []
        payload = work / PAYLOAD
        payload.mkdir()
        for rel, src in files:
            dst = payload / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            e = _copy_hashing(src, dst)
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

    Only what the manifest names is copied (regular files, never through a symlink);
    anything else is left behind and returned, so the caller can say so. A listed file
    that is missing or unsafe is skipped and will show as missing when checked; a read or
    write that fails part-way raises OSError, and the caller discards the copy.
    """
    left_behind: list[str] = []
    dst.mkdir(parents=True)
    for name in (MANIFEST, SIGNATURE):
        s = src / name
        if s.is_symlink() or not s.exists():
            continue
        data = _read_small(s, MANIFEST_LIMIT)
        (dst / name).write_bytes(data)
    (dst / PAYLOAD).mkdir()
    wanted = {f.path for f in manifest.files}
    for entry in manifest.files:
        s = src / PAYLOAD / entry.path
        d = dst / PAYLOAD / entry.path
        d.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Never through a symlink, at any depth, even one swapped in while we copy.
            fd = open_beneath(src, f"{PAYLOAD}/{entry.path}")
        except OSError:
            continue  # missing, a symlink, or under one: left out, and shown as missing when checked
        try:
            _copy_hashing(s, d, fd=fd)
        except UsageError:
            continue  # not a regular file after all: left out, and shown as missing when checked
        # An OSError (a failed read or write) propagates: a partial copy must never land, since
        # it would take the bundle's id and shut out the whole bundle for good.
    payload = src / PAYLOAD
    for dirpath, dirnames, filenames in os.walk(src):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = Path(dirpath) / name
            rel_top = os.path.relpath(full, src)
            if rel_top in (MANIFEST, SIGNATURE):
                continue
            try:
                rel = full.relative_to(payload).as_posix()
            except ValueError:
                left_behind.append(rel_top)
                continue
            if rel not in wanted:
                left_behind.append(rel_top)
    atomic.fsync_tree(dst)
    return sorted(left_behind)
