"""Bundle checks remembered across commands, so a second `gage list` does not hash every payload again.

A check (gage.bundle.checking: structure, every payload byte against its SHA-256, the
signature) costs a read of every byte; the inbox rarely changes between two listings.
This cache remembers one thing only: "this exact tree state checked out". It never
remembers anything about trust: contacts, the journal, the authority file and key
retirements change without the bundle changing, so the verdict's trust parts are always
computed fresh (gage.trust.verdict.compute) from a cached or fresh check.

The key (spec/verdict.md, threat-model.md "Caches"). An entry is found by the bundle
directory's absolute path, and used only when all of these are what they were when the
check ran:

- the SHA-256 of the `manifest.json` bytes and of the `manifest.sig` bytes read now;
- for the directory itself and every entry under it: relative name, mode (type and
  permissions), size, mtime_ns, ctime_ns, inode and device;
- whether the directory must be named by its id, and the gage version and cache format.

Only a check that found no problem is remembered. Its tree holds exactly the manifest,
the signature, `payload` and the folders and files the manifest lists, so the entries are
found again from the manifest with one lstat each (relative to the bundle folder, opened
once with O_NOFOLLOW, so a link put in its place is a miss), without listing any folder: an entry
added, removed or renamed anywhere changes the ctime and mtime of the folder holding it,
which is one of those. Any write, truncation or replacement of a file changes its ctime
or inode, and a user process cannot set ctime back (utime sets mtime only), so a byte
changed with size and mtime restored is seen, and so is a file renamed over another.

A check is remembered only if every entry was the same after it as when the check itself
looked at it (the stat it took before reading a file or listing a folder; the check looked
at nothing else: one walk, not a walk before and after), and only if no entry could be written
again in the same clock tick as its newest timestamp: on a filesystem whose timestamps are coarse,
a write in the same tick as the check could otherwise keep its ctime (git calls this "racy").
That holds when every timestamp in the tree is strictly older than the file system's own clock
read on the same device before the check started (gage.bundle.fsclock: a probe in the home's
cache folder, touched and read back), or, where no such reading is had, RACY_NS older than the
process's clock at the start. A tree of more than
ENTRY_LIMIT entries, or with a part that cannot be read, is never remembered; nor is a
bundle with a problem (it is checked afresh every time, so a repair shows at once).

The file (`cache/checks.json` in the home) is only ever an optimisation: deleting it
changes nothing but speed. A file that is damaged, from another gage version, or made for
another home (its `home` is not this one) is ignored and rebuilt; an entry of the wrong
shape is a miss. It is written atomically, and a write that fails (a read-only home) is
skipped. Each entry is sealed under the home's cache key (gage.home.cache.sealkey): one planted by
whoever cannot read that key, or copied from another home, is a miss.

Long because the proof is one idea: what the check looked at, how it is compared after, the
racy-window rule and how an entry is kept and read back belong together; split, each half
would have to trust the other's reading of the same stat values.
"""

from __future__ import annotations

import _thread
import json
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from gage import __version__
from gage import bundle as bundle_mod
from gage.bundle import (
    MANIFEST,
    PAYLOAD,
    SIGNATURE,
    Check,
    Problem,
    fsclock,
    fstrust,
    safeopen,
)
from gage.bundle.treestat import (
    RACY_NS,
    Entry,
    stat_entry,
    tree_digest,
)
from gage.format import sha256
from gage.format.errors import GageError
from gage.format.keys import SIGNATURE_CAP
from gage.format.manifest import MANIFEST_LIMIT, Manifest
from gage.format.vocab import PROBLEM_STAGES
from gage.home import homefile
from gage.home.cache import sealkey
from gage.home.layout import Home
from gage.home.listing import Stored

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FORMAT = f"gage-checkcache-3/{__version__}"  # 3: each entry sealed under the home's cache key; 2: by a CRC-32
FILE_NAME = "checks.json"
# The most of checks.json that is read: a damaged file, or a link to /dev/zero left by
# a restore, must not take a listing's memory. Far above what 10,000 bundles need; a file over
# it is said once, ignored and rebuilt.
FILE_LIMIT = 256 << 20
ENTRY_LIMIT = 20_000
_NO_SIGNATURE = "none"

