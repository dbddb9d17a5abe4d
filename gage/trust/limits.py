"""The receiver's limits (spec/settings.md): what one bundle may hold, and how much of pending
keys that are not confirmed contacts may take. Checked before anything is written, and again
under the lock on the copy, by the one import path (gage.inbox.store)."""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path

from gage import bundle as bundle_mod
from gage.format.errors import GageError
from gage.format.keys import key_shown, verify_manifest_signature
from gage.format.manifest import Manifest, is_id
from gage.format.signing import signature_len
from gage.home import settings as settings_mod
from gage.home.contacts import Contacts
from gage.home.layout import Home
from gage.home.settings import LimitError
from gage.trust.keytrust import key_trust


def declared_bytes(m: Manifest) -> int:
    """A bundle's size as every limit counts it: manifest, signature and declared payload."""
    return len(m.raw) + signature_len(m.sender.key) + m.total_size


def _over(home: Home, what: str, setting: str, limit: int, need: int, advice: str = "") -> LimitError:
    where = settings_mod.path_of(home)
    highest = settings_mod.LIMITS[setting][2]
    raise_it = (
        f"To take it, raise the limit in {where}: [limits] {setting} = {need}"
        if need <= highest
        else f"This home cannot take it: [limits] {setting} in {where} goes up to {highest}"
    )
    return LimitError(
        f"{what}, over this home's limit of {limit} (limits.{setting}); nothing was imported. {advice}{raise_it}",
        setting=f"limits.{setting}",
        limit=limit,
    )


def check_limits(home: Home, m: Manifest, limits: settings_mod.Limits) -> None:
    """Files, path length and total bytes of one bundle, from its manifest alone."""
    short = m.id[:12]
    if len(m.files) > limits.max_files:
        raise _over(home, f"bundle {short} lists {len(m.files)} files", "max_files", limits.max_files, len(m.files))
    longest = max((len(f.path.encode("utf-8")) for f in m.files), default=0)
    if longest > limits.max_path_bytes:
        i = next(i for i, f in enumerate(m.files) if len(f.path.encode("utf-8")) == longest)
        what = f"bundle {short} has a path of {longest} bytes (files[{i}].path)"
        raise _over(home, what, "max_path_bytes", limits.max_path_bytes, longest)
    size = declared_bytes(m)
    if size > limits.max_bundle_bytes:
        raise _over(home, f"bundle {short} holds {size} bytes", "max_bundle_bytes", limits.max_bundle_bytes, size)


def signature_of(root: Path) -> bytes | None:
    sig, _problem = bundle_mod.read_signature(root)
    return sig


def _verifies(m: Manifest, sig: bytes | None) -> bool:
    """Whether `sig` is the signature of the key `m` names. Until it is, that key is a claim:
    anyone can write a contact's key into a manifest, and must not escape the limits by it."""
    if sig is None:
        return False
    try:
        verify_manifest_signature(m.sender.key, m.raw, sig)
    except GageError:
        return False
    return True


def _pending_facts(path: Path) -> tuple[bytes, int, bool] | None:
    """What the bundle at `path` in pending counts: (key, declared bytes, signed by it), or None
    for what is no bundle gage could have put there (nothing to count)."""
    try:
        _raw, m = bundle_mod.read_manifest(path)
    except (GageError, OSError):
        return None
    return (m.sender.key, declared_bytes(m), _verifies(m, signature_of(path)))


_Counted = list[tuple[bytes, bool, int, int]]  # (key, signed by it, bundles, bytes)


