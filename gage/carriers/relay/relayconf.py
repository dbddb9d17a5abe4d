"""`gage relay config`: a stock nats-server configuration for a relay many strangers share.

The isolation is the engine's own: accounts (spec/relay.md section 8). Every stream (each
mailbox, each object bucket, the directory, the rendezvous stream) lives in one account, MAIL,
whose only user is the relay's operator. Each person has an account of their own, with one user
and no JetStream. Accounts share nothing but what one exports and another imports, so a
person's `_INBOX.>` is theirs alone, no JetStream API of MAIL is reachable but through the
exports below, and a reply subject a person names stays in their own account (a service
import answers to a reply subject the server makes, never one the requester chose in MAIL).

MAIL exports to everyone only what delivering needs (publishes that can only add to a stream
made with rollups off) and reading the public directory; to each person alone, reading and
acknowledging their own mailbox, reading and purging their own bucket, and writing their own
directory handle. This module is a pure function from the people to the text, plus the
reading of the people file (TOML, spec/relay.md section 8).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gage.format.errors import MalformedError
from gage.home.sealing import is_mailbox_address

MAIL = "MAIL"
OPERATOR_USER = "gage-operator"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_HANDLE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_NKEY_USER = re.compile(r"^U[A-Z2-7]{55}$")
_BCRYPT = re.compile(r"^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$")

# To everyone: delivery, big-envelope writes (publish with a JetStream ack), the public directory,
# and the rendezvous stream of `gage invite`.
PUBLIC = [
    "gage.mb.*",
    "$O.*.C.*",
    "$O.*.M.*",
    "$JS.API.STREAM.INFO.KV_GAGE_DIRECTORY",
    "$JS.API.DIRECT.GET.KV_GAGE_DIRECTORY.>",
    "$JS.API.STREAM.MSG.GET.KV_GAGE_DIRECTORY",
    "gage.rv.*",
    "$JS.API.DIRECT.GET.GAGE_RV.>",
    "$JS.API.STREAM.MSG.GET.GAGE_RV",
    "$JS.API.STREAM.INFO.GAGE_RV",
]
# To the mailbox's owner alone (<A> the address, <H> the handle). MSG.NEXT answers with a
# stream of messages; everything else with one reply.
OWN = [
    "$JS.API.STREAM.INFO.GAGE_MB_<A>",
    "$JS.API.CONSUMER.INFO.GAGE_MB_<A>.inbox",
    "$JS.API.CONSUMER.MSG.NEXT.GAGE_MB_<A>.inbox",
    "$JS.ACK.GAGE_MB_<A>.inbox.>",
    "$JS.API.STREAM.INFO.OBJ_GAGE_OB_<A>",
    "$JS.API.STREAM.MSG.GET.OBJ_GAGE_OB_<A>",
    "$JS.API.STREAM.PURGE.OBJ_GAGE_OB_<A>",
    "$KV.GAGE_DIRECTORY.<H>",
]
STREAMED = "$JS.API.CONSUMER.MSG.NEXT."
# In an account without JetStream the server itself answers `$JS.API.>` ("JetStream not enabled
# for account"), ahead of any import: so a person imports MAIL's API subjects under this prefix
# instead (the documented cross-account JetStream pattern), and gage's client uses it there.
API = "$JS.API."
API_PREFIX = "JS.MAIL.API"


@dataclass(frozen=True)
class Login:
    """How a user logs in: an nkey public key, or a bcrypt hash of a password (never the password)."""

    nkey: str | None = None
    password_hash: str | None = None

    def entry(self, user: str) -> str:
        if self.nkey is not None:
            return f"{{ nkey: {_q(self.nkey)} }}"
        assert self.password_hash is not None
        return f"{{ user: {_q(user)}, password: {_q(self.password_hash)} }}"


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


@dataclass(frozen=True)
class Node:
    """Where this server listens and keeps its store; with `cluster`, one node of a cluster."""

    name: str = "gage-relay"
    listen: str = "0.0.0.0:4222"
    store: str = "/var/lib/gage-relay"
    max_payload: int = 1 << 20
    cluster: str | None = None
    cluster_listen: str = "0.0.0.0:6222"
    routes: list[str] = field(default_factory=list)


def _q(text: str) -> str:
    """A quoted string for nats-server's configuration (its syntax is JSON-like)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def exports(people: People) -> list[str]:
    lines = [f"{{ service: {_q(s)} }}" for s in PUBLIC]
    for p in people.persons:
        for s in OWN:
            subj = s.replace("<A>", p.mailbox).replace("<H>", p.handle)
            rt = ", response_type: stream" if subj.startswith(STREAMED) else ""
            lines.append(f"{{ service: {_q(subj)}, accounts: [{_q(p.account)}]{rt} }}")
    return lines


