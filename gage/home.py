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
from collections.abc import Iterator
from pathlib import Path

from .errors import GageIOError, RefusedError
from .journal import Journal
from .keys import Identity, check_local_name

STATES = ("pending", "accepted", "rejected")
ALL_STATES = (*STATES, "outbox")


def default_home() -> Path:
    env = os.environ.get("GAGE_HOME")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "gage"


class _HomeLock:
    """flock on the home's lock file, re-entrant within one process (threads included)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._rlock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._rlock:
            if self._depth == 0:
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError as exc:
                    raise GageIOError(f"cannot open lock: {exc.strerror}", path=str(self.path)) from exc
                fcntl.flock(fd, fcntl.LOCK_EX)
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
        self.journal = Journal(self.root / "journal.jsonl", self.lock)
        self._identity: Identity | None = None

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

    def state_dir(self, state: str) -> Path:
        if state == "outbox":
            return self.root / "outbox"
        if state not in STATES:
            raise ValueError(state)
        return self.root / "inbox" / state

    def exists(self) -> bool:
        return self.identity_path.exists()

    # --- making and opening ----------------------------------------------------------

    @classmethod
    def init(cls, root: Path | str, name: str) -> Home:
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
            identity = Identity.generate(name)
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
    def open(cls, root: Path | str) -> Home:
        home = cls(root)
        if not home.root.is_dir():
            raise GageIOError("no gage home here: run `gage init --name NAME` first", path=str(home.root))
        if not home.identity_path.exists():
            raise GageIOError("this folder has no gage identity: run `gage init --name NAME` first", path=str(home.root))
        home.ensure_layout()
        return home

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = Identity.load(self.identity_path)
        return self._identity