class _Sums:
    """Pending as last counted in this process: its bundles summed by (key, signed by it), and
    the fingerprint of what was summed: the sum of a keyed digest of each manifest's name and
    stat values (device, inode, size, mtime, ctime; a ctime cannot be set back, so a copy
    changed in place differs). And, for when pending changed, each bundle's facts by its digest
    in three arrays, 20 bytes a bundle (no object per bundle): then only what is new or changed
    is read again, not all of pending."""

    __slots__ = ("count", "digests", "fingerprint", "groups", "kinds", "sizes", "which")

    def __init__(self) -> None:
        self.count = 0
        self.fingerprint = 0
        self.groups: dict[tuple[bytes, bool], list[int]] = {}
        self.kinds: list[tuple[bytes, bool] | None] = [None]  # what `which` points at: 0 for no bundle to count
        self.digests = array("Q")  # each bundle's digest, its low 64 bits, sorted
        self.which = array("I")
        self.sizes = array("Q")

    def add(self, digest: int, facts: tuple[bytes, int, bool] | None, *, sort: bool = True) -> None:
        self.count += 1
        self.fingerprint = (self.fingerprint + digest) % _MOD
        kind, size = 0, 0
        if facts is not None:
            key, size, signed = facts
            one = self.groups.get((key, signed))
            if one is None:
                one = self.groups[(key, signed)] = [0, 0, len(self.kinds)]
                self.kinds.append((key, signed))
            one[0] += 1
            one[1] += size
            kind = one[2]
        low = digest & _LOW
        at = bisect_left(self.digests, low) if sort else len(self.digests)
        self.digests.insert(at, low)
        self.which.insert(at, kind)
        self.sizes.insert(at, size)

    def sort(self) -> None:
        """Into digest order, after `add(..., sort=False)` (a whole pending read at once)."""
        order = sorted(range(len(self.digests)), key=self.digests.__getitem__)
        self.digests = array("Q", [self.digests[i] for i in order])
        self.which = array("I", [self.which[i] for i in order])
        self.sizes = array("Q", [self.sizes[i] for i in order])

    def known(self, digest: int) -> tuple[bool, tuple[bytes, int, bool] | None]:
        """Whether the bundle whose manifest has this digest was counted here, and its facts."""
        low = digest & _LOW
        at = bisect_left(self.digests, low)
        if at == len(self.digests) or self.digests[at] != low:
            return False, None
        kind = self.kinds[self.which[at]]
        return True, (None if kind is None else (kind[0], self.sizes[at], kind[1]))

    def counted(self) -> _Counted:
        return [(key, signed, n, size) for (key, signed), (n, size, _kind) in self.groups.items()]

    def copy(self) -> _Sums:
        """What `known` reads, copied (the sums themselves are not)."""
        out = _Sums()
        out.kinds = list(self.kinds)
        out.digests, out.which, out.sizes = array("Q", self.digests), array("I", self.which), array("Q", self.sizes)
        return out


_MOD = 1 << 128
_LOW = (1 << 64) - 1
_FP_KEY = secrets.token_bytes(16)  # per process: a fingerprint no file in pending can be made to match
# Per pending folder (its device and inode: two homes in one process never share one). Keeps a
# long-running watcher or a long fetch from reading and verifying all of pending at each batch:
# only when the fingerprint of pending's manifests differs from what was summed (a bundle
# decided, removed or changed by anyone) is pending counted again, and then only a manifest
# not counted before (new, or changed: its digest differs) is read.
_SUMS: dict[tuple[int, int], _Sums] = {}
_SUMS_LOCK = threading.Lock()


def _digest(name: str, st: os.stat_result) -> int:
    values = f"{name}/{st.st_dev}/{st.st_ino}/{st.st_size}/{st.st_mtime_ns}/{st.st_ctime_ns}".encode("utf-8", "surrogateescape")
    return int.from_bytes(hashlib.blake2b(values, digest_size=16, key=_FP_KEY).digest(), "big")


def _manifests(dfd: int) -> Iterator[tuple[str, os.stat_result]]:
    """Each bundle name in the pending folder open at `dfd`, with its manifest's stat values;
    one at a time, never a list of them all."""
    with os.scandir(dfd) as it:
        for entry in it:
            if is_id(entry.name):
                try:
                    yield entry.name, os.stat(f"{entry.name}/{bundle_mod.MANIFEST}", dir_fd=dfd, follow_symlinks=False)
                except OSError:
                    continue  # no manifest to count