def imports(person: Person) -> list[str]:
    subjects = PUBLIC + [s.replace("<A>", person.mailbox).replace("<H>", person.handle) for s in OWN]
    out = []
    for s in subjects:
        to = f", to: {_q(API_PREFIX + '.' + s[len(API):])}" if s.startswith(API) else ""
        out.append(f"{{ service: {{ account: {MAIL}, subject: {_q(s)} }}{to} }}")
    return out


def render(people: People, node: Node) -> str:
    """The whole configuration for one node: pure, the same people and node give the same text."""
    out = [
        "# gage relay: generated by `gage relay config` (spec/relay.md section 8). Run it with: nats-server -c FILE",
        "# One account per person, every stream in account MAIL (the operator's), narrow service exports.",
        f"server_name: {_q(node.name)}",
        f"listen: {_q(node.listen)}",
        f"max_payload: {node.max_payload}",
        f"jetstream {{ store_dir: {_q(node.store)} }}",
    ]
    if node.cluster is not None:
        routes = ", ".join(_q(r) for r in node.routes)
        out.append(f"cluster {{ name: {_q(node.cluster)}, listen: {_q(node.cluster_listen)}, routes: [{routes}] }}")
    out.append("accounts {")
    out.append(f"  {MAIL}: {{")
    out.append("    jetstream: enabled")
    out.append(f"    users: [ {people.operator.entry(OPERATOR_USER)} ]")
    out.append("    exports: [")
    out.extend(f"      {e}" for e in exports(people))
    out.append("    ]")
    out.append("  }")
    for p in people.persons:
        out.append(f"  {p.account}: {{")
        out.append(f"    users: [ {p.login.entry(p.name)} ]")
        out.append("    imports: [")
        out.extend(f"      {i}" for i in imports(p))
        out.append("    ]")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def parse_people(raw: bytes, where: str, read_password: object = None) -> People:
    """The people file: `[operator]` and `[[person]]` tables (spec/relay.md section 8).

    A login is `nkey = "U..."` (a user's public nkey), `password_hash = "$2a$..."` (bcrypt), or
    `password_file = "PATH"` (relative to the file), which `read_password(path) -> str` turns
    into a bcrypt hash; the configuration never holds a password."""
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, tomllib's TOMLDecodeError, or an integer too long to convert
        raise MalformedError(f"is not valid TOML: {exc}", path=where) from None
    unknown = sorted(set(doc) - {"operator", "person"})
    if unknown:
        raise MalformedError(f"unknown table {unknown[0]!r} (the file has [operator] and [[person]] tables)", path=where)
    op = doc.get("operator")
    if not isinstance(op, dict):
        raise MalformedError("needs an [operator] table: the login of the relay's operator, who makes the mailboxes", path=where)
    operator = _login(op, "operator", where, read_password)
    persons = doc.get("person", [])
    if not isinstance(persons, list) or not persons:
        raise MalformedError("needs [[person]] tables, one for each person", path=where)
    seen: dict[str, set[str]] = {"name": set(), "mailbox": set(), "handle": set(), "nkey": set()}
    if operator.nkey:
        seen["nkey"].add(operator.nkey)
    out = []
    for i, t in enumerate(persons):
        fld = f"person[{i}]"
        if not isinstance(t, dict):
            raise MalformedError("must be a table", path=where, field=fld)
        extra = sorted(set(t) - {"name", "mailbox", "handle", "nkey", "password_file", "password_hash"})
        if extra:
            raise MalformedError(f"unknown key {extra[0]!r}", path=where, field=fld)
        name, box, handle = t.get("name"), t.get("mailbox"), t.get("handle")
        if not isinstance(name, str) or not _NAME.match(name) or name == OPERATOR_USER:
            raise MalformedError(f"name must be 1 to 32 of a-z, 0-9, '-', '_' (not {OPERATOR_USER!r})", path=where, field=f"{fld}.name")
        if not isinstance(box, str) or not is_mailbox_address(box):
            raise MalformedError("mailbox must be a mailbox address (what `gage mailbox show` prints)", path=where, field=f"{fld}.mailbox")
        if not isinstance(handle, str) or not _HANDLE.match(handle):
            raise MalformedError("handle must be 1 to 63 of a-z, 0-9, '-', '_'", path=where, field=f"{fld}.handle")
        login = _login(t, fld, where, read_password)
        for k, v in (("name", name), ("mailbox", box), ("handle", handle), ("nkey", login.nkey)):
            if v is None:
                continue
            if v in seen[k]:
                raise MalformedError(f"{k} {v!r} is given twice: each person has their own", path=where, field=f"{fld}.{k}")
            seen[k].add(v)
        out.append(Person(name=name, mailbox=box, handle=handle, login=login))
    return People(operator=operator, persons=out)


