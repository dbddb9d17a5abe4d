"""This home's identity file and the key files people hand each other, on disk.

The bytes are gage.format.keys's to parse; this module owns the files: the identity is read
with the home-file rules (no links, no FIFOs, capped) and refused when others can read it,
and written only in one atomic step.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gage.bundle import atomic
from gage.format.errors import GageIOError, MalformedError, RefusedError
from gage.format.keys import IDENTITY_LIMIT, KEYFILE_LIMIT, Identity
from gage.format.keys.file import KeyFile
from gage.home import homefile


def save_identity(identity: Identity, path: Path) -> None:
    """Write a new identity; never over an existing one (a home's key is not replaced by accident)."""
    if path.exists():
        raise RefusedError("an identity already exists here; gage will not replace it", path=str(path))
    atomic.write_bytes(path, identity.to_bytes(), mode=0o600)


def rewrite_identity(identity: Identity, path: Path) -> None:
    """Replace the identity file in one atomic step (a key retired or replaced; under the home lock)."""
    atomic.write_bytes(path, identity.to_bytes(), mode=0o600)


def load_identity(path: Path) -> Identity:
    raw = homefile.read_bytes(path, "identity", IDENTITY_LIMIT)
    if raw is None:
        raise GageIOError("no identity here: run `gage init --name NAME` first", path=str(path))
    identity = Identity.parse(raw, path=str(path))
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError as exc:
        raise GageIOError(f"cannot read the identity: {exc.strerror}", path=str(path)) from exc
    if mode & 0o077:
        raise RefusedError(f"identity is readable by others (mode {mode:o}); run chmod 600 on it", path=str(path))
    return identity


def load_key_file(path: Path) -> KeyFile:
    """A key file someone handed over: a claim, parsed by KeyFile.parse."""
    try:
        # O_NONBLOCK: a FIFO named as a key file must not hang the command.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise MalformedError("a key file must be a regular file", path=str(path))
            data = f.read(KEYFILE_LIMIT + 1)
    except OSError as exc:
        raise GageIOError(f"cannot read key file: {exc.strerror}", path=str(path)) from exc
    kf = KeyFile.parse(data, path=str(path))
    if kf.sealing is not None:
        try:
            from gage.home import sealing  # a key file carrying a sealing key only

            sealing.parse_carried(kf.sealing)
        except MalformedError as exc:
            raise MalformedError(exc.message, path=str(path), field=exc.field) from exc
    return kf
