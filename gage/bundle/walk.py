"""Walking a bundle folder someone else wrote: what is listed, what is extra, at bounded cost.

Shared by the check (`bundle_check`) and the copy (`bundle_build.copy_bundle`), so both see
the same entries. The folders on the way to a listed file are opened by descriptor, each
beneath the one before with O_NOFOLLOW (`safeopen`), and a listed file is looked at and
opened relative to its folder's descriptor: a folder swapped for a symlink mid-walk is
refused, never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from gage.bundle import safeopen
from gage.format.manifest import FileEntry, Manifest
from gage.format.record import Record

MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"
PAYLOAD = "payload"
# Entries that are not part of the bundle (files the manifest does not list, and the folders
# holding them) cost a hostile sender one write each, and whoever walks them a stat each:
# one check or copy looks at no more than EXTRAS_LOOKED_AT of them (more is a problem of its
# own), and names at most NAMED_EXTRAS_LIMIT one by one, counting the rest in one line.
EXTRAS_LOOKED_AT = 10_000
NAMED_EXTRAS_LIMIT = 100


def entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    """The entries of `directory`, one at a time (a folder may hold millions)."""
    it = os.scandir(directory)
    try:
        yield from it
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def top_extras(root: Path, budget: list[int]) -> tuple[list[os.DirEntry[str]], bool]:
    """The entries of a bundle folder other than the manifest, the signature and `payload`
    (at most `budget[0]` of them, which they use up), and whether there were more.
    Raises OSError if the folder cannot be listed."""
    found: list[os.DirEntry[str]] = []
    for e in entries(root):
        if e.name in (MANIFEST, SIGNATURE, PAYLOAD):
            continue
        if budget[0] <= 0:
            return sorted(found, key=lambda e: e.name), True
        budget[0] -= 1
        found.append(e)
    return sorted(found, key=lambda e: e.name), False


class Found(Record):
    """One thing a walk of `payload` found. `kind`: `files` (listed paths that were regular
    files when their folder `rel` was listed: `names` in it, to be opened by `dir_fd` and
    judged by the fstat of what was opened), `listed` (a listed path that the listing did
    not show as a regular file, with its lstat, and `dir_fd` + `name` to open it by), `extra`
    (anything else that is not a folder: a file, a symlink, a device), `vanished` (could not
    be looked at: `error`), `unlistable` (a folder that cannot be listed or opened), `more`
    (the walk stopped looking for extras in `rel` and after it). A `dir_fd` is valid until
    the walk moves on."""

    __slots__ = ("kind", "rel", "st", "error", "dir_fd", "name", "names")
    kind: str
    rel: str
    st: os.stat_result | None
    error: OSError | None
    dir_fd: int
    name: str
    names: list[str]

    def __init__(
        self,
        kind: str,
        rel: str,
        st: os.stat_result | None = None,
        error: OSError | None = None,
        dir_fd: int = -1,
        name: str = "",
        names: list[str] | None = None,
    ) -> None:
        self.kind = kind
        self.rel = rel
        self.st = st
        self.error = error
        self.dir_fd = dir_fd
        self.name = name
        self.names = [] if names is None else names


_NOTHING: tuple[dict[str, FileEntry], set[str]] = ({}, set())  # never changed: a folder off the plan


class _Dir:
    """A folder's descriptor, closed once its files and its sub-folders no longer need it."""

    def __init__(self, fd: int, refs: int = 1) -> None:
        self.fd, self.refs = fd, refs

    def release(self) -> None:
        self.refs -= 1
        if self.refs == 0:
            os.close(self.fd)


# A folder of the walk's plan: its listed files (name: entry) and the folders directly inside it.
Plan = dict[str, tuple[dict[str, FileEntry], set[str]]]


def layout(manifest: Manifest) -> Plan:
    """Every folder on the way to a listed file ("" is `payload` itself, "a/b/" a folder below
    it), with the listed files directly inside it (by name, each with its entry, so a checker
    finds what a file should be without a lookup by full path) and the names of the folders
    directly inside it. A walk that enters only these folders is bounded by the manifest, not
    by what is on disk."""
    out: Plan = {"": ({}, set())}
    for f in manifest.files:
        folder, slash, name = f.path.rpartition("/")
        here = out.get(folder + slash)
        if here is None:  # a folder not met before: enter every level on the way to it
            prefix = ""
            for part in folder.split("/"):
                out[prefix][1].add(part)
                prefix = f"{prefix}{part}/"
                out.setdefault(prefix, ({}, set()))
            here = out[prefix]
        here[0][name] = f
    return out


