"""Getting files out: copy a bundle's payload to a folder, checking every byte on the way.

Accepting a bundle says "I will use this"; this is how its files reach a place a person
uses. Each listed file is read beneath the bundle without following any link, never more
than the manifest declares, and its size and SHA-256 are checked against the manifest
before it is given its name. Nothing is placed until every file has checked out: each is
written to a temporary name beside its destination first, then all are given their names;
on any error the temporary files (and folders this made) are removed. Folders on the way
are entered without following links, so a link in the destination cannot send a file
elsewhere. Nothing is overwritten unless `force`. A pending bundle is extracted only with
`allow_pending`; a rejected one never. See spec/cli.md, `gage extract`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from gage.bundle import PAYLOAD, progress, read_manifest, read_signature
from gage.bundle.safeopen import CHUNK, O_DIR, open_beneath
from gage.format.errors import GageIOError, RefusedError, TamperedError
from gage.format.keys import verify_manifest_signature
from gage.format.manifest import FileEntry, Manifest
from gage.format.vocab import Place
from gage.home.layout import Home
from gage.home.listing import Stored

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
STATES: tuple[Place, ...] = ("accepted", "outbox")  # and "pending" with allow_pending; never "rejected"


@dataclass
class _Staged:
    entry: FileEntry
    dir_fd: int
    name: str  # the final name in dir_fd
    tmp: str  # the temporary name in dir_fd


def _allowed(stored: Stored, allow_pending: bool) -> None:
    if stored.state in STATES:
        return
    if stored.state == "pending":
        if allow_pending:
            return
        raise RefusedError(
            f"{stored.id[:12]} is pending (not accepted); accept it first, or extract with --pending to look without accepting"
        )
    raise RefusedError(f"{stored.id[:12]} is {stored.state}: its files are not extracted")


def _signed_manifest(stored: Stored) -> Manifest:
    """The manifest, only if its signature verifies: the hashes checked below are only as good as it."""
    raw, manifest = read_manifest(stored.path)
    sig, problem = read_signature(stored.path)
    if problem is not None:
        raise problem.to_error()
    assert sig is not None
    verify_manifest_signature(manifest.sender.key, raw, sig)
    return manifest


class _Folders:
    """Descriptors of the destination's folders, each opened beneath the one before, no links."""

    def __init__(self, root_fd: int) -> None:
        self.fds: dict[str, int] = {"": root_fd}
        self.made: list[tuple[int, str]] = []  # (parent fd, name) of folders made here, in order

    def of(self, rel: str) -> int:
        prefix = ""
        fd = self.fds[""]
        for part in rel.split("/")[:-1]:
            nxt = f"{prefix}{part}/"
            if nxt not in self.fds:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    self.made.append((fd, part))
                except FileExistsError:
                    pass
                try:
                    self.fds[nxt] = os.open(part, O_DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise RefusedError("is a link or not a folder in the destination; nothing was extracted", path=nxt.rstrip("/")) from exc
                    raise
            prefix, fd = nxt, self.fds[nxt]
        return fd

    def exists(self, rel: str) -> bool:
        """Whether `rel` exists (as anything, a dangling link too), without making folders."""
        fd = self.fds[""]
        opened: list[int] = []
        try:
            for part in rel.split("/")[:-1]:
                try:
                    fd = os.open(part, O_DIR, dir_fd=fd)
                except FileNotFoundError:
                    return False
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise RefusedError("is a link or not a folder in the destination; nothing was extracted", path=part) from exc
                    raise
                opened.append(fd)
            try:
                os.stat(rel.split("/")[-1], dir_fd=fd, follow_symlinks=False)
                return True
            except FileNotFoundError:
                return False
        finally:
            for o in opened:
                os.close(o)

    def undo(self) -> None:
        for parent, name in reversed(self.made):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=parent)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)


def _copy_checked(stored: Stored, entry: FileEntry, dir_fd: int, tmp: str) -> None:
    """Copy one payload file to `tmp` in `dir_fd`, reading at most its declared size plus one byte."""
    shown = f"{PAYLOAD}/{entry.path}"
    try:
        src = open_beneath(stored.path, shown)
    except OSError as exc:
        raise TamperedError(f"cannot be opened safely ({exc.strerror}); nothing was extracted", path=shown) from exc
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            raise TamperedError("is not a regular file; nothing was extracted", path=shown)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o666, dir_fd=dir_fd)
        try:
            h = hashlib.sha256()
            size = 0
            while True:
                chunk = os.read(src, min(CHUNK, entry.size + 1 - size))
                if not chunk:
                    break
                size += len(chunk)
                if size > entry.size:
                    raise TamperedError(f"is longer than the {entry.size} bytes the manifest says; nothing was extracted", path=shown)
                h.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
                progress.advance(len(chunk))
            if size != entry.size:
                raise TamperedError(f"is {size} bytes; the manifest says {entry.size}; nothing was extracted", path=shown)
            if h.hexdigest() != entry.sha256:
                raise TamperedError("content does not match its SHA-256 in the manifest; nothing was extracted", path=shown)
            os.fsync(out)
        finally:
            os.close(out)
    finally:
        os.close(src)