# (relative name, mode, size, mtime_ns, ctime_ns, inode, device): one entry, as treestat.Entry.
_Stat = Entry
_entry = stat_entry
_tree_digest = tree_digest


def now_ns() -> int:
    """The clock the two-second racy rule reads (a function, so a test can move it on instead of waiting)."""
    return time.time_ns()


# When a check started, for the racy rule: (the process's clock, the device the file system's
# own clock was read on or -1 when it was not, that reading).
Started = tuple[int, int, int]


def started_at(clock: Path | None) -> Started:
    """The racy rule's start, read before a check (or a batch of checks) begins: good for every
    check that starts after it. `clock`: the folder to read the file system's clock in (gage.bundle.fsclock)."""
    fine = now_ns()
    got = fsclock.reading(clock) if clock is not None else None
    return (fine, -1, 0) if got is None else (fine, got[0], got[1])


def settled(newest: int, entries: list[_Stat], started: Started) -> bool:
    """Whether no write after `started` can leave these entries' stat values as they are: every
    timestamp older than the file system's clock read on their device, or RACY_NS older than the
    process's clock (the module docstring says why each is enough)."""
    fine, device, reading = started
    if newest < fine - RACY_NS:
        return True
    return device >= 0 and newest < reading and all(e[6] == device for e in entries)


def _sha(data: bytes | None) -> str:
    return _NO_SIGNATURE if data is None else sha256.hexdigest(data)


def listed_entries(manifest: Manifest) -> list[str]:
    """The payload's folders and files a manifest lists, relative to `payload/`: the entries of
    a tree that checked out, besides the folder, the manifest, the signature and `payload`."""
    folders: set[str] = set()
    for f in manifest.files:
        cut = f.path.rfind("/")
        while cut > 0:
            folder = f.path[:cut]
            if folder in folders:
                break
            folders.add(folder)
            cut = folder.rfind("/")
    return [*folders, *(f.path for f in manifest.files)]


def _digest(entries: list[_Stat]) -> tuple[str, int]:
    """The key's tree part, and the newest mtime or ctime in it (for the racy guard)."""
    return _tree_digest(entries), max(max(e[3], e[4]) for e in entries)


def _proved(key: str, manifest: Manifest, seen: dict[str, os.stat_result]) -> tuple[str, int, list[str], list[_Stat]] | None:
    """The key's tree part, its newest timestamp, the payload's listed entries and the entries
    it was taken over (in gage.home.cache.rowkept.stats_at's order), if the tree at `key` is now what the check
    saw (`seen`: each entry's stat as the check took it, before reading its bytes or listing its
    folder); None when it cannot be remembered.

    The check looked at exactly the entries of a tree that checks out and nothing else (a folder
    off the manifest's plan is in `seen` too, and refuses). Each is looked at again here, one
    lstat from the bundle folder opened once: any write, truncation, replacement or rename
    since the check took its stat changes one of them (ctime cannot be set back), and an entry
    added or removed in a folder since it was listed changes that folder's. So the before and
    after of one walk prove what two more walks of the whole tree did."""
    listed = listed_entries(manifest)
    names = [".", MANIFEST, SIGNATURE, PAYLOAD, *(f"{PAYLOAD}/{rel}" for rel in listed)]
    if len(names) > ENTRY_LIMIT or len(seen) != len(names):
        return None
    try:
        before = [_entry(n, seen[n]) for n in names]
    except KeyError:
        return None
    if not stat.S_ISDIR(before[0][1]):
        return None
    try:
        dir_fd = safeopen.open_dir(key)  # the bundle folder itself, never through a symlink
    except OSError:
        return None
    try:
        stat_ = os.stat
        after = [_entry(".", os.fstat(dir_fd)), *(_entry(n, stat_(n, dir_fd=dir_fd, follow_symlinks=False)) for n in names[1:])]
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    if after != before:
        return None
    return (*_digest(after), listed, after)


