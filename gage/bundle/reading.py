"""Reading a bundle's manifest and signature: small files at its top level, never through a link.

Apart from the checker (`gage.bundle.checking`, which re-exports these) so a reader that
starts from a kept check (`gage verdict ID` through the row index) reads both files without
loading the walk and the hashing (start-up).
"""

from __future__ import annotations

import os
from pathlib import Path

from gage.bundle import safeopen
from gage.bundle.problems import Problem
from gage.bundle.walk import MANIFEST, SIGNATURE
from gage.format.errors import GageError, GageIOError, MalformedError, TamperedError
from gage.format.keys import SIGNATURE_CAP
from gage.format.manifest import MANIFEST_LIMIT, Manifest


def read_small(path: Path, limit: int, seen: dict[str, os.stat_result] | None = None) -> bytes:
    """Read a regular file without following a symlink, refusing anything over `limit`.
    `seen`: where to keep the fstat of what was opened, taken before its bytes are read
    (by its name: the check cache proves a tree unchanged from the check's own look at it)."""
    try:
        fd, st = safeopen.open_regular(path)
    except safeopen.NotRegularFileError as exc:
        raise TamperedError("is not a regular file", path=path.name) from exc
    if seen is not None:
        seen[path.name] = st
    try:
        if st.st_size > limit:
            raise MalformedError(f"is {st.st_size} bytes, over the limit of {limit}", path=path.name)
        data = safeopen.read_fd(fd, limit)
        if len(data) > limit:
            raise MalformedError(f"is over the limit of {limit} bytes", path=path.name)
        return data
    finally:
        os.close(fd)


def read_manifest(root: Path, seen: dict[str, os.stat_result] | None = None) -> tuple[bytes, Manifest]:
    """Read and parse just the manifest: enough to know the id and what is claimed. `seen`: as `read_small`'s."""
    mpath = root / MANIFEST
    if not os.path.lexists(root):
        # One rule for a path that is not there, in every command (spec/cli.md): exit 7.
        raise GageIOError("does not exist", path=str(root))
    if not root.is_dir() or root.is_symlink():
        raise MalformedError("is not a directory", path=str(root))
    if not (mpath.exists() or mpath.is_symlink()):
        raise MalformedError("is not a gage bundle: it has no manifest.json", path=str(root))
    try:
        raw = read_small(mpath, MANIFEST_LIMIT, seen)
    except OSError as exc:
        if mpath.is_symlink():
            raise TamperedError("is a symlink", path=MANIFEST) from exc
        raise GageIOError(f"cannot read: {exc.strerror}", path=MANIFEST) from exc
    return raw, Manifest.parse(raw)


def read_signature(root: Path, seen: dict[str, os.stat_result] | None = None) -> tuple[bytes | None, Problem | None]:
    """`manifest.sig` as both a check and an import read it, so both give the same stage.

    Absent, or a regular file over its cap (4096 bytes): stage `signature`, since neither
    can be a signature however large it is. A symlink (never followed), FIFO,
    device, socket or directory: stage `tampered`. `seen`: as `read_small`'s.
    """
    try:
        return read_small(root / SIGNATURE, SIGNATURE_CAP, seen), None
    except FileNotFoundError:
        return None, Problem("signature", SIGNATURE, "is missing")
    except MalformedError as exc:
        # Too big to be read is still a signature of the wrong length: the signature stage.
        return None, Problem("signature", SIGNATURE, f"{exc.message}; a signature is 64 bytes (Ed25519) or 3373 (hybrid)")
    except GageError as exc:
        return None, Problem(exc.stage, SIGNATURE, exc.message, exc.field)
    except OSError as exc:
        return None, Problem("tampered", SIGNATURE, f"cannot be read safely ({exc.strerror})")
