"""`gage relay dev | config | reload | nkey`: run a relay, or write and reload a shared relay's configuration.

`dev` runs nats-server with JetStream on this machine, to try gage across homes; `config`,
`reload` and `nkey` are the operator's, for a relay many people share (spec/relay.md section 8).
These need the optional extra `gage[relay]` and nats-server; the relay's modules are imported
inside each action, within `relay_extra()`, which names what to install when one is missing.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, port, positive
from gage.cli.extras import relay_extra
from gage.cli.relaying import RELAY_EXAMPLES

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

CONFIG_EXAMPLES = """\
examples:
  gage relay nkey operator.nk                                               # the operator's login (prints its public key)
  gage relay config people.toml -o relay.conf && nats-server -c relay.conf  # one node, this machine only
  gage relay config people.toml -o relay.conf --listen 0.0.0.0:4222 \\
      --tls-cert cert.pem --tls-key key.pem                                 # reached over a network
  gage relay reload relay.conf                                              # after the people file changed
  gage relay config people.toml -o n1.conf --name n1 --cluster gage --cluster-listen 10.0.0.1:6222 \\
      --route nats-route://n2:6222 --route nats-route://n3:6222             # a node of a three-node cluster
people.toml (spec/relay.md section 8):
  [operator]
  nkey = "U..."                   # or password_file = "operator.pw"; it logs in as gage-operator
  [limits]                        # optional
  mailbox_bytes = "256 MiB"       # each mailbox, and its bucket the same (JetStream reserves both)
  store = "100 GiB"               # the store's size: relay config checks people x limits against it
  [[person]]
  name = "bob"
  mailbox = "mb..."               # what `gage mailbox show` prints on bob's home (no relay needed)
  handle = "bob"
  nkey = "U..."                   # bob's public nkey, or password_file = "bob.pw" (0600)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = RELAY_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    rsub = p.add_subparsers(dest="relay_command", metavar="ACTION", required=True)
    d = rsub.add_parser("dev", help="run nats-server with JetStream on 127.0.0.1; prints the URL; Ctrl-C stops it")
    d.add_argument("--port", type=port, default=4222, help="port (default 4222; 0 picks a free one)")
    d.add_argument("--store", "--dir", dest="dir", metavar="DIR",
                   help="keep the relay's store here (default: relay-dev/ in the gage home); a restart keeps every mailbox and directory entry")
    json_option(d, "print the URL and the store folder as one JSON object, then run until stopped")
    cf = rsub.add_parser(
        "config",
        help="print a nats-server configuration for a relay many people share (per-person accounts), from a people file",
        epilog=CONFIG_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cf.add_argument("people", metavar="PEOPLE", help="the people file (TOML): the operator, the limits, and each person's name, mailbox, handle and login")
    cf.add_argument("-o", "--output", metavar="FILE", help="write the configuration to FILE (whole, or not at all) instead of stdout")
    cf.add_argument("--name", default="gage-relay", metavar="NAME", help="this server's name (each node of a cluster its own; default gage-relay)")
    cf.add_argument("--listen", default="127.0.0.1:4222", metavar="HOST:PORT",
                    help="where clients connect (default 127.0.0.1:4222, this machine only; off loopback it needs --tls-cert/--tls-key or --plain-network)")
    cf.add_argument("--tls-cert", metavar="FILE", help="the server's TLS certificate (PEM), with --tls-key: clients connect with tls://")
    cf.add_argument("--tls-key", metavar="FILE", help="the TLS certificate's private key (PEM)")
    cf.add_argument("--plain-network", action="store_true",
                    help="listen on a network without TLS, on purpose (something in front of the relay, a tunnel or a VPN, encrypts it)")
    cf.add_argument("--store", default="/var/lib/gage-relay", metavar="DIR", help="JetStream's store folder (default /var/lib/gage-relay)")
    cf.add_argument("--monitor", default="127.0.0.1:8222", metavar="HOST:PORT",
                    help="nats-server's monitoring port, loopback only, which `gage relay reload` asks (default 127.0.0.1:8222)")
    cf.add_argument("--pid-file", metavar="FILE", help="where nats-server writes its process id, which `gage relay reload` signals (default: STORE.pid)")
    cf.add_argument("--cluster", metavar="NAME", help="make this one node of a cluster of that name (with --route for each other node)")
    cf.add_argument("--cluster-listen", metavar="HOST:PORT", help="with --cluster (and needed by it): where the other nodes connect, an address only they reach")
    cf.add_argument("--route", action="append", default=[], metavar="URL", help="with --cluster: another node, nats-route://HOST:PORT (repeatable)")
    rl = rsub.add_parser("reload", help="make the running nats-server read CONF again, until every person's account answers")
    rl.add_argument("conf", metavar="CONF", help="the configuration `gage relay config -o CONF` wrote (and nats-server runs)")
    rl.add_argument("--tries", type=positive, default=5, metavar="N", help="reloads at most (default 5)")
    nk = rsub.add_parser("nkey", help="make a user nkey: its seed into FILE (0600), its public key printed for the people file")
    nk.add_argument("file", metavar="FILE", help="the seed file to make (must not exist)")


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.relay_command](args)


