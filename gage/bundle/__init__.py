"""Bundles on disk: making them, and checking any directory that claims to be one.

The work lives in the modules of this package; this one keeps the names the rest of gage
(and anyone scripting it) imports from `gage.bundle`, each loaded from its module when first
asked for, so importing one module here (`gage.bundle.atomic`) loads none of the others:

- `safeopen`: the one way a file someone else wrote is opened (no links, no blocking,
  regular files only, never out of the bundle);
- `walk`: the bounded walk of a bundle folder, listed entries and extras; `treestat`, what
  a tree's entries were when last looked at;
- `checking` (with `hash`): `check` and `verify`; `problems`: what a check found, each with
  its stage; `reading`: the manifest and signature readers;
- `making`: `collect_sources`, `build` and `copy_bundle`, durable before the rename;
  `atomic`: writes by temp name, fsync and rename; `readonly`: landed payloads read-only;
- `critical`: a batch's critical section (SIGINT and SIGTERM held off) and the named steps
  fault tests inject at;
- `fstrust` (which file systems keep timestamps) and `progress` (bytes hashed, for a bar).
"""

from __future__ import annotations

import os  # noqa: F401  (tests stand in for os.read and os.scandir through `gage.bundle.os`)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gage.bundle.checking import (
        CHUNK,
        STAGE_ORDER,
        Check,
        Problem,
        check,
        hash_file,
        read_manifest,
        read_signature,
        read_small,
        verify,
    )
    from gage.bundle.making import build, collect_sources, copy_bundle
    from gage.bundle.safeopen import open_beneath
    from gage.bundle.walk import (
        EXTRAS_LOOKED_AT,
        MANIFEST,
        NAMED_EXTRAS_LIMIT,
        PAYLOAD,
        SIGNATURE,
    )
    from gage.format.manifest import MANIFEST_LIMIT, ManifestTooLargeError

# Each name is loaded from its module when it is first asked for (PEP 562): importing one
# module of this package runs this file, and a command that reads no bundle loads none of
# the checker, the walk, the hashing or the builder (the start path: docs/architecture.md).
_WHERE = {
    **dict.fromkeys(
        ("CHUNK", "check", "hash_file", "verify"), "gage.bundle.checking"
    ),
    **dict.fromkeys(("read_manifest", "read_signature", "read_small"), "gage.bundle.reading"),
    **dict.fromkeys(("STAGE_ORDER", "Check", "Problem"), "gage.bundle.problems"),
    **dict.fromkeys(("build", "collect_sources", "copy_bundle"), "gage.bundle.making"),
    "open_beneath": "gage.bundle.safeopen",
    **dict.fromkeys(("EXTRAS_LOOKED_AT", "MANIFEST", "NAMED_EXTRAS_LIMIT", "PAYLOAD", "SIGNATURE"), "gage.bundle.walk"),
    **dict.fromkeys(("MANIFEST_LIMIT", "ManifestTooLargeError"), "gage.format.manifest"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(where, fromlist=[name]), name)  # as `from M import name` does
    globals()[name] = value  # asked once
    return value


__all__ = [
    "CHUNK",
    "EXTRAS_LOOKED_AT",
    "MANIFEST_LIMIT",
    "MANIFEST",
    "NAMED_EXTRAS_LIMIT",
    "PAYLOAD",
    "SIGNATURE",
    "STAGE_ORDER",
    "Check",
    "ManifestTooLargeError",
    "Problem",
    "build",
    "check",
    "collect_sources",
    "copy_bundle",
    "hash_file",
    "open_beneath",
    "read_manifest",
    "read_signature",
    "read_small",
    "verify",
]
