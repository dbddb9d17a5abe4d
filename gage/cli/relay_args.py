"""The arguments of the relay commands (cmd_relay.py): `relay`, `mailbox`, `deliver`, `outbox`, `directory`.

Apart from commands.py so the relay's parser is one block that merges alone; like it, this
imports none of the code it names (gage/cli/commands.py explains why).
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, port, positive, run_as
from gage.cli.passphrase import add_options as add_passphrase_options

OUTBOX_EXAMPLES = """\
examples:
  gage outbox                                                # what waits: age, tries, last error, way
  gage outbox send                                           # try every waiting delivery now
  gage outbox cancel 9c41                                    # do not send that one (journaled)
  gage outbox --all --json                                   # every delivery, done and cancelled too
"""

RELAY_EXAMPLES = """\
examples:
  gage relay dev --port 4222                                 # a local relay, for trying gage
  gage mailbox create --relay nats://127.0.0.1:4222          # this home's mailbox
  gage directory publish --handle alice                      # handle -> mailbox (a claim)
  gage pair --directory bob --name bob                       # the ceremony, from the directory's claim
  gage deliver 3f2a --to bob                                 # sealed to bob's bound sealing key
  gage mailbox fetch                                         # take envelopes into pending
  gage watch --mailbox                                       # the same, live
"""


DELIVER_EXAMPLES = """\
examples:
  gage deliver 3f2a --to bob                                 # the mailbox if known, else A2A, else the drop folder
  gage deliver 3f2a --to bob --via folder                    # into bob's drop folder (gage contacts where bob --folder DIR)
  gage deliver 3f2a --to bob --via a2a --token-file tok      # to bob's A2A agent (gage contacts where bob --a2a URL)
