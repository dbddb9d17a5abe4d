"""Sizes as people read them: `500.0 MiB (524,289,892 bytes)`, not `524289892 bytes`.

The exact count stays beside the rounded one, since a person comparing two bundles may
need it; the frame (spec/frame.md) keeps its own exact wording, which agents parse.
"""

from __future__ import annotations


def human(n: int) -> str:
    if n < 1024:
        return f"{n} byte{'s' if n != 1 else ''}"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def rounded(n: int) -> str:
    """`1.0 GiB`: the rounded size alone, for a limit (where the exact count adds nothing)."""
    return human(n).split(" (", 1)[0]