def _pending_sums(d: Path) -> tuple[tuple[int, int] | None, _Sums, _Counted]:
    """The sums of pending now: those kept, when the fingerprint of pending's manifests is theirs;
    else pending counted again, reading only the manifests whose digest was not counted before.
    With the folder's key (where they are kept), and what they hold now, taken in the same
    breath as the fingerprint was compared."""
    try:
        dfd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return None, _Sums(), []
    try:
        st = os.fstat(dfd)
        where = (st.st_dev, st.st_ino)
        count = fingerprint = 0
        for name, mst in _manifests(dfd):
            count, fingerprint = count + 1, (fingerprint + _digest(name, mst)) % _MOD
        with _SUMS_LOCK:
            kept = _SUMS.get(where)
            if kept is not None and (kept.count, kept.fingerprint) == (count, fingerprint):
                return where, kept, kept.counted()
            before = kept.copy() if kept is not None else None  # read below outside the lock, while others may add
        sums = _Sums()
        for name, mst in _manifests(dfd):
            digest = _digest(name, mst)
            held, facts = before.known(digest) if before is not None else (False, None)
            sums.add(digest, facts if held else _pending_facts(d / name), sort=False)
        sums.sort()
    finally:
        os.close(dfd)
    with _SUMS_LOCK:
        if len(_SUMS) >= 64:
            _SUMS.clear()
        _SUMS[where] = sums
        return where, sums, sums.counted()


def check_pending(home: Home, m: Manifest, sig: bytes | None, limits: settings_mod.Limits) -> None:
    """Bundles and bytes in `inbox/pending` from keys that are not confirmed contacts.

    Counted per key (`pending_per_key`, `pending_bytes_per_key`) and for all of them together
    (`pending_unconfirmed`, `pending_unconfirmed_bytes`: keys cost nothing to make, so a
    stranger could otherwise fill pending with one key per bundle). A bundle a confirmed
    contact signed is never counted nor refused. What a person accepts or rejects leaves
    pending and frees its place.
    """
    PendingTally(home, limits).check(m, sig)