INTERRUPTED = 130  # Ctrl-C, as every command exits on it (spec/cli.md)


def dev(args: argparse.Namespace) -> int:
    import signal
    import threading
    from pathlib import Path

    from gage.cli.output import err, home_path, out
    from gage.format.errors import Exit

    with relay_extra():
        from gage.carriers.relay import server
    # Kept, so a restart has every mailbox and directory entry: under the gage home by default.
    store_dir = Path(args.dir) if args.dir else home_path(args) / "relay-dev"
    note = f"its store is {store_dir} (kept: a restart has every mailbox and directory entry)"
    srv = server.Server(store=store_dir, port=args.port, name="gage-dev")
    srv.start()
    stop = threading.Event()
    why = ["SIGTERM"]  # what stopped it: SIGTERM, unless Ctrl-C (exit 130, as the exit-code table says)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.json:
        import json

        out(json.dumps({"url": srv.url, "store": str(store_dir)}))
    else:
        out(srv.url)
    try:
        # Inside the try: a Ctrl-C that lands while this line is written (the moment it invites
        # one) is still Ctrl-C, not a bare "interrupted" (tests/test_cli_git_habits.py).
        err(f"gage relay dev: nats-server with JetStream on {srv.url}, for trying gage on this machine only; {note}. Ctrl-C stops it.")
        while not stop.wait(0.5):
            if srv.proc is not None and srv.proc.poll() is not None:
                err(f"gage relay dev: nats-server exited with status {srv.proc.returncode}")
                return int(Exit.RELAY)
    except KeyboardInterrupt:
        why[0] = "Ctrl-C"
    finally:
        srv.stop()
    err(f"gage relay dev: stopped ({why[0]})")
    return INTERRUPTED if why[0] == "Ctrl-C" else 0


