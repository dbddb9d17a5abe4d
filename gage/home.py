"""A gage home: one person's identity, contacts, authority, journal and inbox.

Every path gage writes to lies under the home. Everything that changes the home's
state takes one exclusive lock, so concurrent gage processes (a watcher, the TUI, a
script) never interleave a move with a journal line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from . import vocab
from .errors import GageError, GageIOError, RefusedError
from .journal import Journal
from .keys import Identity, check_local_name

# The inbox's states, then every place a bundle is held (gage/vocab.py spells them).
STATES = vocab.STATES
ALL_STATES = vocab.PLACES
# How long opening a home waits for another gage process's move to finish before reading.
RECOVER_WAIT = 30.0


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
        self._rlock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def __call__(self, *, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock. With `timeout`, give up after that many seconds (LockBusy)."""
        with self._rlock:
            if self._depth == 0:
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


class Home:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).absolute()
        self.lock = _HomeLock(self.root / "lock")
        self.journal = Journal(self.root / "journal.jsonl", self.lock, index_path=self.cache / "journal-index.sqlite")
        self._identity: Identity | None = None
        # Notes from the reconcile `open` ran, not yet shown (gate.reconcile hands them on).
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
    def init(cls, root: Path | str, name: str, *, hybrid: bool = True) -> Home:
        """A new home. Its identity is hybrid (Ed25519 + ML-DSA-65); `hybrid=False` makes an
        Ed25519-only one, as homes made before hybrids are (for tests and benchmarks of them)."""
        check_local_name(name)
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
            identity = Identity.generate(name, hybrid=hybrid)
            identity.save(home.identity_path)
            home._identity = identity
            from . import atomic
            from .authority import EXAMPLE
            from .contacts import Contacts

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
    def open(cls, root: Path | str, *, reconcile: bool = True) -> Home:
        """Open an existing home. Unless `reconcile=False`, finish or undo whatever a killed gage
        process left half done first (gate.reconcile), so every reader sees each bundle, whole,
        in exactly one state: a bundle a kill left under the staging name is back in pending
        before anything lists it (spec/gate.md, "Crash states")."""
        home = cls(root)
        try:
            if not home.root.is_dir():
                raise GageIOError("no gage home here: run `gage init --name NAME` first", path=str(home.root))
            if not home.identity_path.exists() and not home.identity_path.is_symlink():
                raise GageIOError("this folder has no gage identity: run `gage init --name NAME` first", path=str(home.root))
            home.ensure_layout()
        except OSError as exc:
            raise GageIOError(f"cannot open the home: {exc.strerror or exc}", path=str(home.root)) from exc
        if reconcile:
            home.recover()
        return home

    def recover(self, *, timeout: float = RECOVER_WAIT) -> list[str]:
        """Run gate.reconcile if the lock comes free within `timeout` seconds; keep its notes
        in `self.reconciled`. A home this process may not write (a read-only copy) is
        read as it is."""
        from .gate import reconcile

        try:
            notes = reconcile(self, timeout=timeout)
        except LockBusy:
            return []
        except (GageIOError, OSError):
            return []  # no write access (the lock cannot be opened): read what is there
        self.reconciled.extend(notes)
        return notes

    def take_reconciled(self) -> list[str]:
        notes, self.reconciled = self.reconciled, []
        return notes

    def check_files(self) -> list[GageError]:
        """Load every home file (identity, contacts, authority, settings, journal) once, and return
        what is wrong with each, as errors naming the file: for a caller (the interface) that
        must show a damaged home rather than fail on it later."""
        from . import authority, settings
        from .contacts import Contacts

        loaders = (
            lambda: Identity.load(self.identity_path),
            lambda: Contacts.load(self.contacts_path),
            lambda: authority.load(self.authority_path, None),
            lambda: settings.load(self),
            self.journal.check_readable,
        )
        problems: list[GageError] = []
        for load in loaders:
            try:
                load()
            except GageError as exc:
                problems.append(exc)
            except OSError as exc:
                problems.append(GageIOError(exc.strerror or str(exc), path=str(exc.filename or self.root)))
        return problems

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = Identity.load(self.identity_path)
        return self._identity