class PendingTally:
    """`check_pending` for many bundles at once (a batch of imports): pending is counted once,
    and each bundle the batch lands is added with `add`, so the next one is counted against
    it exactly as a separate import would count it against what it found in pending.

    What it holds is sums per key and for all keys, and the bundles this tally was given with
    `add` (a batch's, bounded by the batch), never an entry per bundle in pending."""

    def __init__(self, home: Home, limits: settings_mod.Limits) -> None:
        self.home, self.limits = home, limits
        self.contacts = Contacts.load(home.contacts_path)
        self._memo: dict[bytes, bool] = {}
        self._pending = home.state_dir("pending")
        # The bundles added (by id): (key, declared bytes, signed by it); the counted ones summed beside them.
        self._added: dict[str, tuple[bytes, int, bool]] = {}
        self._all = [0, 0]
        self._per_key: dict[bytes, list[int]] = {}
        self._where, self._sums, counted = _pending_sums(self._pending)
        for key, signed, n, size in counted:
            self._sum(key, signed, n, size)

    def _trusted(self, key: bytes) -> bool:
        """A key the ceremony confirmed and no statement retired: the one trust function's answer."""
        if key not in self._memo:
            self._memo[key] = key_trust(self.home, self.contacts, key).trusted
        return self._memo[key]

    def _counted(self, facts: tuple[bytes, int, bool]) -> bool:
        key, _size, signed = facts
        return not (signed and self._trusted(key))

    def _sum(self, key: bytes, signed: bool, n: int, size: int) -> None:
        if self._counted((key, size, signed)):
            self._all[0] += n
            self._all[1] += size
            one = self._per_key.setdefault(key, [0, 0])
            one[0] += n
            one[1] += size

    def _held(self, bid: str) -> tuple[bytes, int, bool] | None:
        """What the bundle `bid` already counts here: added to this tally, or in pending (read)."""
        added = self._added.get(bid)
        if added is not None:
            return added
        if not os.path.lexists(self._pending / bid / bundle_mod.MANIFEST):
            return None  # the usual answer, for a bundle new to this home: one failed stat
        return _pending_facts(self._pending / bid)

    def add(self, m: Manifest, signed: bool, landed: Path | None = None) -> None:
        """`m` has landed in pending (at `landed`), its signature checked (`signed`): count it for
        the bundles after it, and add it to the sums kept for pending, as if read there."""
        if m.id in self._added:
            return  # already counted (the same id twice in a batch lands once)
        facts = (m.sender.key, declared_bytes(m), signed)
        self._added[m.id] = facts
        self._sum(facts[0], signed, 1, facts[1])
        if landed is not None:
            try:
                st = os.stat(landed / bundle_mod.MANIFEST, follow_symlinks=False)
            except OSError:
                return
            digest = _digest(landed.name, st)
            with _SUMS_LOCK:
                # Only into the sums this tally counted from, if they are still the ones kept:
                # sums counted since (by another tally) read pending, this bundle with it or not.
                if self._where is not None and _SUMS.get(self._where) is self._sums:
                    self._sums.add(digest, facts)

    def check(self, m: Manifest, sig: bytes | None, *, signed: bool | None = None) -> None:
        """Raise LimitError if `m` would take pending over a limit; see `check_pending`.
        `signed`: whether `sig` verifies, when a check of the same bytes already said so."""
        if self._trusted(m.sender.key) and (signed if signed is not None else _verifies(m, sig)):
            return
        all_n, all_bytes = self._all
        key_n, key_bytes = self._per_key.get(m.sender.key, (0, 0))
        same = self._held(m.id)
        if same is not None and self._counted(same):  # the bundle itself is never counted against itself
            all_n, all_bytes = all_n - 1, all_bytes - same[1]
            if same[0] == m.sender.key:
                key_n, key_bytes = key_n - 1, key_bytes - same[1]
        _refuse_over(self.home, m, self.limits, key_n, key_bytes, all_n, all_bytes)


def _refuse_over(home: Home, m: Manifest, limits: settings_mod.Limits, key_n: int, key_bytes: int, all_n: int, all_bytes: int) -> None:
    size = declared_bytes(m)
    shown = key_shown(m.sender.key)  # a hybrid key by its fingerprint: its 3984 characters would bury the message
    who = shown if shown.startswith("hybrid key") else f"key {shown}"
    advice = (
        "Decide on what is in pending (accept or reject), confirm the sender with `gage pair` if you know them "
        "(a confirmed contact's bundles are not counted), or wait. "
    )
    if key_n + 1 > limits.pending_per_key:
        what = f"{who} is not a confirmed contact and already has {key_n} bundles in pending"
        raise _over(home, what, "pending_per_key", limits.pending_per_key, key_n + 1, advice)
    if key_bytes + size > limits.pending_bytes_per_key:
        what = f"{who} is not a confirmed contact and has {key_bytes} bytes in pending; with this bundle ({size}) that is {key_bytes + size}"
        raise _over(home, what, "pending_bytes_per_key", limits.pending_bytes_per_key, key_bytes + size, advice)
    if all_n + 1 > limits.pending_unconfirmed:
        what = f"keys that are not confirmed contacts already have {all_n} bundles in pending"
        raise _over(home, what, "pending_unconfirmed", limits.pending_unconfirmed, all_n + 1, advice)
    if all_bytes + size > limits.pending_unconfirmed_bytes:
        what = f"keys that are not confirmed contacts have {all_bytes} bytes in pending; with this bundle ({size}) that is {all_bytes + size}"
        raise _over(home, what, "pending_unconfirmed_bytes", limits.pending_unconfirmed_bytes, all_bytes + size, advice)
