"""Making bundles, and copying one bundle folder to another, durably and byte for byte.

The hashes come from the bytes as they are copied, so a source that changes while it is
read cannot make the manifest disagree with the payload. Every file written is fsynced
once, as it is closed; then each folder once, deepest first: the tree is durable before
the caller renames it into place (never a second pass that fsyncs every file again).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gage.bundle import atomic, progress, safeopen
from gage.bundle.checking import read_signature, read_small
from gage.bundle.walk import (
    EXTRAS_LOOKED_AT,
    MANIFEST,
    NAMED_EXTRAS_LIMIT,
    PAYLOAD,
    SIGNATURE,
    layout,
    top_extras,
    walk_payload,
)
from gage.format.errors import (
    GageError,
    GageIOError,
    MalformedError,
    TamperedError,
    UsageError,
)
from gage.format.keys import SIGNATURE_CAP, Identity
from gage.format.manifest import (
    MANIFEST_LIMIT,
    FileEntry,
    Hop,
    Manifest,
    Party,
    check_fits,
    check_path,
    fold_path,
)
from gage.format.vocab import Kind

CHUNK = safeopen.CHUNK
# Copies in flight while bundling: enough for the disk to commit several fsyncs at once.
COPY_THREADS = 8
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | safeopen.O_NOFOLLOW


def _walk_sources(src: Path, base: str, out: list[tuple[str, Path]]) -> None:
    """Every file below the folder `src`, in the order os.walk gives (folders sorted, each
    folder's files sorted), refusing a symlink or special file rather than following it."""
    stack = [(src, "")]
    while stack:
        directory, rel_dir = stack.pop()
        try:
            with os.scandir(directory) as it:
                listed = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise UsageError(f"{directory} cannot be read ({exc.strerror})") from exc
        dirs = []
        for e in listed:
            full = directory / e.name
            if e.is_symlink():
                raise UsageError(f"{full} is a symlink; gage bundles regular files only")
            if e.is_dir(follow_symlinks=False):
                dirs.append(e)
            elif not e.is_file(follow_symlinks=False):
                raise UsageError(f"{full} is not a regular file")
            else:
                out.append((f"{base}/{rel_dir}{e.name}", full))
        stack.extend((directory / d.name, f"{rel_dir}{d.name}/") for d in reversed(dirs))


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
            # One rule for a path that is not there, in every command (spec/cli.md): exit 7.
            raise GageIOError("does not exist", path=str(src))
        base = src.resolve().name
        if src.is_file():
            out.append((base, src))
        elif src.is_dir():
            _walk_sources(src, base, out)
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


class Stopped(Exception):
    """A copy on a pool thread was told to stop (the command was interrupted): it ends at the next chunk."""


def _copy_hashing(
    src: Path, dst: Path, *, fd: int | None = None, limit: int | None = None, on_bytes: Callable[[int], None] | None = None,
    sync: bool = True,
) -> FileEntry:
    """Copy `src` (or the already opened `fd`, which this closes) to `dst`, hashing as it goes.

    `limit`: the size the manifest declares. No more than that is ever written, and no more
    than one byte past it read: a file that turns out longer (it grew, or reads past its
    size) raises TamperedError, and `dst` is removed. `dst` is fsynced before it is closed,
    unless `sync` is False: then the caller syncs it with the rest of its batch.
    """
    if fd is None:
        try:
            fd, _st = safeopen.open_regular(src)
        except safeopen.NotRegularFileError as exc:
            raise UsageError(f"{src} is not a regular file") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{src} is not a regular file")
        out = os.open(dst, _WRITE, 0o644)
        written = False
        try:
            h = hashlib.sha256()
            size = 0
            while True:
                chunk = os.read(fd, CHUNK if limit is None else min(CHUNK, limit + 1 - size))
                if not chunk:
                    break
                if limit is not None and size + len(chunk) > limit:
                    raise TamperedError(f"is longer than the {limit} bytes the manifest says; not copied")
                h.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
                size += len(chunk)
                # On a pool thread the phase is not in context: the pool's ticker reports (and stops) instead.
                (on_bytes or progress.advance)(len(chunk))
            if sync:
                os.fsync(out)
            written = True
        finally:
            os.close(out)
            if not written:
                with contextlib.suppress(OSError):
                    os.unlink(dst)
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


def _source_sizes(files: list[tuple[str, Path]]) -> list[tuple[str, int]]:
    """Each payload path with its source's size now (a file that cannot be looked at: 0,
    and the copy says why)."""
    out = []
    for rel, src in files:
        try:
            out.append((rel, os.lstat(src).st_size))
        except OSError:
            out.append((rel, 0))
    return out


def build(
    identity: Identity,
    files: list[tuple[str, Path]],
    *,
    staging: Path,
    kind: Kind,
    to: list[Party] | None = None,
    parent: str | None = None,
    thread: str | None = None,
    subject: str | None = None,
    chain: list[Hop] | None = None,
    sizes: dict[str, int] | None = None,
) -> tuple[Path, Manifest]:
    """Write a complete, signed, durable bundle into a new directory under `staging`.

    The caller renames the returned directory into place. Before anything is copied, the
    manifest these paths and sizes make is measured: over its limit (or over MAX_FILES
    files) is a ManifestTooLargeError that names the limit. `sizes`: the most each payload
    path may hold (a forward copies files another manifest declared); a longer file raises
    TamperedError.
    """
    sender = Party(key=identity.key, name=identity.name)
    now = _source_sizes(files)
    check_fits(now, kind=kind, sender=sender, thread=thread, parent=parent, to=to, subject=subject, chain=chain)
    work = staging / f"build-{secrets.token_hex(8)}"
    work.mkdir(parents=True)
    try:
        payload = work / PAYLOAD
        payload.mkdir()
        made: set[str] = set()
        with progress.phase("bundling", lambda: sum(n for _rel, n in now)):
            for rel, _src in files:
                _make_parents(payload, rel, made)
            copied = _copy_all(files, payload, sizes)
            entries = [FileEntry(path=rel, size=e.size, sha256=e.sha256) for (rel, _src), e in zip(files, copied, strict=True)]
        manifest = Manifest.build(
            kind=kind,
            sender=sender,
            files=entries,
            nonce=secrets.token_hex(16),
            thread=thread,
            parent=parent,
            to=to,
            subject=subject,
            chain=chain,
        )
        atomic.write_new(work / MANIFEST, manifest.raw)
        atomic.write_new(work / SIGNATURE, identity.sign(manifest.raw))
        atomic.fsync_dirs(work, [f"{PAYLOAD}/{m}" for m in made] + [PAYLOAD])
        return work, manifest
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _copy_all(files: list[tuple[str, Path]], payload: Path, sizes: dict[str, int] | None) -> list[FileEntry]:
    """Copy and hash every file into `payload` (its folders already made), in the files' order.

    Each copy ends in an fsync, which waits for the disk; several at once let the file system
    commit them together (ext4 joins concurrent fsyncs into one journal commit), so many
    small files are copied by a few threads. Progress is reported here as each file is done.
    The first failure stops what has not started, waits for what has, and is raised.
    """

    if len(files) < 2:
        return [_copy_hashing(src, payload / rel, limit=sizes.get(rel) if sizes is not None else None) for rel, src in files]
    tick = progress.ticker()
    stop = threading.Event()

    def on_bytes(n: int) -> None:
        # Progress moves with the bytes, not file by file (a large file would look stuck), and an interrupt stops
        # every copy at its next chunk instead of waiting for whole files to finish.
        if stop.is_set():
            raise Stopped
        if tick is not None:
            tick(n)

    def one(rel: str, src: Path) -> FileEntry:
        return _copy_hashing(src, payload / rel, limit=sizes.get(rel) if sizes is not None else None, on_bytes=on_bytes)

    out: list[FileEntry] = []
    pool = ThreadPoolExecutor(max_workers=COPY_THREADS, thread_name_prefix="gage-copy")
    futures = [pool.submit(one, rel, src) for rel, src in files]
    try:
        for f in futures:
            out.append(f.result())
    except BaseException:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)  # each running copy ends at its next chunk
        raise
    pool.shutdown(wait=True)
    return out


