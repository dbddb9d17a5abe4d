"""Checking any directory that claims to be a bundle: structure, signature, every byte.

Checking never trusts the directory: it opens nothing through a symlink (`safeopen`),
streams every payload file through SHA-256 (memory stays flat whatever the file size;
large files several at once, one per core, since hashlib releases the GIL), and reports
every problem it finds, each with the stage that caught it and the file it concerns, in
the same order however the hashing was shared out.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from gage.bundle import progress, safeopen
from gage.bundle.hash import MISMATCH, Hasher, Hashing, hash_here
from gage.bundle.problems import STAGE_ORDER, Check, Problem
from gage.bundle.reading import read_manifest, read_signature, read_small
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
    TamperedError,
)
from gage.format.keys import verify_manifest_signature
from gage.format.manifest import FileEntry, Manifest, is_id

CHUNK = safeopen.CHUNK
__all__ = ["CHUNK", "STAGE_ORDER", "Check", "Problem", "check", "hash_file", "read_manifest", "read_signature", "read_small", "verify"]
def hash_file(path: Path, *, limit: int | None = None) -> tuple[int, str]:
    """Stream a regular file (never through a symlink) and return its size and SHA-256.

    `limit`: read no more than `limit` + 1 bytes (enough to tell the file is longer), so a
    file that grows while it is read, or reads past its size, costs no more than that.
    """
    try:
        fd, _st = safeopen.open_regular(path)
    except safeopen.NotRegularFileError as exc:
        raise TamperedError("is not a regular file") from exc
    try:
        return safeopen.hash_fd(fd, limit=limit, on_bytes=progress.advance)
    finally:
        os.close(fd)


def check(root: Path, *, expect_name: bool = False, seen: dict[str, os.stat_result] | None = None) -> Check:
    """Check structure, signature and integrity of the directory `root`.

    `expect_name`: the directory lives in a gage home, where it must be named by its id.
    `seen`: where to keep what the check itself looked at, each entry's stat taken before
    its bytes were read or its folder listed, by its path from `root` ("." for `root`): the
    check cache proves from these and one lstat each afterwards that the tree it remembers
    is the one checked, without walking it again (gage.home.cache.checks).
    """
    result = Check(path=root)
    if seen is not None:
        try:
            seen["."] = os.lstat(root)  # before anything in it is read or listed
        except OSError:
            pass  # read_manifest says what is wrong
    try:
        raw, manifest = read_manifest(root, seen)
    except GageError as exc:
        if exc.path is None:
            exc.path = MANIFEST
        result.problems.append(Problem.of(exc))
        return result
    result.manifest = manifest

    # Signature.
    sig, problem = read_signature(root, seen)
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

    with progress.phase("checking", lambda: manifest.total_size):  # summed only if someone listens
        _check_payload(root, manifest, result, seen)
    return result


def _check_payload(root: Path, manifest: Manifest, result: Check, stats: dict[str, os.stat_result] | None) -> None:
    plan = layout(manifest)  # each folder's listed files, by name, with their entries
    seen: set[str] = set()
    budget = [EXTRAS_LOOKED_AT]
    named = 0
    unnamed = 0
    # Problems in walk order; a file being hashed (maybe on another thread) holds its place.
    out: list[Problem | tuple[str, Hashing]] = []

    def extra(path: str, message: str) -> None:
        # Entries that are not part of the bundle: named one by one up to a limit, then counted.
        nonlocal named, unnamed
        if named < NAMED_EXTRAS_LIMIT:
            named += 1
            out.append(Problem("tampered", path, message))
        else:
            unnamed += 1

    # Top level: only the manifest, the signature and the payload folder.
    try:
        top, more = top_extras(root, budget)
    except OSError as exc:
        result.problems.append(Problem("tampered", str(root), f"cannot list directory ({exc.strerror})"))
        return
    for entry in top:
        extra(entry.name, "is not part of a bundle (not in the manifest)")
    if more:
        out.append(Problem("tampered", root.name, f"holds more than {EXTRAS_LOOKED_AT} entries that are not part of a bundle"))
    payload = root / PAYLOAD
    if payload.is_symlink():
        result.problems.extend(p for p in out if isinstance(p, Problem))
        result.problems.append(Problem("tampered", PAYLOAD, "is a symlink"))
        return
    if payload.exists() and not payload.is_dir():
        out.append(Problem("tampered", PAYLOAD, "is not part of a bundle (not in the manifest)"))
        out.append(Problem("tampered", PAYLOAD, "is not a directory"))
    elif payload.is_dir():
        with Hasher(manifest) as hasher:
            for f in walk_payload(payload, plan, budget, stats):
                if f.kind == "files":  # most of them
                    _hash_files(f.dir_fd, f.rel, f.names, plan[f.rel][0], seen, hasher, out, stats)
                    continue
                shown = f"{PAYLOAD}/{f.rel}"
                if f.kind == "unlistable":
                    assert f.error is not None
                    out.append(Problem("tampered", shown, f"cannot list ({f.error.strerror})"))
                    continue
                if f.kind == "vanished":
                    # Listed a moment ago, gone or unreadable now: changed while being checked
                    # (or too deep for the OS to name: a path longer than it allows).
                    assert f.error is not None
                    why = "changed while being checked" if isinstance(f.error, FileNotFoundError) else "cannot be looked at"
                    out.append(Problem("tampered", shown, f"{why} ({f.error.strerror})"))
                    continue
                if f.kind == "more":
                    out.append(
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
                # A listed path, looked at with a stat (the listing did not show a regular file).
                if stat.S_ISLNK(mode):
                    out.append(Problem("tampered", shown, "is a symlink; bundles hold regular files only"))
                    continue
                if stat.S_ISDIR(mode):
                    out.append(Problem("tampered", shown, "is a folder; the manifest lists a file here"))
                    continue
                if not stat.S_ISREG(mode):
                    out.append(Problem("tampered", shown, "is a device, FIFO or socket, not a regular file"))
                    continue
                folder = f.rel[: -len(f.name)]
                _hash_files(f.dir_fd, folder, [f.name], plan[folder][0], seen, hasher, out, stats)
    for item in out:
        if isinstance(item, Problem):
            result.problems.append(item)
        elif (message := item[1].result()) is not None:
            result.problems.append(Problem("tampered", item[0], message))
    if unnamed:
        result.problems.append(
            Problem("tampered", None, f"and {unnamed} more entries not part of the bundle (not named one by one)")
        )
    # A set, not a scan of the problem list per file: 10,000 listed files that are all
    # missing would otherwise cost 50 million comparisons on every check.
    reported = {p.path for p in result.problems}
    missing = sorted({f.path for f in manifest.files} - seen) if len(seen) != len(manifest.files) else []
    for path in missing:
        if f"{PAYLOAD}/{path}" not in reported:
            result.problems.append(Problem("tampered", f"{PAYLOAD}/{path}", "is listed in the manifest but missing"))


def _hash_files(
    dir_fd: int,
    prefix: str,
    names: list[str],
    wants: dict[str, FileEntry],
    seen: set[str],
    hasher: Hasher,
    out: list[Problem | tuple[str, Hashing]],
    stats: dict[str, os.stat_result] | None = None,
) -> None:
    """Open each listed file `names` in the folder `dir_fd` (`prefix` below payload) and hash
    it, or say why not. Its size is the fstat's of what was opened, so a file swapped since
    it was looked at is judged as it is. One loop, not a call per file: 10,000 small files
    cost about what hashing them does, so `hash_here`'s one read of a small file is written
    out here, with the same checks, and anything unusual takes the long way. `stats`: where
    to keep each opened file's fstat, taken before it is read (`check`'s `seen`)."""
    small = hasher.here_below
    tick = hasher.tick
    one_read = min(small, CHUNK)  # a file this small is read whole in one read of `size` + 1 bytes
    open_at, read, close, sha256 = safeopen.open_at, os.read, os.close, hashlib.sha256
    seen.update(map(prefix.__add__, names))
    for name in names:
        _, size, digest = wants[name]
        try:
            fd, st = open_at(dir_fd, name)
        except OSError as exc:
            out.append(Problem("tampered", f"{PAYLOAD}/{prefix}{name}", f"cannot be read safely ({_why(exc)})"))
            continue
        if stats is not None:
            stats[f"{PAYLOAD}/{prefix}{name}"] = st
        if st.st_size != size:
            close(fd)
            out.append(Problem("tampered", f"{PAYLOAD}/{prefix}{name}", f"is {st.st_size} bytes; the manifest says {size}"))
            continue
        if size < one_read:
            # `hash_here`'s first step: exactly `size` bytes back from a read of `size` + 1 is
            # the whole file (a short read of a regular file is its end).
            try:
                data = read(fd, size + 1)
            except OSError as exc:
                close(fd)
                out.append(Problem("tampered", f"{PAYLOAD}/{prefix}{name}", f"cannot be read safely ({exc.strerror or exc})"))
                continue
            if len(data) == size:
                close(fd)
                if tick is not None:
                    tick(size)
                if sha256(data).hexdigest() != digest:
                    out.append(Problem("tampered", f"{PAYLOAD}/{prefix}{name}", MISMATCH))
                continue
            if len(data) > size:
                close(fd)
                out.append(Problem("tampered", f"{PAYLOAD}/{prefix}{name}", MISMATCH))
                continue
            # Shorter than its fstat said (it shrank since): `hash_here` reads it again, the long way.
            try:
                os.lseek(fd, 0, os.SEEK_SET)
            except OSError:
                pass  # its own read says what fails
        # Hashes (and closes) `fd`, here or on another thread; at most `size` + 1 bytes.
        verdict = hash_here(fd, size, digest, tick) if size < small else hasher.submit(fd, size, digest)
        if verdict is None:
            continue
        if isinstance(verdict, Hashing):
            out.append((f"{PAYLOAD}/{prefix}{name}", verdict))  # holds its place until the thread is done
        else:
            out.append(Problem("tampered", f"{PAYLOAD}/{prefix}{name}", verdict))


def _why(exc: OSError) -> str:
    if isinstance(exc, safeopen.NotRegularFileError):
        return "is not a regular file"
    return exc.strerror or str(exc)


def verify(root: Path, *, expect_name: bool = False) -> Check:
    """Check, and raise the first failing stage's error. Returns the check when all holds."""
    result = check(root, expect_name=expect_name)
    err = result.first_error()
    if err is not None:
        raise err
    return result