def _login(t: dict[str, object], fld: str, where: str, read_password: object) -> Login:
    given = [k for k in ("nkey", "password_file", "password_hash") if k in t]
    if len(given) != 1:
        raise MalformedError("needs one login: nkey = \"U...\" (a public key), or password_file = \"PATH\"", path=where, field=fld)
    value = t[given[0]]
    if not isinstance(value, str) or not value:
        raise MalformedError(f"{given[0]} must be text", path=where, field=f"{fld}.{given[0]}")
    if given[0] == "nkey":
        if not _NKEY_USER.match(value):
            raise MalformedError("nkey must be a user's public nkey (56 characters starting with U), never a seed", path=where, field=f"{fld}.nkey")
        return Login(nkey=value)
    if given[0] == "password_hash":
        if not _BCRYPT.match(value):
            raise MalformedError("password_hash must be a bcrypt hash ($2a$...)", path=where, field=f"{fld}.password_hash")
        return Login(password_hash=value)
    if not callable(read_password):
        raise MalformedError("password_file is read only by `gage relay config`", path=where, field=f"{fld}.password_file")
    path = Path(value) if Path(value).is_absolute() else Path(where).parent / value
    hashed = read_password(str(path))
    assert isinstance(hashed, str)
    return Login(password_hash=hashed)


def hash_password(path: str) -> str:
    """A bcrypt hash of the password in a password file (0600, refused otherwise), for the configuration."""
    from gage.carriers.relay.creds import read_password

    try:
        import bcrypt
    except ImportError:
        from gage.format.errors import UsageError

        raise UsageError("a password_file needs the bcrypt package, part of the relay extra: pip install 'gage-bundles[relay]'") from None
    hashed: bytes = bcrypt.hashpw(read_password(path).encode("utf-8"), bcrypt.gensalt(rounds=11))
    return hashed.decode("ascii")


def load_people(path: str) -> People:
    """The people file at `path`, its password files hashed."""
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 22)
    except OSError as exc:
        from gage.format.errors import UsageError

        raise UsageError(f"cannot read the people file {path}: {exc.strerror}") from None
    return parse_people(raw, path, hash_password)
