"""Whether the file system a path lives on keeps the timestamps the check cache relies on.

The check cache (gage/home/cache/checks.py) takes "unchanged ctime, mtime, size and inode" to mean
"unchanged bytes". Local POSIX file systems keep that promise (but for a shared writable
mmap, which read-only landing closes: gage/bundle/readonly.py). Others do not: NFS
caches attributes on the client, so another machine's write can leave them stale; sshfs and
other FUSE file systems report what their server says, or make it up; vfat and exFAT have
no ctime and a two-second mtime. On those, the cache is not used at all: every listing
checks every byte, as with the cache deleted.

Known from /proc/self/mountinfo (Linux), the file system type of the mount the path is
on. Where that cannot be read (macOS and other systems), the local system's default is
assumed, and spec/verdict.md says so.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

# File system types whose timestamps change with every write and cannot be set back.
TRUSTED = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "bcachefs", "jfs", "reiserfs", "overlay", "apfs", "hfs", "ufs", "ramfs"}
)
MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def fs_type(path: Path, mountinfo: str = MOUNTINFO) -> str | None:
    """The type of the file system `path` is on (the mount with the longest matching mount
    point), or None when it cannot be told."""
    try:
        real = os.path.realpath(path)
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 22).splitlines()
    except OSError:
        return None
    best, kind = -1, None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        point = _unescape(fields[4])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) > best:
            best, kind = len(point), right.split()[0]
    return kind


@functools.lru_cache(maxsize=64)
def _trusted(real: str) -> bool:
    kind = fs_type(Path(real))
    return kind is None or kind in TRUSTED


def timestamps_trusted(path: Path) -> bool:
    """True when the cache may vouch for files under `path` (see the module docstring)."""
    return _trusted(os.path.realpath(path))
