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
directory handle.

The file is JSON, which nats-server reads as its own format: a document built as data and
written by `json.dumps`, so no value is ever escaped by hand. To change what is exported,
edit PUBLIC or OWN (or `export`); to change the server's settings, `document`.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

from gage.carriers.relay.people import (
    OPERATOR_USER,
    SHARED_BYTES,
    Limits,
    Login,
    People,
    Person,
    load_people,
    parse_people,
)
from gage.format.errors import UsageError

__all__ = ["OPERATOR_USER", "Limits", "Login", "Node", "People", "Person", "document", "load_people", "parse_people", "render"]

MAIL = "MAIL"

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
LOOPBACK_LISTEN = "127.0.0.1:4222"
MONITOR = "127.0.0.1:8222"


@dataclass(frozen=True)
class Node:
    """Where this server listens and keeps its store; with `cluster`, one node of a cluster.

    `tls` is (certificate file, key file); without it a `listen` off loopback needs `plain=True`,
    said on purpose (passwords would cross the network in clear). `monitor` is nats-server's
    monitoring port, loopback only: `gage relay reload` asks it whether every account answers."""

    name: str = "gage-relay"
    listen: str = LOOPBACK_LISTEN
    store: str = "/var/lib/gage-relay"
    max_payload: int = 1 << 20
    cluster: str | None = None
    cluster_listen: str = "127.0.0.1:6222"
    routes: list[str] = field(default_factory=list)
    tls: tuple[str, str] | None = None
    plain: bool = False
    monitor: str | None = MONITOR
    pid_file: str | None = None  # default: beside the store folder, <store>.pid (nats-server makes the store, not its parent)

    def pid_path(self) -> str:
        return self.pid_file or self.store.rstrip("/") + ".pid"


def host_of(hostport: str) -> str:
    host = hostport.rsplit(":", 1)[0] if ":" in hostport else hostport
    return host.strip("[]")


def is_loopback(hostport: str) -> bool:
    host = host_of(hostport)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(node: Node) -> None:
    """What the server must not be given: control characters anywhere, a network listener without
    TLS unless said, a monitor port off loopback. A UsageError naming the flag and the fix."""
    texts = [("--name", node.name), ("--listen", node.listen), ("--store", node.store), ("--cluster-listen", node.cluster_listen)]
    texts += [("--route", r) for r in node.routes] + [("--cluster", node.cluster or "")]
    texts += [("--tls-cert", node.tls[0]), ("--tls-key", node.tls[1])] if node.tls else []
    texts += [("--monitor", node.monitor)] if node.monitor else []
    texts += [("--pid-file", node.pid_file)] if node.pid_file else []
    for opt, text in texts:
        if any(not c.isprintable() for c in text):
            raise UsageError(f"{opt} {text!r}: no control characters (nats-server would not read it as given)")
    if not is_loopback(node.listen) and node.tls is None and not node.plain:
        raise UsageError(
            f"--listen {node.listen} is reachable from the network, and without TLS every password and envelope crosses it in clear: "
            "give --tls-cert FILE --tls-key FILE, or --plain-network if something in front of the relay (a tunnel, a VPN) encrypts it"
        )
    if node.monitor and not is_loopback(node.monitor):
        raise UsageError(f"--monitor {node.monitor}: the monitoring port shows every connection and subscription; keep it on loopback (127.0.0.1:PORT)")


def export(subject: str, accounts: list[str] | None = None) -> dict[str, Any]:
    """One service export of MAIL: to everyone, or to the accounts named."""
    e: dict[str, Any] = {"service": subject}
    if accounts is not None:
        e["accounts"] = accounts
    if subject.startswith(STREAMED):
        e["response_type"] = "stream"
    return e


def own(person: Person) -> list[str]:
    return [s.replace("<A>", person.mailbox).replace("<H>", person.handle) for s in OWN]


def exports(people: People) -> list[dict[str, Any]]:
    out = [export(s) for s in PUBLIC]
    for p in people.persons:
        out += [export(s, [p.account]) for s in own(p)]
    return out


def imports(person: Person) -> list[dict[str, Any]]:
    out = []
    for s in PUBLIC + own(person):
        i: dict[str, Any] = {"service": {"account": MAIL, "subject": s}}
        if s.startswith(API):
            i["to"] = API_PREFIX + "." + s[len(API):]
        out.append(i)
    return out


def document(people: People, node: Node) -> dict[str, Any]:
    """The whole configuration for one node, as data: pure, the same people and node give the same document."""
    check(node)
    jetstream: dict[str, Any] = {"store_dir": node.store}
    if people.limits.store is not None:
        jetstream["max_file_store"] = people.limits.store
    doc: dict[str, Any] = {
        "server_name": node.name,
        "listen": node.listen,
        "max_payload": node.max_payload,
        "pid_file": node.pid_path(),
        "jetstream": jetstream,
    }
    if node.monitor:
        doc["http"] = node.monitor
    if node.tls is not None:
        doc["tls"] = {"cert_file": node.tls[0], "key_file": node.tls[1]}
    if node.cluster is not None:
        doc["cluster"] = {"name": node.cluster, "listen": node.cluster_listen, "routes": list(node.routes)}
    accounts: dict[str, Any] = {
        MAIL: {"jetstream": "enabled", "users": [people.operator.entry(OPERATOR_USER)], "exports": exports(people)},
    }
    for p in people.persons:
        accounts[p.account] = {"users": [p.login.entry(p.name)], "imports": imports(p)}
    doc["accounts"] = accounts
    return doc


def render(people: People, node: Node) -> str:
    """The configuration as nats-server reads it: JSON, one key a line where it helps a reader."""
    return json.dumps(document(people, node), indent=2, ensure_ascii=False) + "\n"


def size(n: int) -> str:
    """`256 MiB`, `1.5 GiB`: a limit as an operator reads it."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"


def arithmetic(people: People) -> tuple[str, bool]:
    """What the store must hold, in words, and whether it fits: JetStream reserves each stream's
    byte limit when the stream is made (a mailbox and its bucket, each `mailbox_bytes`)."""
    lim = people.limits
    n = len(people.persons)
    need = n * lim.per_person() + SHARED_BYTES
    text = (
        f"{n} people x (mailbox {size(lim.mailbox_bytes)} + bucket {size(lim.mailbox_bytes)}) + the invite stream "
        f"{size(SHARED_BYTES)} = {size(need)} reserved"
    )
    if lim.store is None:
        return (
            f"{text}; the store is nats-server's default (75% of the free disk under the store folder when it starts): "
            "set [limits] store in the people file to say it"
        ), True
    fits = need <= lim.store
    room = max(0, lim.store - SHARED_BYTES) // lim.per_person()
    return f"{text} of a {size(lim.store)} store ({'fits' if fits else 'does NOT fit'}; room for {room:,} people)", fits