def copy_bundle(src: Path, manifest: Manifest, dst: Path, *, durable: bool = True) -> list[str]:
    """Copy the manifest, the signature and the listed payload files of `src` into `dst`.

    Only what the manifest names is copied (regular files, never through a symlink), and
    never more of a file than the manifest declares; anything else is left behind and
    returned (at most NAMED_EXTRAS_LIMIT names, then a count), so the caller can say so.
    A listed file that is missing, unsafe or longer than declared is skipped and will show
    as missing when checked; a read or write that fails part-way raises OSError, and the
    caller discards the copy. The walk enters only folders on the way to a listed file.
    `durable=False` leaves every fsync to the caller, who lands many copies and syncs them
    together (`atomic.sync_trees`, a batch of imports).
    """
    dst.mkdir(parents=True)
    for name, cap in ((MANIFEST, MANIFEST_LIMIT), (SIGNATURE, SIGNATURE_CAP)):
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
            data = read_small(s, cap)
        except GageError:
            continue  # not a regular file, or over its cap: left out, and the copy's check says so
        atomic.write_new(dst / name, data, sync=durable)
    (dst / PAYLOAD).mkdir()
    made: set[str] = set()
    with progress.phase("copying", manifest.total_size):
        _copy_listed(src, manifest, dst, made, durable)
    if durable:
        atomic.fsync_dirs(dst, [f"{PAYLOAD}/{m}" for m in made] + [PAYLOAD])
    try:
        return _left_behind(src, manifest)
    except OSError:
        return []  # only a report: a folder that turns unreadable while we look costs it, not the copy


def _copy_listed(src: Path, manifest: Manifest, dst: Path, made: set[str], durable: bool = True) -> None:
    """`copy_bundle`'s payload loop: each listed file, no longer than declared, never through a link."""
    for entry in manifest.files:
        try:
            # Never through a symlink, at any depth, even one swapped in while we copy.
            fd = safeopen.open_beneath(src, f"{PAYLOAD}/{entry.path}")
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
                _copy_hashing(src / PAYLOAD / entry.path, dst / PAYLOAD / entry.path, fd=fd, limit=entry.size, sync=durable)
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
        top, more = top_extras(src, budget)
    except OSError:
        return []
    out.extend(e.name for e in top)
    payload = src / PAYLOAD
    if payload.is_symlink() or (payload.exists() and not payload.is_dir()):
        out.append(PAYLOAD)
    elif payload.is_dir():
        for f in walk_payload(payload, layout(manifest), budget):
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
