"""The people file of a shared relay (spec/relay.md section 8.4): who logs in, with which mailbox
and handle, and how much each may keep.

Everything in it ends up in a file nats-server reads, so every value is checked here, whole
(`fullmatch`: a `$` would let a name end in a newline), before anything is written; an error
names the line of the file it comes from. A password file is read and hashed here, so the
configuration never holds a password.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gage.format.errors import MalformedError, UsageError
from gage.home.sealing import is_mailbox_address

OPERATOR_USER = "gage-operator"
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
HANDLE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
NKEY_USER = re.compile(r"U[A-Z2-7]{55}")
BCRYPT = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")
_SIZE = re.compile(r"(\d+)\s*(|B|KiB|MiB|GiB|TiB|K|M|G|T)", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}

# What each person may keep unless the people file says otherwise. JetStream reserves a stream's
# whole byte limit when the stream is made, so these are what one disk must hold per person
# (a mailbox and its bucket): 2 x 256 MiB, or about 200 people on 100 GiB.
MAILBOX_BYTES = 256 << 20
MAILBOX_MSGS = 10_000
LIMIT_KEYS = ("mailbox_bytes", "mailbox_msgs", "store")
# Reserved once for everyone: the rendezvous stream GAGE_RV of `gage invite` (its max_bytes,
# gage.carriers.relay.rendezvous; tests/test_relay_operator.py checks they agree).
SHARED_BYTES = 256 << 20


@dataclass(frozen=True)
class Login:
    """How a user logs in: an nkey public key, or a bcrypt hash of a password (never the password)."""

    nkey: str | None = None
    password_hash: str | None = None
    password_file: str | None = None  # where the hash came from (for the closing hint), never read again

    def entry(self, user: str) -> dict[str, str]:
        """The user's entry in an account's `users` list."""
        if self.nkey is not None:
            return {"nkey": self.nkey}
        assert self.password_hash is not None
        return {"user": user, "password": self.password_hash}


@dataclass(frozen=True)
class Limits:
    """What each mailbox (and its bucket, the same) may hold, and the store the relay has, if said."""

    mailbox_bytes: int = MAILBOX_BYTES
    mailbox_msgs: int = MAILBOX_MSGS
    store: int | None = None  # JetStream's max_file_store; None: nats-server's own default

    def per_person(self) -> int:
        """Bytes JetStream reserves for one person: the mailbox, and the bucket of the same size."""
        return 2 * self.mailbox_bytes


@dataclass(frozen=True)
class Person:
    name: str
    mailbox: str
    handle: str
    login: Login

    @property
    def account(self) -> str:
        return "P_" + self.name


@dataclass(frozen=True)
class People:
    operator: Login
    persons: list[Person]
    limits: Limits = Limits()


class _Lines:
    """Where a key of the file is written, so an error names the line (tomllib gives no positions)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def of(self, table: str, index: int | None, key: str | None) -> int | None:
        header = re.compile(r"\s*\[\[\s*" + re.escape(table) + r"\s*\]\]" if index is not None else r"\s*\[\s*" + re.escape(table) + r"\s*\]")
        seen = -1
        start = None
        for n, line in enumerate(self.lines):
            if header.match(line):
                seen += 1
                if index is None or seen == index:
                    start = n
                    break
        if start is None:
            return None
        if key is None:
            return start + 1
        for n in range(start + 1, len(self.lines)):
            line = self.lines[n]
            if line.lstrip().startswith("["):
                break
            if re.match(r"\s*" + re.escape(key) + r"\s*=", line):
                return n + 1
        return start + 1