def config(args: argparse.Namespace) -> int:
    """`gage relay config PEOPLE`: the server's configuration (JSON) on stdout or into `-o FILE`
    (gage.carriers.relay.relayconf); a bad people file or flag writes nothing."""
    from pathlib import Path

    from gage.cli.output import err, out
    from gage.format.errors import UsageError

    with relay_extra():
        from gage.carriers.relay import relayconf
    if args.cluster is None and (args.route or args.cluster_listen is not None):
        raise UsageError("--route and --cluster-listen need --cluster NAME: they join this node to the other nodes of a cluster")
    if args.cluster is not None and not args.route:
        raise UsageError("--cluster needs a --route for each other node (nats-route://HOST:PORT); a relay of one node needs no --cluster")
    if args.cluster is not None and args.cluster_listen is None:
        raise UsageError(
            "--cluster needs --cluster-listen HOST:PORT, where the other nodes connect: routes carry every account's traffic, "
            "so give an address only the other nodes reach (a private network)"
        )
    for r in args.route:
        if not r.startswith("nats-route://") or "@" in r:
            raise UsageError(f"--route {r!r}: give it as nats-route://HOST:PORT")
    if (args.tls_cert is None) != (args.tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together: the certificate file and its key file")
    people = relayconf.load_people(args.people)
    node = relayconf.Node(
        name=args.name, listen=args.listen, store=args.store, cluster=args.cluster,
        cluster_listen=args.cluster_listen or "", routes=list(args.route),
        tls=(args.tls_cert, args.tls_key) if args.tls_cert else None, plain=args.plain_network, monitor=args.monitor,
        pid_file=args.pid_file,
    )
    text = relayconf.render(people, node)
    sums, fits = relayconf.arithmetic(people)
    if not fits:
        from gage.format.errors import MalformedError

        raise MalformedError(f"the mailboxes do not fit the store: {sums}; give smaller [limits] mailbox_bytes or a bigger store", path=args.people, field="limits")
    if args.output:
        from gage.bundle import atomic

        # Password hashes can be attacked offline: a file holding any is its owner's alone.
        hashed = people.operator.password_hash is not None or any(p.login.password_hash for p in people.persons)
        atomic.write_bytes(Path(args.output), text.encode("utf-8"), mode=0o600 if hashed else 0o644)
    else:
        out(text.rstrip("\n"))
    conf = args.output or "relay.conf"
    scheme = "tls" if node.tls else "nats"
    host = relayconf.host_of(node.listen)
    url = f"{scheme}://{host if relayconf.is_loopback(node.listen) or host not in ('0.0.0.0', '::', '') else 'THIS-HOST'}:{node.listen.rsplit(':', 1)[-1]}"
    err(f"gage relay config: {len(people.persons)} people, each in an account of their own; every mailbox in account MAIL.")
    err(f"store: {sums}")
    err(f"Start it: nats-server -c {conf}")
    err(f"Then make every mailbox, as the operator (login name {relayconf.OPERATOR_USER}):")
    err(f"  gage mailbox create --relay {url} --people {args.people} {_operator_login(people.operator)}")
    err(f"After a change to the people file: gage relay config {args.people} -o {conf} && gage relay reload {conf} (spec/relay.md section 8.4)")
    return 0


def _operator_login(login: Any) -> str:
    """The credential options the operator logs in with, as the people file says."""
    if login.nkey is not None:
        return f"--nkey SEED-FILE   (the seed of {login.nkey[:8]}...; made by `gage relay nkey FILE`)"
    if login.password_file is not None:
        return f"--user gage-operator --password-file {login.password_file}"
    return "--user gage-operator --password-file FILE   (the password whose bcrypt hash the people file gives)"


def reload(args: argparse.Namespace) -> int:
    """`gage relay reload CONF`: reload until every person's account answers (gage.carriers.relay.reload)."""
    from gage.cli.output import err, out

    with relay_extra():
        from gage.carriers.relay import reload as reloading
    done = reloading.reload(args.conf, tries=args.tries, say=err)
    out(f"reloaded {args.conf}: {len(done.accounts)} people answer ({done.reloads} reload{'s' if done.reloads != 1 else ''})")
    return 0


def nkey(args: argparse.Namespace) -> int:
    """`gage relay nkey FILE`: a new user nkey, its seed into FILE (0600, new), its public key printed."""
    from gage.carriers.relay.creds import make_nkey
    from gage.cli.output import err, out

    out(make_nkey(args.file))
    err(f"seed written to {args.file} (0600: keep it secret; log in with --nkey {args.file}); "
        "the public key above goes into the people file (nkey = \"U...\")")
    return 0


# Each action's function, by the name `gage relay ACTION` gives it.
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {"dev": dev, "config": config, "reload": reload, "nkey": nkey}
