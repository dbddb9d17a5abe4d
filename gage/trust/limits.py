"""The receiver's limits (spec/settings.md): what one bundle may hold, and how much of pending
keys that are not confirmed contacts may take. Checked before anything is written, and again
under the lock on the copy, by the one import path (gage.inbox.store)."""

from __future__ import annotations

import os
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


# Pending bundles seen so far, by where their manifest is and its stat: (key, bytes, signed by
# it). Keyed on the device and inode (so two homes in one process never share an entry) and
# on size, mtime and ctime (a copy changed in place, even with its mtime set back, is read
# again: a ctime cannot be set back). Keeps a long-running watcher or server from re-reading
# pending. What a bundle's key is to this home is never cached: key_trust answers it afresh.
_PENDING_CACHE: dict[tuple[str, int, int, int, int, int], tuple[bytes, int, bool]] = {}
# One copy of each sender's key for all the bundles of theirs the cache holds: each manifest
# parsed gives its own copy (1,984 bytes for a hybrid key), and a fetch of 10,000 from one
# sender otherwise grew by 20 MB of the same key.
_KEYS: dict[bytes, bytes] = {}


def _kept(facts: tuple[bytes, int, bool]) -> tuple[bytes, int, bool]:
    """`facts` as the cache holds them: the key shared, the cache bounded."""
    if len(_PENDING_CACHE) > 100_000:
        _PENDING_CACHE.clear()
        _KEYS.clear()
    key, size, signed = facts
    return (_KEYS.setdefault(key, key), size, signed)


def _remember(path: Path, facts: tuple[bytes, int, bool]) -> None:
    """What a bundle just landed at `path` counts, kept as if read there: the next listing of
    pending (the next batch's) does not read and verify it again."""
    try:
        st = os.stat(path / bundle_mod.MANIFEST, follow_symlinks=False)
    except OSError:
        return
    _PENDING_CACHE[(path.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)] = _kept(facts)


def _pending_facts(path: Path) -> tuple[bytes, int, bool] | None:
    try:
        st = os.stat(path / bundle_mod.MANIFEST, follow_symlinks=False)
    except OSError:
        return None
    ck = (path.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _PENDING_CACHE.get(ck)
    if hit is not None:
        return hit
    try:
        _raw, m = bundle_mod.read_manifest(path)
    except (GageError, OSError):
        return None  # not a bundle gage could have put there: nothing to count
    facts = _kept((m.sender.key, declared_bytes(m), _verifies(m, signature_of(path))))
    _PENDING_CACHE[ck] = facts
    return facts


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
    """`check_pending` for many bundles at once (a batch of imports): pending is listed once,
    and each bundle the batch lands is added with `add`, so the next one is counted against
    it exactly as a separate import would count it against what it found in pending."""

    def __init__(self, home: Home, limits: settings_mod.Limits) -> None:
        self.home, self.limits = home, limits
        self.contacts = Contacts.load(home.contacts_path)
        self._memo: dict[bytes, bool] = {}
        # Per pending id: (key, declared bytes, signed by it); the counted ones summed beside them.
        self._held: dict[str, tuple[bytes, int, bool]] = {}
        self._all = [0, 0]
        self._per_key: dict[bytes, list[int]] = {}
        d = home.state_dir("pending")
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            names = []
        for name in names:
            if is_id(name):
                facts = _pending_facts(d / name)
                if facts is not None:
                    self._count(name, facts)

    def _trusted(self, key: bytes) -> bool:
        """A key the ceremony confirmed and no statement retired: the one trust function's answer."""
        if key not in self._memo:
            self._memo[key] = key_trust(self.home, self.contacts, key).trusted
        return self._memo[key]

    def _counted(self, facts: tuple[bytes, int, bool]) -> bool:
        key, _size, signed = facts
        return not (signed and self._trusted(key))

    def _count(self, name: str, facts: tuple[bytes, int, bool]) -> None:
        if name in self._held:
            return  # already counted (the same id twice in a batch lands once)
        self._held[name] = facts
        if self._counted(facts):
            key, size, _signed = facts
            self._all[0] += 1
            self._all[1] += size
            one = self._per_key.setdefault(key, [0, 0])
            one[0] += 1
            one[1] += size

    def add(self, m: Manifest, signed: bool, landed: Path | None = None) -> None:
        """`m` has landed in pending (at `landed`), its signature checked (`signed`): count it for
        the bundles after it, and remember its facts as `_pending_facts` would read them."""
        facts = (m.sender.key, declared_bytes(m), signed)
        self._count(m.id, facts)
        if landed is not None:
            _remember(landed, facts)

    def check(self, m: Manifest, sig: bytes | None, *, signed: bool | None = None) -> None:
        """Raise LimitError if `m` would take pending over a limit; see `check_pending`.
        `signed`: whether `sig` verifies, when a check of the same bytes already said so."""
        if self._trusted(m.sender.key) and (signed if signed is not None else _verifies(m, sig)):
            return
        all_n, all_bytes = self._all
        key_n, key_bytes = self._per_key.get(m.sender.key, (0, 0))
        same = self._held.get(m.id)
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