def _listed_tree(dir_fd: int, top: os.stat_result, manifest: Manifest, m_st: os.stat_result, s_st: os.stat_result) -> list[_Stat]:
    """The entries of a tree that checked out, found from its manifest: one lstat each, relative
    to the open bundle folder `dir_fd` (no walk of the whole path per entry). Raises OSError."""
    stat_ = os.stat
    out = [_entry(".", top), _entry(MANIFEST, m_st), _entry(SIGNATURE, s_st)]
    out.append(_entry(PAYLOAD, stat_(PAYLOAD, dir_fd=dir_fd, follow_symlinks=False)))
    for rel in listed_entries(manifest):
        name = f"{PAYLOAD}/{rel}"
        out.append(_entry(name, stat_(name, dir_fd=dir_fd, follow_symlinks=False)))
    return out


def _read_at(dir_fd: int, name: str, limit: int) -> tuple[bytes, os.stat_result] | None:
    """A regular file's bytes and stat, opened in the folder `dir_fd`, never through a symlink;
    None for anything else. Reads the size fstat gave plus one byte (not `limit`: a buffer of
    the whole limit per read was most of the cost), so a file that grew meanwhile is a miss."""
    try:
        fd, st = safeopen.open_at(dir_fd, name)  # no link, no blocking, regular files only
    except OSError:
        return None
    try:
        if st.st_size > limit:
            return None
        data = os.read(fd, st.st_size + 1)
        return (data, st) if len(data) == st.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


Proved = tuple[str, int, list[str], list[_Stat]]


def _target(target: Stored | Path, expect_name: bool | None) -> tuple[Path, bool, str]:
    root = target.path if isinstance(target, Stored) else Path(target)
    named = expect_name if expect_name is not None else isinstance(target, Stored)
    return root, named, os.fspath(root) if root.is_absolute() else os.path.abspath(root)


def fresh_check(root: Path, key: str, named: bool, started: Started) -> tuple[Check, Proved | None, Started]:
    """A check with no cache, its proof (`_proved`) and when it started (for the racy rule, read
    by the caller before it: `started_at`): what a miss costs, wherever it runs (here, or a
    worker of gage.home.cache.checkpool)."""
    seen: dict[str, os.stat_result] = {}
    result = bundle_mod.check(root, expect_name=named, seen=seen)
    m = result.manifest
    return result, (_proved(key, m, seen) if m is not None and result.ok else None), started


def pooled_check(job: tuple[str, bool, str, Started]) -> tuple[Check, Proved | None, Started]:
    """`fresh_check` of (the bundle folder, named by its id, the cache key, the racy rule's start
    read by the parent before the pool began), as a pool's worker runs it."""
    root, named, key, started = job
    return fresh_check(Path(root), key, named, started)