def _place(s: _Staged, force: bool) -> None:
    """Give a checked temporary file its name: atomically, and over an existing one only if `force`."""
    if force:
        os.replace(s.tmp, s.name, src_dir_fd=s.dir_fd, dst_dir_fd=s.dir_fd)
        return
    try:
        # link() fails if the name exists (as anything): no window in which a file is replaced.
        os.link(s.tmp, s.name, src_dir_fd=s.dir_fd, dst_dir_fd=s.dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise RefusedError("exists; nothing is overwritten without --force", path=s.entry.path) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        # A file system without hard links: look, then rename (a small window, reported if lost).
        try:
            os.stat(s.name, dir_fd=s.dir_fd, follow_symlinks=False)
            raise RefusedError("exists; nothing is overwritten without --force", path=s.entry.path) from None
        except FileNotFoundError:
            os.rename(s.tmp, s.name, src_dir_fd=s.dir_fd, dst_dir_fd=s.dir_fd)
            return
    os.unlink(s.tmp, dir_fd=s.dir_fd)


def extract(home: Home, stored: Stored, dest: Path, *, force: bool = False, allow_pending: bool = False) -> list[Path]:
    """Copy `stored`'s payload into `dest` (made if missing); return the paths written, in manifest order.

    Raises RefusedError (a pending bundle without `allow_pending`, a rejected one, an existing
    file without `force`, a link in the destination, a destination inside the home), TamperedError or BadSignatureError (the
    bundle does not check out: nothing is written), GageIOError (the file system failed).
    """
    if not stored.path.is_relative_to(home.root):
        raise RefusedError("is not a bundle held in this home", path=str(stored.path))
    _allowed(stored, allow_pending)
    manifest = _signed_manifest(stored)
    dest = Path(dest)
    if dest.resolve().is_relative_to(home.root.resolve()):
        # Files written into the home would change what it holds (a bundle's payload, its journal).
        raise RefusedError("is inside the gage home; extract to a folder outside it", path=str(dest))
    # The destination and the folders above it that this call makes, deepest first: taken back
    # if the extract does not finish (an error, Ctrl-C), so it leaves no empty folder.
    made_dest = [p for p in (dest, *dest.parents) if not os.path.lexists(p)]
    try:
        dest.mkdir(parents=True, exist_ok=True)
        root_fd = os.open(dest, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        _remove_empty(made_dest)
        raise GageIOError(f"cannot use the destination folder: {exc.strerror}", path=str(dest)) from exc
    folders = _Folders(root_fd)
    staged: list[_Staged] = []
    placed: list[_Staged] = []
    done = False
    try:
        if not force:
            for entry in manifest.files:
                if folders.exists(entry.path):
                    raise RefusedError("exists; nothing is overwritten without --force (nothing was extracted)", path=entry.path)
        token = secrets.token_hex(6)
        with progress.phase("extracting", manifest.total_size):
            for n, entry in enumerate(manifest.files):
                fd = folders.of(entry.path)
                s = _Staged(entry, fd, entry.path.split("/")[-1], f".gage-extract-{token}-{n}.partial")
                staged.append(s)
                _copy_checked(stored, entry, fd, s.tmp)
        for s in staged:
            _place(s, force)
            placed.append(s)
        for fd in set(folders.fds.values()):
            with contextlib.suppress(OSError):
                os.fsync(fd)
        done = True
        return [dest / s.entry.path for s in staged]
    except OSError as exc:
        raise GageIOError(f"cannot extract ({exc.strerror or exc}); nothing was left half-written", path=str(dest)) from exc
    finally:
        if not done:
            for s in staged:
                with contextlib.suppress(OSError):
                    os.unlink(s.tmp, dir_fd=s.dir_fd)
            if not force:
                # Names this call gave (nothing was there before): taken back, so an error leaves nothing.
                for s in placed:
                    with contextlib.suppress(OSError):
                        os.unlink(s.name, dir_fd=s.dir_fd)
            folders.undo()
        folders.close()
        if not done:
            _remove_empty(made_dest)


def _remove_empty(folders: list[Path]) -> None:
    """Remove these folders, deepest first, each only if empty (never what someone else put there)."""
    for p in folders:
        try:
            os.rmdir(p)
        except OSError:
            return

