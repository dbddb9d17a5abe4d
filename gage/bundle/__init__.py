"""Bundles on disk: making them, and checking any directory that claims to be one.

The work lives in four modules along its seams; this one keeps the names the rest of gage
(and anyone scripting it) imports from `gage.bundle`:

- `safeopen`: the one way a file someone else wrote is opened (no links, no blocking,
  regular files only, never out of the bundle);
- `bundle_walk`: the bounded walk of a bundle folder, listed entries and extras;
- `bundle_check` (with `bundle_hash`): `check` and `verify`, every problem with its stage;
- `bundle_build`: `collect_sources`, `build` and `copy_bundle`, durable before the rename.
"""

from __future__ import annotations

import os  # noqa: F401  (tests stand in for os.read and os.scandir through `gage.bundle.os`)

TYPE_CHECKING = False  # importing typing costs start-up time (issue 28)
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
    from gage.bundle.making import _copy_hashing, build, collect_sources, copy_bundle
    from gage.bundle.safeopen import open_beneath
    from gage.bundle.walk import (
        EXTRAS_LOOKED_AT,
        MANIFEST,
        NAMED_EXTRAS_LIMIT,
        PAYLOAD,
        SIGNATURE,
    )
    from gage.format.manifest import MANIFEST_LIMIT, ManifestTooLargeError

    _read_small = read_small

# Each name is loaded from its module when it is first asked for (PEP 562): importing one
# module of this package (`gage.bundle.atomic`, as the home's identity does) runs this file,
# and a command that never reads a bundle (`gage id`) must not load the checker, the walk
# and the hashing for it (issue 28: start-up). The builder, likewise, only when it builds.
_WHERE = {
    **dict.fromkeys(
        ("CHUNK", "check", "hash_file", "verify"), "gage.bundle.checking"
    ),
    **dict.fromkeys(("read_manifest", "read_signature", "read_small"), "gage.bundle.reading"),
    **dict.fromkeys(("STAGE_ORDER", "Check", "Problem"), "gage.bundle.problems"),
    **dict.fromkeys(("_copy_hashing", "build", "collect_sources", "copy_bundle"), "gage.bundle.making"),
    "open_beneath": "gage.bundle.safeopen",
    **dict.fromkeys(("EXTRAS_LOOKED_AT", "MANIFEST", "NAMED_EXTRAS_LIMIT", "PAYLOAD", "SIGNATURE"), "gage.bundle.walk"),
    **dict.fromkeys(("MANIFEST_LIMIT", "ManifestTooLargeError"), "gage.format.manifest"),
}
_ALIASES = {"_read_small": "read_small"}  # the name gage.carriers.a2a used before the split


def __getattr__(name: str) -> Any:
    real = _ALIASES.get(name, name)
    where = _WHERE.get(real)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(where, fromlist=[real]), real)  # as `from M import name` does
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
    "_copy_hashing",
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