"""


def _creds(p: argparse.ArgumentParser) -> None:
    """The credential for this home's relay: one of three files, each 0600 or refused (spec/relay.md section 8)."""
    g = p.add_argument_group("relay credential (default: the one in settings.toml; never in the URL)")
    g.add_argument("--creds", metavar="FILE", help="a NATS creds file (a user JWT and its nkey seed)")
    g.add_argument("--nkey", metavar="FILE", help="an nkey seed file (the relay's configuration holds its public key)")
    g.add_argument("--user", metavar="NAME", help="a user name, with --password-file")
    g.add_argument("--password-file", metavar="FILE", help="a file holding the password on its first line")


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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "relay",
        help="run a local NATS JetStream relay to try gage across homes (needs gage[relay] and nats-server)",
        epilog=RELAY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rsub = p.add_subparsers(dest="relay_command", metavar="ACTION", required=True)
    d = rsub.add_parser("dev", help="run nats-server with JetStream on 127.0.0.1; prints the URL; Ctrl-C stops it")
    d.add_argument("--port", type=port, default=4222, help="port (default 4222; 0 picks a free one)")
    d.add_argument("--store", "--dir", dest="dir", metavar="DIR",
                   help="keep the relay's store here (default: relay-dev/ in the gage home); a restart keeps every mailbox and directory entry")
    json_option(d, "print the URL and the store folder as one JSON object, then run until stopped")
    run_as(d, "cmd_relay", "cmd_relay_dev")
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
    run_as(cf, "cmd_relay", "cmd_relay_config")
    rl = rsub.add_parser("reload", help="make the running nats-server read CONF again, until every person's account answers")
    rl.add_argument("conf", metavar="CONF", help="the configuration `gage relay config -o CONF` wrote (and nats-server runs)")
    rl.add_argument("--tries", type=positive, default=5, metavar="N", help="reloads at most (default 5)")
    run_as(rl, "cmd_relay", "cmd_relay_reload")
    nk = rsub.add_parser("nkey", help="make a user nkey: its seed into FILE (0600), its public key printed for the people file")
    nk.add_argument("file", metavar="FILE", help="the seed file to make (must not exist)")
    run_as(nk, "cmd_relay", "cmd_relay_nkey")

    p = sub.add_parser("mailbox", help="create, fetch or show this home's mailbox on a relay (needs gage[relay])", epilog=RELAY_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    msub = p.add_subparsers(dest="mailbox_command", metavar="ACTION", required=True)
    c = msub.add_parser("create", help="make this home's mailbox on a relay and record the relay in settings.toml")
    c.add_argument("--relay", required=True, metavar="URL", help="the relay, e.g. nats://127.0.0.1:4222")
    _creds(c)
    c.add_argument(
        "--address", metavar="ADDRESS",
        help="the relay's operator: make the mailbox at a person's ADDRESS (from the people file) instead of this home's; records nothing",
    )
    c.add_argument(
        "--people", metavar="PEOPLE",
        help="the relay's operator: make every person's mailbox in the people file, with its [limits]; records nothing",
    )
    c.add_argument("--max-msgs", type=positive, metavar="N", help="envelopes the mailbox holds at most (default 10000, or the people file's)")
    c.add_argument("--max-bytes", type=positive, metavar="N",
                   help="bytes the mailbox holds at most, and its bucket for big envelopes the same (default 256 MiB, or the people file's)")
    c.add_argument("--replicas", type=positive, default=1, metavar="N", help="copies the relay keeps (a JetStream cluster; default 1)")
    c.add_argument("--ack-wait", type=positive, default=120, metavar="SECONDS", help="how long a fetched envelope waits for its acknowledgement before it is delivered again (default 120)")
    add_passphrase_options(c)
    json_option(c)
    run_as(c, "cmd_relay", "cmd_mailbox_create")
    f = msub.add_parser("fetch", help="take the envelopes waiting, land their bundles in pending, then acknowledge them")
    f.add_argument("--relay", metavar="URL", help="default: the relay in settings.toml")
    _creds(f)
    f.add_argument("--limit", type=positive, metavar="N", help="take at most N envelopes")
    add_passphrase_options(f)
    json_option(f)
    run_as(f, "cmd_relay", "cmd_mailbox_fetch")
    s = msub.add_parser("show", help="show this home's mailbox address, relay and sealing key")
    json_option(s)
    run_as(s, "cmd_relay", "cmd_mailbox_show")

    p = sub.add_parser(
        "deliver",
        help="send a bundle to a contact where they are: their mailbox (sealed; gage[relay]), A2A agent (gage[a2a]) or drop folder",
        epilog=DELIVER_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--to", required=True, metavar="NAME", help="a confirmed contact (or, with --unconfirmed, a candidate's key or claimed name)")
    p.add_argument(
        "--via", choices=("mailbox", "a2a", "folder"),
        help="which of their whereabouts to use (default: the mailbox if known, else the A2A agent, else the drop folder)",
    )
    p.add_argument("--relay", metavar="URL", help="by mailbox: the relay (default: where their mailbox is, else this home's relay)")
    p.add_argument("--unconfirmed", action="store_true", help="deliver to a candidate's key, a claim the ceremony never confirmed")
    _creds(p)
    p.add_argument("--token-file", metavar="FILE", help="by A2A: a file holding the bearer token the agent asks for")
    p.add_argument(
        "--now", action="store_true",
        help="fail at once if the way is not there (default: keep it in the outbox, exit 16, and send it when the way is back)",
    )
    json_option(p)
    run_as(p, "cmd_relay", "cmd_deliver")

    p = sub.add_parser(
        "outbox",
        help="list, send now or cancel the deliveries waiting for their way (a relay down, an agent asleep, a folder missing)",
        epilog=OUTBOX_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", nargs="?", choices=("list", "send", "cancel"), default="list")
    p.add_argument("delivery", nargs="?", metavar="ID", help="a delivery's id (a prefix of 4 or more will do): for send (default: all waiting) and cancel")
    p.add_argument("--all", action="store_true", help="with list: also the deliveries done or cancelled")
    json_option(p)
    run_as(p, "cmd_outbox", "cmd_outbox")

    p = sub.add_parser("directory", help="publish your handle in a relay's directory, or look one up (a claim; needs gage[relay])")
    dsub = p.add_subparsers(dest="directory_command", metavar="ACTION", required=True)
    pub = dsub.add_parser("publish", help="publish a record signed by this home's key: handle -> mailbox, sealing key, signing key")
    pub.add_argument("--handle", required=True, metavar="NAME")
    pub.add_argument("--relay", metavar="URL", help="default: this home's relay")
    pub.add_argument("--advertise", metavar="URL", help="the relay URL the record names, if others reach it by another address")
    _creds(pub)
    add_passphrase_options(pub)
    json_option(pub)
    run_as(pub, "cmd_relay", "cmd_directory_publish")
    lk = dsub.add_parser("lookup", help="show what the directory says for a handle, marked unconfirmed; kept as a candidate")
    lk.add_argument("handle", metavar="NAME")
    lk.add_argument("--relay", metavar="URL", help="default: this home's relay")
    _creds(lk)
    json_option(lk)
    run_as(lk, "cmd_relay", "cmd_directory_lookup")
