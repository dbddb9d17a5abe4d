"""A relay shared by strangers, as spec/relay.md section 8 documents it: a real nats-server running
exactly what `gage relay config` generates, with alice, bob and mallory (nkeys) and carol (a
password file), each with a mailbox the operator made. Used by tests/test_relay_isolation*.py."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nkeys

from gage.carriers.relay import config, mailbox, relayconf, server
from gage.carriers.relay.creds import Credentials
from gage.home import sealing
from gage.home.layout import Home

NAMES = ("alice", "bob", "mallory", "carol")


def nkey_file(path: Path) -> str:
    """A new user nkey: its seed written to `path` (0600); returns the public key."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(seed + b"\n")
    public: bytes = nkeys.from_seed(bytearray(seed)).public_key
    return public.decode()


def secret_file(path: Path, text: str) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    return str(path)


@dataclass
class Shared:
    srv: server.Server
    homes: dict[str, Home]
    addr: dict[str, str]
    creds: dict[str, Credentials]  # and "operator"
    people_file: Path

    @property
    def url(self) -> str:
        return self.srv.url

    def log(self) -> str:
        return (self.srv.store / "server.log").read_text(errors="replace")


def write_people(folder: Path, addr: dict[str, str]) -> tuple[Path, dict[str, Credentials]]:
    """The people file an operator writes (public nkeys, carol's password file) and each person's credential."""
    folder.mkdir(parents=True, exist_ok=True)
    creds: dict[str, Credentials] = {}
    op_pub = nkey_file(folder / "operator.nk")
    creds["operator"] = Credentials(nkey=str(folder / "operator.nk"))
    lines = ["[operator]", f'nkey = "{op_pub}"', ""]
    for n, a in addr.items():
        lines += ["[[person]]", f'name = "{n}"', f'mailbox = "{a}"', f'handle = "{n}"']
        if n == "carol":
            secret_file(folder / "carol.pw", "carol's long passphrase")
            lines.append('password_file = "carol.pw"')
            creds[n] = Credentials(user="carol", password_file=str(folder / "carol.pw"))
        else:
            lines.append(f'nkey = "{nkey_file(folder / f"{n}.nk")}"')
            creds[n] = Credentials(nkey=str(folder / f"{n}.nk"))
        lines.append("")
    p = folder / "people.toml"
    p.write_text("\n".join(lines))
    return p, creds


def generated(people_file: Path) -> relayconf.People:
    return relayconf.load_people(str(people_file))


def node_of(s: server.Server) -> relayconf.Node:
    cluster = s.cluster
    return relayconf.Node(
        name=s.name, listen=f"127.0.0.1:{s.port}", store=str(s.store), cluster=cluster,
        cluster_listen=f"127.0.0.1:{s.cluster_port}", routes=[f"nats-route://127.0.0.1:{p}" for p in s.routes], monitor=None,
    )


def addresses(homes: dict[str, Home]) -> dict[str, str]:
    out = {}
    for n, h in homes.items():
        with h.lock():
            out[n] = sealing.mailbox_address(sealing.ensure(h.root, h.identity.secret).recipient)
    return out


@contextlib.contextmanager
def running(make_home: Callable[[str], Home], tmp_path: Path) -> Iterator[Shared]:
    """The shared relay, started, with every person's mailbox; each test file's `shared` fixture."""
    homes = {n: make_home(n) for n in NAMES}
    addr = addresses(homes)
    people_file, creds = write_people(tmp_path / "people", addr)
    people = generated(people_file)
    srv = server.Server(store=tmp_path / "nats", name="shared", conf=lambda s: relayconf.render(people, node_of(s)))
    srv.log = tmp_path / "nats" / "server.log"
    srv.store.mkdir(parents=True)
    srv.start()
    try:
        for n in NAMES:  # the relay's operator makes the mailboxes (and the directory with the first)
            mailbox.run(mailbox.create(srv.url, addr[n], creds=creds["operator"], directory=True))
            config.record(homes[n], srv.url, creds[n])  # each home knows its own relay and its credential for it
        yield Shared(srv=srv, homes=homes, addr=addr, creds=creds, people_file=people_file)
    finally:
        srv.stop(kill=True)
