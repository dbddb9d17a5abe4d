"""How this home proves who it is to its own relay: a credential kept in a file, never in a URL.

A relay URL is printed, journaled, put in cards and directory records; a secret inside it
(`nats://bob:pw@host`) was published with it. So a URL with a user or password is
refused wherever gage takes one, and a credential is one of three files, each 0600 or
stricter (readable by its owner alone) or refused:

- a NATS creds file (a user JWT and its nkey seed: decentralized auth), `--creds FILE`;
- an nkey seed file (the relay's configuration holds the public key), `--nkey FILE`;
- a user name with a file holding the password, `--user NAME --password-file FILE`.

settings.toml keeps their paths, never their contents (spec/settings.md). Nothing here
imports nats: the CLI checks a credential before anything is loaded or sent.
"""

from __future__ import annotations

import importlib.util
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gage.format.errors import UsageError
from gage.home.settings import relay_url_problem

# A password file is one line; a creds file a few kilobytes; anything bigger is not one.
FILE_LIMIT = 64 * 1024


def check_url(url: str) -> str:
    """`url` as given, or a UsageError naming the fix when it carries a user or password."""
    problem = relay_url_problem(url)
    if problem is not None:
        raise UsageError(problem)
    return url


@dataclass(frozen=True)
class Credentials:
    """One of the three forms; paths only, read when connecting."""

    creds: str | None = None
    nkey: str | None = None
    user: str | None = None
    password_file: str | None = None

    def __post_init__(self) -> None:
        forms = (self.creds is not None) + (self.nkey is not None) + (self.user is not None or self.password_file is not None)
        if forms > 1:
            raise UsageError("give one kind of relay credential: --creds FILE, --nkey FILE, or --user NAME with --password-file FILE")
        if (self.user is None) != (self.password_file is None):
            raise UsageError("--user and --password-file go together: the name, and a file (0600) holding the password")
        if self.user is not None and (not self.user or any(c.isspace() or not c.isprintable() for c in self.user)):
            raise UsageError("--user must be a name without spaces or control characters")

    @property
    def empty(self) -> bool:
        return self.creds is None and self.nkey is None and self.user is None

    def __bool__(self) -> bool:
        return not self.empty

    def files(self) -> list[tuple[str, str]]:
        """(option, path) of every file this credential reads."""
        named = [("--creds", self.creds), ("--nkey", self.nkey), ("--password-file", self.password_file)]
        return [(opt, p) for opt, p in named if p is not None]

    def check(self) -> Credentials:
        """Each file exists, is a regular file, and is readable by its owner alone (0600 or stricter)."""
        for opt, p in self.files():
            private_file(p, opt)
        return self

    def absolute(self) -> Credentials:
        """The same, with absolute paths (what settings.toml keeps: a path that means one file)."""
        def a(p: str | None) -> str | None:
            return None if p is None else str(Path(p).expanduser().absolute())

        return Credentials(creds=a(self.creds), nkey=a(self.nkey), user=self.user, password_file=a(self.password_file))

    def nats_options(self) -> dict[str, Any]:
        """nats-py's connect options for this credential (files checked again: they may have changed)."""
        self.check()
        if self.creds is not None:
            _need_nkeys("--creds")
            return {"user_credentials": self.creds}
        if self.nkey is not None:
            _need_nkeys("--nkey")
            return {"nkeys_seed": self.nkey}
        if self.user is not None and self.password_file is not None:
            return {"user": self.user, "password": read_password(self.password_file)}
        return {}


Creds = Credentials | str | None
"""What the relay functions take: a Credentials, a creds file's path (the older form), or none."""


def as_credentials(creds: Creds) -> Credentials:
    if creds is None:
        return Credentials()
    if isinstance(creds, str):
        return Credentials(creds=creds)
    return creds


def _need_nkeys(opt: str) -> None:
    # nats-py imports nkeys only when it signs the server's nonce, deep in the connect: a missing
    # one was a ModuleNotFoundError traceback there, not a clear error, so it is looked for first.
    try:
        found = importlib.util.find_spec("nkeys") is not None
    except (ImportError, ValueError):  # a module entry of None, or one without a spec
        found = False
    if not found:
        raise UsageError(f"{opt} needs the nkeys package, part of the relay extra: pip install 'gage-bundles[relay]'")


def private_file(path: str, opt: str) -> os.stat_result:
    """A regular file only its owner may read or write, or a UsageError naming it and the fix."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{opt} {path}: cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{opt} {path}: not a regular file")
    if st.st_mode & 0o077:
        raise UsageError(
            f"{opt} {path}: others may read it (mode {stat.S_IMODE(st.st_mode):04o}); a relay credential must be "
            f"readable by its owner alone: chmod 600 {path}"
        )
    if st.st_size > FILE_LIMIT:
        raise UsageError(f"{opt} {path}: over {FILE_LIMIT} bytes, not a credential file")
    return st


def read_password(path: str) -> str:
    """The password in a password file: its first line, without the line end."""
    private_file(path, "--password-file")
    try:
        with open(path, "rb") as f:
            raw = f.read(FILE_LIMIT + 1)
    except OSError as exc:
        raise UsageError(f"--password-file {path}: cannot read it: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--password-file {path}: not UTF-8 text") from None
    lines = text.splitlines()
    password = lines[0] if lines else ""
    if not password:
        raise UsageError(f"--password-file {path}: empty; it holds the password on its first line")
    return password


def make_nkey(path: str) -> str:
    """A new user nkey: its seed written to `path` (0600, a new file, never one overwritten); its public key."""
    _need_nkeys("gage relay nkey")
    import nkeys  # type: ignore[import-untyped]

    from gage.bundle import atomic

    seed: bytes = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    public: str = nkeys.from_seed(bytearray(seed)).public_key.decode()
    try:
        atomic.write_new(Path(path), seed + b"\n", mode=0o600)
    except FileExistsError:
        raise UsageError(f"{path} exists: an nkey seed is never overwritten; give a new file name") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    return public