def walk_payload(payload: Path, plan: Plan, budget: list[int], seen: dict[str, os.stat_result] | None = None) -> Iterator[Found]:
    """Walk `payload` without recursion: every listed path (looked up by name), and every
    other entry until `budget[0]` of them have been looked at.

    Folders on the way to a listed file are always entered, by descriptor. Other folders
    are walked only for what is in them (an empty one is no problem) and only while the
    budget lasts; once it is spent, one `more` is yielded, nothing else is listed, and only
    listed paths are still looked up. So the cost is bounded by the manifest plus the
    budget, however deep or wide a tree a sender leaves there. A path that is not listed is
    never opened. Descriptors held at once: at most one per level of the deepest path.

    `seen`: where to keep each folder's fstat, taken before it is listed, by its path from
    the bundle folder (`payload`, `payload/a`), and the lstat of each folder off the plan
    (the check cache proves a tree unchanged from the walk's own look at it).
    """
    try:
        top = _Dir(safeopen.open_dir(payload))
    except OSError as exc:
        yield Found("unlistable", "", error=exc)
        return
    # (prefix, on the way to a listed file, the parent folder's descriptor, this folder's name)
    stack: list[tuple[str, bool, _Dir | None, str]] = [("", True, None, "")]
    try:
        yield from _walk(payload, plan, budget, top, stack, seen)
    finally:
        # Folders left on the stack (the walk was stopped) hold their parents' descriptors.
        for prefix, on_way, parent, _name in stack:
            if parent is not None:
                parent.release()
            elif on_way and not prefix:
                top.release()  # stopped before it began


def _walk(
    payload: Path,
    plan: Plan,
    budget: list[int],
    top: _Dir,
    stack: list[tuple[str, bool, _Dir | None, str]],
    seen: dict[str, os.stat_result] | None,
) -> Iterator[Found]:
    spent = False
    while stack:
        prefix, on_way, parent, dname = stack.pop()
        if spent and not on_way:
            continue
        here: _Dir | None = None
        if on_way:
            if parent is None:
                here = top
            else:
                try:
                    here = _Dir(os.open(dname, safeopen.O_DIR, dir_fd=parent.fd))
                except OSError as exc:
                    yield Found("unlistable", prefix, error=exc)  # swapped for a link or a file since it was looked at
                    continue
                finally:
                    parent.release()
        directory = payload / prefix if prefix else payload
        if seen is not None and here is not None:
            try:
                seen[f"{PAYLOAD}/{prefix}"[:-1] if prefix else PAYLOAD] = os.fstat(here.fd)
            except OSError:
                pass  # not kept: the check cache remembers no tree it has not seen whole
        files, dirs = plan.get(prefix, _NOTHING) if on_way else _NOTHING
        found: list[Found] = []
        below: list[tuple[str, bool, _Dir | None, str]] = []
        # The listing first (it finds the extras, and says which listed names are regular
        # files without a stat each); it may stop early, or fail, leaving names to look up.
        # `regular`: listed files the listing shows as regular files (no syscall: its type);
        # `listed`: other listed names it showed, each looked up by name below.
        regular: set[str] = set()
        listed: dict[str, os.DirEntry[str]] = {}
        others: list[os.DirEntry[str]] = []
        stopped = complete = False
        unlistable: OSError | None = None
        if not spent:
            try:
                listing = os.scandir(directory)
                try:  # `entries`, inline: once per entry (10,000 small files)
                    for e in listing:
                        name = e.name
                        if name in files:
                            try:
                                if e.is_file(follow_symlinks=False):
                                    regular.add(name)
                                    continue
                            except OSError:
                                pass  # looked up by name below
                            listed[name] = e
                            continue
                        if name in dirs:
                            listed[name] = e
                            continue
                        if budget[0] <= 0:
                            stopped = True
                            break
                        budget[0] -= 1
                        others.append(e)
                    else:
                        complete = True
                finally:
                    close = getattr(listing, "close", None)
                    if close is not None:
                        close()
            except OSError as exc:
                unlistable = exc
        # Listed names first, by name. Regular files when listed go in runs (`files`), to be
        # opened (never following a link, never blocking) and judged by the fstat of what
        # was opened: no stat of their own, and no object each.
        run: list[str] = []
        if complete and not listed and not dirs:
            run = sorted(regular)  # the usual folder: only regular files (any others missing)
            rest: list[str] = []
        else:
            rest = sorted(files.keys() | dirs)
        for name in rest:
            assert here is not None
            if name in regular:
                run.append(name)
                continue
            if complete and name not in listed:
                continue  # missing: reported once the walk is done
            rel = prefix + name
            if run:
                found.append(Found("files", prefix, dir_fd=here.fd, names=run))
                run = []
            try:
                st = os.stat(name, dir_fd=here.fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # missing: reported once the walk is done
            except OSError as exc:
                found.append(Found("vanished", rel, error=exc))
                continue
            if name in files:
                found.append(Found("listed", rel, st, dir_fd=here.fd, name=name))
            elif stat.S_ISDIR(st.st_mode):
                here.refs += 1
                below.append((rel + "/", True, here, name))
            else:
                found.append(Found("extra", rel, st))  # a file, symlink or device where a folder should be
        if run:
            assert here is not None
            found.append(Found("files", prefix, dir_fd=here.fd, names=run))
        if unlistable is not None:
            found.append(Found("unlistable", prefix, error=unlistable))
        for e in sorted(others, key=lambda e: e.name):
            rel = prefix + e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as exc:
                found.append(Found("vanished", rel, error=exc))
                continue
            if stat.S_ISDIR(st.st_mode):
                if seen is not None:
                    seen[f"{PAYLOAD}/{rel}"] = st  # not listed: the check cache keeps no such tree
                below.append((rel + "/", False, None, e.name))
            else:
                found.append(Found("extra", rel, st))
        if stopped:
            spent = True
            found.append(Found("more", prefix))
        stack.extend(reversed(below))  # before yielding: a stopped walk releases what they hold
        try:
            yield from found
        finally:
            if here is not None:
                here.release()