def parse_size(value: object) -> int | None:
    """Bytes from a whole number or a text like "256 MiB" (K/M/G/T are powers of 1024), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str):
        m = _SIZE.fullmatch(value.strip())
        if m:
            n = int(m.group(1)) * _UNITS[m.group(2).lower()]
            return n if n > 0 else None
    return None


def parse_people(raw: bytes, where: str, read_password: Callable[[str], str] | None = None) -> People:
    """The people file: `[operator]`, optional `[limits]`, and `[[person]]` tables (spec/relay.md section 8.4).

    A login is `nkey = "U..."` (a user's public nkey), `password_hash = "$2a$..."` (bcrypt), or
    `password_file = "PATH"` (relative to the file), which `read_password(path)` turns into a
    bcrypt hash; the configuration never holds a password."""
    try:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text)
    except ValueError as exc:  # not UTF-8, tomllib's TOMLDecodeError, or an integer too long to convert
        raise MalformedError(f"is not valid TOML: {exc}", path=where) from None
    lines = _Lines(text)

    def bad(message: str, table: str, index: int | None, key: str | None, fld: str | None) -> MalformedError:
        n = lines.of(table, index, key)
        return MalformedError(message, path=f"{where} line {n}" if n else where, field=fld)

    unknown = sorted(set(doc) - {"operator", "person", "limits"})
    if unknown:
        raise bad(f"unknown table {unknown[0]!r} (the file has [operator], [limits] and [[person]] tables)", unknown[0], None, None, None)
    op = doc.get("operator")
    if not isinstance(op, dict):
        raise MalformedError("needs an [operator] table: the login of the relay's operator, who makes the mailboxes", path=where)
    operator = _login(op, "operator", where, read_password, lambda m, k, f: bad(m, "operator", None, k, f))
    limits = _limits(doc.get("limits", {}), lambda m, k, f: bad(m, "limits", None, k, f))
    persons = doc.get("person", [])
    if not isinstance(persons, list) or not persons:
        raise MalformedError("needs [[person]] tables, one for each person", path=where)
    seen: dict[str, set[str]] = {"name": set(), "mailbox": set(), "handle": set(), "nkey": set()}
    if operator.nkey:
        seen["nkey"].add(operator.nkey)
    out = []
    for i, t in enumerate(persons):
        fld = f"person[{i}]"

        def here(message: str, key: str | None, f: str | None, i: int = i) -> MalformedError:
            return bad(message, "person", i, key, f)

        if not isinstance(t, dict):
            raise here("must be a table", None, fld)
        extra = sorted(set(t) - {"name", "mailbox", "handle", "nkey", "password_file", "password_hash"})
        if extra:
            raise here(f"unknown key {extra[0]!r}", extra[0], fld)
        name, box, handle = t.get("name"), t.get("mailbox"), t.get("handle")
        if not isinstance(name, str) or not NAME.fullmatch(name) or name == OPERATOR_USER:
            raise here(f"name must be 1 to 32 of a-z, 0-9, '-', '_' (not {OPERATOR_USER!r}, the operator's login)", "name", f"{fld}.name")
        if not isinstance(box, str) or not is_mailbox_address(box):
            raise here("mailbox must be a mailbox address (what `gage mailbox show` prints on the person's home)", "mailbox", f"{fld}.mailbox")
        if not isinstance(handle, str) or not HANDLE.fullmatch(handle):
            raise here("handle must be 1 to 63 of a-z, 0-9, '-', '_'", "handle", f"{fld}.handle")
        login = _login(t, fld, where, read_password, here)
        for k, v in (("name", name), ("mailbox", box), ("handle", handle), ("nkey", login.nkey)):
            if v is None:
                continue
            if v in seen[k]:
                raise here(f"{k} {v!r} is given twice: each person has their own", k, f"{fld}.{k}")
            seen[k].add(v)
        out.append(Person(name=name, mailbox=box, handle=handle, login=login))
    return People(operator=operator, persons=out, limits=limits)


Bad = Callable[[str, "str | None", "str | None"], MalformedError]


def _limits(t: object, bad: Bad) -> Limits:
    if not isinstance(t, dict):
        raise bad("must be a table", None, "limits")
    extra = sorted(set(t) - set(LIMIT_KEYS))
    if extra:
        raise bad(f"unknown key {extra[0]!r} (limits has {', '.join(LIMIT_KEYS)})", extra[0], "limits")
    got: dict[str, int] = {}
    for k in LIMIT_KEYS:
        if k not in t:
            continue
        n = parse_size(t[k]) if k != "mailbox_msgs" else (t[k] if isinstance(t[k], int) and not isinstance(t[k], bool) and t[k] > 0 else None)
        if n is None or n > 1 << 50:
            what = "a whole number above 0" if k == "mailbox_msgs" else 'a size: bytes, or a text like "256 MiB"'
            raise bad(f"{k} must be {what}", k, f"limits.{k}")
        got[k] = n
    return Limits(**got)


def _login(t: dict[str, object], fld: str, where: str, read_password: Callable[[str], str] | None, bad: Bad) -> Login:
    given = [k for k in ("nkey", "password_file", "password_hash") if k in t]
    if len(given) != 1:
        raise bad("needs one login: nkey = \"U...\" (a public key), or password_file = \"PATH\"", None, fld)
    key = given[0]
    value = t[key]
    if not isinstance(value, str) or not value:
        raise bad(f"{key} must be text", key, f"{fld}.{key}")
    if key == "nkey":
        if not NKEY_USER.fullmatch(value):
            raise bad("nkey must be a user's public nkey (56 characters starting with U), never a seed", key, f"{fld}.nkey")
        return Login(nkey=value)
    if key == "password_hash":
        if not BCRYPT.fullmatch(value):
            raise bad("password_hash must be a bcrypt hash ($2a$...)", key, f"{fld}.password_hash")
        return Login(password_hash=value)
    if read_password is None:
        raise bad("password_file is read only by `gage relay config`", key, f"{fld}.password_file")
    path = Path(value) if Path(value).is_absolute() else Path(where).parent / value
    try:
        hashed = read_password(str(path))
    except UsageError as exc:  # a loose or missing password file: exit 2 as every credential file, with the line
        err = bad(exc.message, key, f"{fld}.password_file")
        raise UsageError(str(err)) from None
    return Login(password_hash=hashed, password_file=str(path))


def hash_password(path: str) -> str:
    """A bcrypt hash of the password in a password file (0600, refused otherwise), for the configuration."""
    from gage.carriers.relay.creds import read_password

    try:
        import bcrypt
    except ImportError:
        raise UsageError("a password_file needs the bcrypt package, part of the relay extra: pip install 'gage-bundles[relay]'") from None
    hashed: bytes = bcrypt.hashpw(read_password(path).encode("utf-8"), bcrypt.gensalt(rounds=11))
    return hashed.decode("ascii")


def load_people(path: str, read_password: Callable[[str], str] | None = hash_password) -> People:
    """The people file at `path`, its password files hashed (or, with `read_password=None`, refused)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 22)
    except OSError as exc:
        raise UsageError(f"cannot read the people file {path}: {exc.strerror}") from None
    return parse_people(raw, path, read_password)