class CheckCache:
    """`bundle.check` results, reused while the tree state they were made from is unchanged.

    `file`: where to keep them between commands (None: this process only), made for the
    home at `home_root`. Loaded here; `save` writes only if something changed. Safe to
    share between threads. The interface's inbox can use it as it is (`check(stored)`,
    `keep_only`, `hits`, `misses`).
    """

    def __init__(
        self, file: Path | None = None, *, home_root: Path | None = None, trusted: bool = True, clock: Path | None = None, pool: bool = True
    ) -> None:
        # `trusted`: whether the file system keeps the timestamps the key relies on
        # (gage/bundle/fstrust.py). When not, nothing is remembered or read: every check is fresh.
        self.trusted = trusted
        # Where the file system's clock is read for the racy rule (gage.bundle.fsclock): the home's
        # cache folder; None: the two-second rule alone (the folder of `file`, when there is one).
        self.clock = clock if clock is not None else (file.parent if file is not None else None)
        # Whether `check_many` may spread its misses over processes (gage.home.cache.checkpool): a
        # listing's thousands, not a landing batch's few hundred, which one core checks as fast.
        self.pool = pool
        if not trusted:
            file = None
        self.file = file
        self._home = os.path.abspath(home_root) if home_root is not None else None
        # The seals' key: the home's (gage.home.cache.sealkey), so an entry planted without it is a miss;
        # one of this process when nothing is kept on disk.
        self._key = sealkey.process_key() if file is None else sealkey.home_key(Path(self._home) if self._home is not None else file.parent.parent)
        self._entries: dict[str, list[Any]] = {}
        # The entries each check remembered in this process was proved over (`_proved`), by key:
        # a row stored beside it takes its stat values from here instead of looking again.
        # Packed (64-bit integers): 10,000 of them are held through a listing.
        self._proofs: dict[str, tuple[str, tuple[str, ...], bytes]] = {}
        # Entries whose seal this process made or already checked, by key (the entry object
        # itself: a replaced one is checked again): a listing asks for each row's digest after
        # its check, and a keyed seal costs a JSON text and a hash to check.
        self._sound: dict[str, list[Any]] = {}
        self._lock = _thread.allocate_lock()  # threading.Lock itself (the start path imports no threading)
        self._dirty = False
        self.hits = 0
        self.misses = 0
        if file is not None:
            self._load(file)

    @classmethod
    def of(cls, home: Home) -> CheckCache:
        return cls(home.cache / FILE_NAME, home_root=home.root, trusted=fstrust.timestamps_trusted(home.root), clock=home.cache)

    def _where(self, file: Path) -> tuple[Path, str]:
        """(the folder to open beneath, the file's path below it): the home when the file is in it."""
        if self._home is not None:
            rel = os.path.relpath(os.path.abspath(file), self._home)
            if not rel.startswith(".."):
                return Path(self._home), Path(rel).as_posix()
        return file.parent, file.name

    def _load(self, file: Path) -> None:
        # A derived file, opened like a stranger's: no link, no FIFO, no device, capped (a planted one costs a rebuild).
        raw = homefile.read_derived(*self._where(file), FILE_LIMIT)
        if raw is None:
            # None yet, or not a file to trust: rebuilt (in place, at the next save) as bundles are checked.
            self._dirty = os.path.lexists(file)
            return
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):
            return  # damaged: rebuilt as bundles are checked
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("home") != self._home:
            return  # another version's or another home's: never used
        entries = doc.get("entries")
        if isinstance(entries, dict):
            self._entries = entries

    def check(self, target: Stored | Path, *, expect_name: bool | None = None, parsed: Manifest | None = None) -> Check:
        """What `bundle.check(root, expect_name=...)` would say now. A `Stored` bundle (held in
        a home) must be named by its id unless `expect_name` says otherwise. `parsed`: a parse
        of this bundle's manifest the caller already made (the interface's rows), reused only
        if its bytes are the ones read now, so a hit does not parse them again."""
        root, named, key = _target(target, expect_name)
        if not self.trusted:
            self.misses += 1
            return bundle_mod.check(root, expect_name=named)
        hit = self._hit(root, key, named, parsed)
        if hit is not None:
            return hit
        self.misses += 1
        result, proved, started = fresh_check(root, key, named, started_at(self.clock))
        self._learn(key, named, result, proved, started)
        return result

    def check_many(self, targets: list[Stored]) -> list[Check | None]:
        """`check` of each of `targets`, in order; None where a check raised (the caller asks
        `check` again for that one, to meet the error itself). The misses are checked on every
        core when there are many of them (gage.home.cache.checkpool: the first listing of a
        home checks every bundle), each proved where it was checked and remembered here."""
        out: list[Check | None] = [None] * len(targets)
        misses: list[tuple[int, Path, bool, str]] = []
        for i, target in enumerate(targets):
            root, named, key = _target(target, None)
            hit = self._hit(root, key, named, None) if self.trusted else None
            if hit is not None:
                out[i] = hit
            else:
                misses.append((i, root, named, key))
        done = None
        if misses and self.trusted and self.pool:
            from gage.home.cache import checkpool

            started = started_at(self.clock)  # before any of them starts: good for all
            done = checkpool.run(pooled_check, [(os.fspath(root), named, key, started) for _i, root, named, key in misses])
        for n, (i, _root, named, key) in enumerate(misses):
            got = done[n] if done is not None else None
            if got is None:
                try:
                    out[i] = self.check(targets[i])
                except (GageError, OSError):
                    out[i] = None
                continue
            self.misses += 1
            result, proved, started = got
            self._learn(key, named, result, proved, started)
            out[i] = result
        return out

    def _hit(self, root: Path, key: str, named: bool, parsed: Manifest | None) -> Check | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None:
            return None
        hit = self._use(root, key, entry, named, parsed)
        if hit is not None:
            self.hits += 1
        return hit

    def _learn(self, key: str, named: bool, result: Check, proved: Proved | None, started: Started) -> None:
        """Remember `result` if its proof holds and nothing in it could be written again unseen (`settled`); else forget the key."""
        m = result.manifest
        with self._lock:
            if proved is not None and m is not None:
                digest, newest, listed, entries = proved
                if settled(newest, entries, started):
                    entry = [digest, _sha(m.raw), _sha(result.signature), named, _dump(result.warnings)]
                    self._entries[key] = self._sound[key] = [*entry, _seal(self._key, key, entry)]
                    stats = _packed(entries)
                    if stats is not None:
                        self._proofs[key] = (digest, tuple(listed), stats)
                    self._dirty = True
                    return
            self._proofs.pop(key, None)
            self._sound.pop(key, None)
            if self._entries.pop(key, None) is not None:
                self._dirty = True

    def _use(self, root: Path, key: str, entry: Any, named: bool, parsed: Manifest | None = None) -> Check | None:
        """The remembered check, if `entry` is one of the tree state at `root` now; else None."""
        try:
            tree, m_sha, s_sha, was_named, warnings, seal = entry
            if was_named is not named:
                return None
            if self._sound.get(key) is not entry:
                if not _holds(self._key, seal, key, entry[:5]):
                    return None
                self._sound[key] = entry
            kept = _problems(warnings)
        except (ValueError, TypeError):
            return None
        try:
            dir_fd = safeopen.open_dir(key)  # the bundle folder itself, never through a symlink
        except OSError:
            return None
        try:
            top = os.fstat(dir_fd)
            m = _read_at(dir_fd, MANIFEST, MANIFEST_LIMIT)
            s = _read_at(dir_fd, SIGNATURE, SIGNATURE_CAP)
            if m is None or s is None or _sha(m[0]) != m_sha or _sha(s[0]) != s_sha:
                return None
            manifest = parsed if parsed is not None and parsed.raw == m[0] else Manifest.parse(m[0])
            now = _tree_digest(_listed_tree(dir_fd, top, manifest, m[1], s[1]))
        except (GageError, OSError):
            return None
        finally:
            os.close(dir_fd)
        if now != tree:
            return None
        return Check(path=root, manifest=manifest, signature=s[0], warnings=kept, signature_verified=True)

    def remembered_digest(self, root: Path) -> str | None:
        """The tree digest of the check remembered for `root` (None: none is), for a row stored beside it."""
        key = os.fspath(root) if root.is_absolute() else os.path.abspath(root)
        with self._lock:
            entry = self._entries.get(key)
        if not (isinstance(entry, list) and len(entry) == 6 and isinstance(entry[0], str)):
            return None
        if self._sound.get(key) is not entry:
            if not _holds(self._key, entry[5], key, entry[:5]):
                return None
            self._sound[key] = entry
        return entry[0]

    def remembered_proof(self, root: Path) -> tuple[str, list[str], bytes] | None:
        """For a check remembered by this process (not one read from the file): its tree digest,
        the payload's listed entries and the stat values it was proved over, in the order
        gage.home.cache.rowkept.stats_at takes them (the folder, the manifest, the signature,
        `payload`, then each entry), packed as `rowkept.packed` packs them. A row stored beside the check keeps these, as
        `stats_at` would have taken them again, without a second look at 10,000 trees."""
        key = os.fspath(root) if root.is_absolute() else os.path.abspath(root)
        digest = self.remembered_digest(root)
        with self._lock:
            proof = self._proofs.get(key)
        if digest is None or proof is None or proof[0] != digest:
            return None
        return digest, list(proof[1]), proof[2]

    def keep_only(self, state: str, ids: Iterable[str]) -> None:
        """Forget the bundles of `state` that are no longer there, so the cache stays as small as the inbox."""
        keep = set(ids)
        with self._lock:
            gone = []
            for k in self._entries:
                folder, _, name = k.rpartition("/")
                if name not in keep and folder.endswith(state) and folder.rpartition("/")[2] == state:
                    gone.append(k)
            for k in gone:
                del self._entries[k]
                self._proofs.pop(k, None)
                self._sound.pop(k, None)
            self._dirty = self._dirty or bool(gone)

    def save(self) -> None:
        """Write the file if anything changed; a cache that cannot be written only costs time next run."""
        if self.file is None or not self._dirty:
            return
        with self._lock:
            doc = {"format": FORMAT, "home": self._home, "entries": self._entries}
            data = json.dumps(doc, separators=(",", ":")).encode("ascii")
            self._dirty = False
        homefile.write_derived(*self._where(self.file), data)  # skipped (not an error) when it cannot be

    def __len__(self) -> int:
        return len(self._entries)


