"""A gage home: one person's identity, contacts, authority, journal and inbox.

Every path gage writes to lies under the home. Everything that changes the home's
state takes one exclusive lock, so concurrent gage processes (a watcher, the TUI, a
script) never interleave a move with a journal line.
"""

from __future__ import annotations

import _thread
import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gage.format import vocab
from gage.format.errors import GageIOError, RefusedError
from gage.format.keys import Identity, check_local_name
from gage.home.identity import load_identity, save_identity
from gage.home.journal.log import Journal

# The inbox's states, then every place a bundle is held (gage/format/vocab.py spells them).
STATES = vocab.STATES
ALL_STATES = vocab.PLACES
# Under the staging folder (tmp/): the gate's one staging folder, and the prefixes of the
# scratch copies an import, a build, a discard and a key statement's bundle make, which
# reconcile removes once they are stale (a kill can leave any of them).
STAGING_DIR = "accepting"
SCRATCH_PREFIXES = ("import-", "build-", "discard-", "statement-")


def default_home() -> Path:
    env = os.environ.get("GAGE_HOME")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "gage"


class LockBusy(GageIOError):
    """The home lock was not free within the time given (another gage process is moving a bundle)."""


def _flock(fd: int, timeout: float | None) -> None:
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockBusy("the home is locked by another gage process") from None
            time.sleep(0.01)


class _HomeLock:
    """flock on the home's lock file, re-entrant within one process (threads included)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # What threading.RLock() makes (CPython's C lock), without importing threading on
        # every command's path (start-up).
        self._rlock = _thread.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def __call__(self, *, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock. With `timeout`, give up after that many seconds in all (LockBusy),
        whether another process or another thread of this one holds it: the wait for this
        process's own lock and the wait for the file lock share one deadline."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        if not self._rlock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            raise LockBusy("the home is locked by another gage task in this process")
        try:
            if self._depth == 0:
                if deadline is not None:
                    timeout = max(0.0, deadline - time.monotonic())
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
                except OSError as exc:
                    raise GageIOError(f"cannot open lock: {exc.strerror}", path=str(self.path)) from exc
                try:
                    _flock(fd, timeout)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None
        finally:
            self._rlock.release()


class Home:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).absolute()
        self.lock = _HomeLock(self.root / "lock")
        self.journal = Journal(self.root / "journal.jsonl", self.lock, index_path=self.cache / "journal-index.sqlite")
        self._identity: Identity | None = None
        # A passphrase-protected key (gage/home/unlock.py): how to ask for the passphrase, and
        # the identity once unlocked, for the rest of this process.
        self.passphrase_asker: Callable[[str], bytes] | None = None
        self._unlocked: Identity | None = None
        # Notes from the reconcile that opening the home ran, not yet shown (gage.inbox.opening).
        self.reconciled: list[str] = []

    # --- layout ----------------------------------------------------------------------

    @property
    def identity_path(self) -> Path:
        return self.root / "identity.json"

    @property
    def contacts_path(self) -> Path:
        return self.root / "contacts.toml"

    @property
    def authority_path(self) -> Path:
        return self.root / "authority.toml"

    @property
    def staging(self) -> Path:
        """Scratch space on the same file system as the inbox, so renames out of it are atomic."""
        return self.root / "tmp"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def state_dir(self, state: vocab.Place) -> Path:
        if state == "outbox":
            return self.root / "outbox"
        if state not in STATES:
            raise ValueError(state)
        return self.root / "inbox" / state

    def exists(self) -> bool:
        return self.identity_path.exists()

    # --- making and opening ----------------------------------------------------------

    @classmethod
    def init(cls, root: Path | str, name: str, *, passphrase: bytes | None = None, hybrid: bool = True) -> Home:
        """A new home. Its identity is hybrid (Ed25519 + ML-DSA-65); `hybrid=False` makes an
        Ed25519-only one, as homes made before hybrids are (for tests and benchmarks of them).
        `passphrase`: seal the new key with it (spec/keys.md section 11); derived before
        anything is made, so a bad one leaves no home behind."""
        check_local_name(name)
        identity = Identity.generate(name, hybrid=hybrid)
        if passphrase is not None:
            identity = identity.protect(passphrase)
        home = cls(root)
        if home.identity_path.exists():
            raise RefusedError(
                "an identity already exists in this home; gage will not replace it (remove the home to start over)",
                path=str(home.identity_path),
            )
        try:
            home.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(home.root, 0o700)
            home.ensure_layout()
        except OSError as exc:
            raise GageIOError(f"cannot create home: {exc.strerror}", path=str(home.root)) from exc
        with home.lock():
            save_identity(identity, home.identity_path)
            home._identity = identity
            home._unlocked = identity if passphrase is not None else None
            from gage.bundle import atomic
            from gage.home.authority import EXAMPLE
            from gage.home.contacts import Contacts

            if not home.contacts_path.exists():
                Contacts(home.contacts_path).save()
            if not home.authority_path.exists():
                atomic.write_bytes(home.authority_path, EXAMPLE.encode("utf-8"), 0o600)
            home.journal.append("init", name=name, key=identity.key_text)
        return home

    def ensure_layout(self) -> None:
        (self.root / "inbox").mkdir(exist_ok=True, mode=0o700)
        for d in (*(self.state_dir(s) for s in ALL_STATES), self.staging, self.cache):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)

    @classmethod
    def open(cls, root: Path | str) -> Home:
        """Open an existing home, as it is. Finishing what a killed gage process left half done
        is policy, not storage: gage.inbox.opening.open_home does both, and every command uses it."""
        home = cls(root)
        try:
            if not home.root.is_dir():
                raise GageIOError("no gage home here: run `gage init --name NAME` first", path=str(home.root))
            if not home.identity_path.exists() and not home.identity_path.is_symlink():
                raise GageIOError("this folder has no gage identity: run `gage init --name NAME` first", path=str(home.root))
            home.ensure_layout()
        except OSError as exc:
            raise GageIOError(f"cannot open the home: {exc.strerror or exc}", path=str(home.root)) from exc
        return home

    def refuse_inside(self, folder: Path, what: str) -> None:
        """`folder` is somewhere gage writes bundles for others (a drop folder, `-o DIR`): one inside
        this home (its inbox, above all) would put a bundle where only the import and the gate
        may, so it is refused before anything is written."""
        try:
            inside = Path(folder).resolve().is_relative_to(self.root.resolve())
        except OSError:
            inside = False
        if inside:
            raise RefusedError(
                f"that folder is inside this gage home: {what} there would land around the import and the gate. "
                "Give a folder outside it",
                path=str(folder),
            )

    def take_reconciled(self) -> list[str]:
        notes, self.reconciled = self.reconciled, []
        return notes

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = load_identity(self.identity_path)
        return self._identity