def _packed(entries: list[_Stat]) -> bytes | None:
    """Each entry's (mode, size, mtime_ns, ctime_ns, inode, device) as 64-bit integers, in order
    (None past 64 bits: such a proof is not offered to the row index)."""
    import struct as _struct

    try:
        return _struct.pack(f"<{6 * len(entries)}q", *(v for e in entries for v in e[1:]))
    except _struct.error:
        return None


def _sealed_text(key: str, entry: list[Any]) -> bytes:
    return json.dumps([key, entry], ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _seal(secret: bytes, key: str, entry: list[Any]) -> str:
    """An entry's seal: a keyed hash (gage.home.cache.sealkey) of its folder and fields under the
    home's cache key, so an entry damaged in place (a warning added or emptied, a field of another
    type) or planted by whoever cannot read that key (crafted, or copied from another home) is a
    miss (threat-model.md, "A cache damaged in place or planted")."""
    return sealkey.seal_hex(secret, _sealed_text(key, entry))


def _holds(secret: bytes, seal: Any, key: str, entry: list[Any]) -> bool:
    try:
        return sealkey.holds_hex(secret, seal, _sealed_text(key, entry))
    except (TypeError, ValueError):  # an entry JSON cannot write again: never one gage sealed
        return False


def _problems(raw: Any) -> list[Problem]:
    if not isinstance(raw, list):
        raise ValueError("not a list")
    out = []
    for p in raw:
        stage, path, message, field = p
        known = next((s for s in PROBLEM_STAGES if s == stage), None)
        if known is None or not isinstance(message, str):
            raise ValueError("not a problem")
        if not all(x is None or isinstance(x, str) for x in (path, field)):
            raise ValueError("not a problem")
        out.append(Problem(stage=known, path=path, message=message, field=field))
    return out


def problems_of(raw: Any) -> list[Problem]:
    """Warnings kept as `dump_problems` wrote them (ValueError for anything else)."""
    return _problems(raw)


def dump_problems(ps: list[Problem]) -> list[list[str | None]]:
    return _dump(ps)


def _dump(ps: list[Problem]) -> list[list[str | None]]:
    return [[p.stage, p.path, p.message, p.field] for p in ps]
