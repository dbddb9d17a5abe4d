"""`gage relay dev`, `gage mailbox`, `gage deliver`, `gage directory`: gage across machines.

These need the optional extra `gage[relay]` (nats-py, pyrage); the relay code is loaded only
when one of them runs, and a missing extra is a usage error that says what to install.
"""

from __future__ import annotations

import importlib
import signal
import threading
from pathlib import Path
from typing import Any

from gage.cli.output import emit_json, err, home_path, open_home, out, show
from gage.cli.sizes import rounded
from gage.format import relayurl
from gage.format.errors import Exit, UsageError
from gage.format.keyjson import with_fingerprints
from gage.format.keys import short_fingerprint
from gage.home import sealing
from gage.home.layout import Home


def _relay(module: str) -> Any:
    """gage.carriers.relay.<module>, which needs the optional extra; loaded only here."""
    try:
        return importlib.import_module(f"gage.carriers.relay.{module}")
    except ImportError as exc:
        raise UsageError(
            f"this command needs the optional relay extra ({exc.name or exc} is not installed): pip install 'gage-bundles[relay]'"
        ) from None


def _checked_url(url: str) -> str:
    """A relay URL with no user or password in it (gage.carriers.relay.creds), or a usage error."""
    from gage.home.settings import relay_url_problem

    problem = relay_url_problem(url)
    if problem is not None:
        raise UsageError(problem)
    return url


def _url(home: Home, args: Any) -> str:
    given: str | None = getattr(args, "relay", None)
    url: str | None = _checked_url(given) if given else _relay("config").relay_url(home)
    if not url:
        raise UsageError("no relay is known: give --relay URL (or run `gage mailbox create --relay URL` once)")
    return url


def _given_creds(args: Any) -> Any:
    """The credential given on the command line (checked: each file 0600), or None."""
    # No nats import: the credential is checked before anything of the extra is loaded.
    from gage.carriers.relay.creds import Credentials

    cred = Credentials(
        creds=getattr(args, "creds", None), nkey=getattr(args, "nkey", None),
        user=getattr(args, "user", None), password_file=getattr(args, "password_file", None),
    )
    return cred.check() if cred else None


def _creds(home: Home, args: Any) -> Any:
    """The credential given, else this home's own from settings.toml (spec/settings.md), but that
    one only for this home's own relay: a `--relay` that names another one is connected to with
    none (spec/relay.md section 2)."""
    given = _given_creds(args)
    if given:
        return given
    config = _relay("config")
    typed = getattr(args, "relay", None)
    if typed and not relayurl.same_relay(typed, config.relay_url(home)):
        return None
    return config.relay_creds(home)


def cmd_relay_config(args: Any) -> int:
    """`gage relay config PEOPLE`: the server's configuration (JSON) on stdout or into `-o FILE`
    (gage.carriers.relay.relayconf); a bad people file or flag writes nothing."""
    relayconf = _relay("relayconf")
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


def cmd_relay_reload(args: Any) -> int:
    """`gage relay reload CONF`: reload until every person's account answers (gage.carriers.relay.reload)."""
    reload = _relay("reload")
    done = reload.reload(args.conf, tries=args.tries, say=err)
    out(f"reloaded {args.conf}: {len(done.accounts)} people answer ({done.reloads} reload{'s' if done.reloads != 1 else ''})")
    return 0


def cmd_relay_nkey(args: Any) -> int:
    """`gage relay nkey FILE`: a new user nkey, its seed into FILE (0600, new), its public key printed."""
    from gage.carriers.relay.creds import make_nkey

    out(make_nkey(args.file))
    err(f"seed written to {args.file} (0600: keep it secret; log in with --nkey {args.file}); "
        "the public key above goes into the people file (nkey = \"U...\")")
    return 0


INTERRUPTED = 130  # Ctrl-C, as every command exits on it (spec/cli.md)


def cmd_relay_dev(args: Any) -> int:
    server = _relay("server")
    # Kept, so a restart has every mailbox and directory entry (issue 30): under the gage home by default.
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


def _sealing_key(home: Home) -> sealing.SealingKey:
    from gage.home import unlock

    signer = unlock.signing_identity(home)  # a protected home asks for its passphrase (the options, or the terminal)
    with home.lock():
        return sealing.ensure(home.root, signer)


def cmd_mailbox_create(args: Any) -> int:
    mailbox = _relay("mailbox")
    url = _checked_url(args.relay)
    cred = _given_creds(args)
    limits = {"max_msgs": args.max_msgs or mailbox.DEFAULT_MAX_MSGS, "max_bytes": args.max_bytes or mailbox.DEFAULT_MAX_BYTES,
              "replicas": args.replicas, "ack_wait": float(args.ack_wait)}
    if args.people is not None:  # the operator, for everyone in the people file, with its limits
        if args.address is not None:
            raise UsageError("give --people (every person's mailbox) or --address (one), not both")
        return _made_for_people(args, mailbox, url, cred, limits)
    if args.address is not None:  # the operator, for a person: nothing of this home's is read or written
        if not sealing.is_mailbox_address(args.address):
            raise UsageError(f"--address {args.address!r} is not a mailbox address (what `gage mailbox show` prints)")
        box = mailbox.run(mailbox.create(url, args.address, creds=cred, directory=True, **limits))
        return _made(args, box, None, None)
    home = open_home(args)
    if home.identity.current_retirement is not None:
        raise UsageError("this home's key is retired; it opens no new mailbox")
    key = _sealing_key(home)
    address = sealing.mailbox_address(key.recipient)
    box = mailbox.run(mailbox.create(url, address, creds=cred, **limits))
    _relay("config").record(home, url, cred)
    return _made(args, box, home, key)


def _made_for_people(args: Any, mailbox: Any, url: str, cred: Any, limits: dict[str, Any]) -> int:
    """Each person's mailbox, with the people file's limits unless a flag says otherwise."""
    people = _relay("people").load_people(args.people, read_password=lambda _p: "")  # no password is needed here
    lim = people.limits
    limits = {**limits, "max_msgs": args.max_msgs or lim.mailbox_msgs, "max_bytes": args.max_bytes or lim.mailbox_bytes}
    made = []
    for p in people.persons:
        box = mailbox.run(mailbox.create(url, p.mailbox, creds=cred, directory=True, **limits))
        made.append(box)
        if not args.json:
            out(f"{p.name}: {box.address}")
            for k in box.kept:
                err(f"note ({p.name}): {show(k)}")
    if args.json:
        emit_json({"relay": relayurl.public(url), "made": [{"name": p.name, **b.to_json()} for p, b in zip(people.persons, made, strict=True)]})
        return 0
    err(f"{len(made)} mailboxes on {show(relayurl.public(url))}, each at most {limits['max_msgs']:,} envelopes, {rounded(limits['max_bytes'])} "
        "(and a bucket the same); nothing recorded in this home.")
    return 0


def _made(args: Any, box: Any, home: Home | None, key: sealing.SealingKey | None) -> int:
    if args.json:
        mine = {} if home is None or key is None else {"sealing_key": key.recipient, **_signing(home)}
        emit_json({**box.to_json(), "relay": relayurl.public(box.url), **mine})
        return 0
    out(box.address)
    for k in box.kept:
        err(f"note: {show(k)}")
    where = f"mailbox {box.address} on {show(relayurl.public(box.url))}: at most {box.max_msgs:,} envelopes, {rounded(box.max_bytes)}"
    if home is None or key is None:
        err(f"{where}; nothing recorded in this home.")
        return 0
    err(where)
    err(f"sealing key {key.recipient}, bound by your key {short_fingerprint(home.identity.key)}")
    err("Recorded in settings.toml (the relay, and your credential's file paths). Your key file (`gage key export`) now carries it.")
    return 0


def _signing(home: Any) -> dict[str, str]:
    """This home's signing key in JSON, its fingerprint beside it (issue 27)."""
    return {"signing_key": home.identity.key_text, "signing_key_fingerprint": short_fingerprint(home.identity.key)}


def cmd_mailbox_show(args: Any) -> int:
    """This home's mailbox address, relay and sealing key. A home with no sealing key yet gets one
    here, so a person has the address a relay's operator asks for before any relay exists."""
    from gage.home import unlock

    home = open_home(args)
    key = unlock.sealing_key(home, opened=False)
    made = False
    if key is None:
        if home.identity.current_retirement is not None:
            raise UsageError("this home's key is retired; it has no mailbox and opens no new one")
        key = _sealing_key(home)
        made = True
    url = _relay("config").relay_url(home)
    info = {"address": sealing.mailbox_address(key.recipient), "relay": relayurl.public(url) if url else None, "sealing_key": key.recipient, **_signing(home)}
    if args.json:
        emit_json(info)
        return 0
    # The signing key by its fingerprint, as every screen names a key (issue 27); the whole key is in --json.
    shown = {k: v for k, v in info.items() if k != "signing_key"}
    for k, v in shown.items():
        out(f"{k.replace('_fingerprint', '') + ':':<13}{show(v or '(none yet)')}")
    if made:
        err(f"made this home's sealing key, bound by your key {short_fingerprint(home.identity.key)}.")
    if url is None:
        err("No relay yet: give the address to the relay's operator (the people file's mailbox), then: gage mailbox create --relay URL")
    return 0


def _report(o: Any) -> None:
    if o.dropped is not None:
        err(f"an envelope was dropped ({o.stage}): {show(o.dropped)}; journaled")
    elif not o.new:
        err(f"{o.id[:12]}: already there ({o.state})")
    elif not o.ok:
        err(f"{o.id[:12]}: arrived by relay in pending, but it does NOT verify")
    else:
        err(f"{o.id[:12]}: arrived by relay in pending (unread; nothing is accepted until you say so)")


def cmd_mailbox_fetch(args: Any) -> int:
    from gage.home import unlock

    mailbox = _relay("mailbox")
    home = open_home(args)
    # Opened now, before anything is taken: a protected home's passphrase is asked here, not per envelope.
    key = unlock.sealing_key(home, opened=True)
    if key is None:
        raise UsageError("this home has no mailbox yet: gage mailbox create --relay URL")
    address = sealing.mailbox_address(key.recipient)
    from gage.cli.progress import CountLine

    line = CountLine("mailbox fetch")

    def each(o: Any) -> None:
        line.add(1, o.nbytes)
        if not args.json:
            with line.aside():
                _report(o)

    try:
        got = mailbox.run(mailbox.fetch(home, _url(home, args), address, creds=_creds(home, args), limit=args.limit, on_opened=each))
    finally:
        line.clear()
    if args.json:
        emit_json({"mailbox": address, "fetched": [o.to_json() for o in got.opened], "more": got.left})
        return 0
    if not got.opened:
        err("the mailbox is empty")
    elif len(got.opened) > 1:
        err(_summary(got, line.rate()))
    return 0


def _summary(got: Any, rate: float) -> str:
    """The one line a fetch of many ends with: how many came to what."""
    new = sum(1 for o in got.opened if o.new)
    bad = sum(1 for o in got.opened if o.new and not o.ok)
    again = sum(1 for o in got.opened if o.id is not None and not o.new)
    dropped = sum(1 for o in got.opened if o.dropped is not None)
    more = "; more are waiting (--limit)" if got.left else ""
    return (
        f"fetched {len(got.opened)} envelopes ({rate:.0f}/s): {new} landed in pending"
        f"{f' ({bad} do NOT verify)' if bad else ''}, {again} already there, {dropped} dropped{more}"
    )


def cmd_deliver(args: Any) -> int:
    """To the contact's mailbox, A2A agent or drop folder (gage.carriers.route), through the outbox
    (gage.carriers.outbox): the way not there keeps it, exit 16; only the way taken needs its extra."""
    from gage.carriers import outbox
    from gage.cli.cmd_a2a import token_from_file

    relay = _checked_url(args.relay) if args.relay else None
    home = open_home(args)
    token_from_file(args.token_file)  # a bad token file is said now, not at a later try
    done = outbox.deliver(
        home, args.id, args.to, via=args.via, unconfirmed=args.unconfirmed, relay=relay, creds=_given_creds(args),
        token_file=str(Path(args.token_file).absolute()) if args.token_file else None, now=args.now,
    )
    if args.json:
        emit_json(done.to_json())
        return done.code
    out(done.summary())
    return done.code


def cmd_directory_publish(args: Any) -> int:
    directory = _relay("directory")
    home = open_home(args)
    url = _url(home, args)
    # The record is public: it names the relay without the user or password this home connects with.
    advertise = _checked_url(args.advertise) if args.advertise else relayurl.public(url)
    rec = directory.publish(home, args.handle, url, relay_for_record=advertise, creds=_creds(home, args))
    if args.json:
        emit_json(rec.to_json() | {"status": "published"})
        return 0
    out(f"published {show(rec.handle)} -> mailbox {rec.mailbox} on {show(relayurl.public(url))}")
    err("Anyone can read it, and anyone who runs the directory can change it: it is a claim. People still pair with you by the words.")
    return 0


def directory_claim(home: Home, args: Any) -> tuple[bytes, str, str, Any]:
    """For `gage pair --directory`: the key the directory claims for the handle (a candidate now),
    and the route its record offers, kept by the caller only once the ceremony confirmed the key."""
    directory = _relay("directory")
    url = _url(home, args)
    rec = directory.lookup(home, args.directory, url, creds=_creds(home, args), route=False)
    if rec.note:
        err(f"WARNING: {show(rec.note)}")
    warn = f"; WARNING: {rec.note}" if rec.note else ""
    return rec.signing_key, rec.handle, f"the directory on {relayurl.public(url)} (UNCONFIRMED claim for {rec.handle!r}{warn})", directory.route_of(rec, url)


def cmd_directory_lookup(args: Any) -> int:
    directory = _relay("directory")
    home = open_home(args)
    url = _url(home, args)
    rec = directory.lookup(home, args.handle, url, creds=_creds(home, args))
    if args.json:
        emit_json(with_fingerprints(rec.to_json()))
        return 0
    out(f"{show(rec.handle)}: UNCONFIRMED (what the directory on {show(relayurl.public(url))} says; a claim, not a fact)")
    out(f"  signing key  {short_fingerprint(rec.signing_key)}  (not confirmed; the whole key: --json)")
    out(f"  sealing key  {rec.binding.sealing_key}  (bound by that signing key)")
    out(f"  mailbox      {rec.mailbox} on {show(rec.relay or relayurl.public(url))}")
    out(f"  published    {rec.published_at} (the publisher's claim)")
    if rec.note:
        out(f"  WARNING      {rec.note}")
    out(f"Kept as a candidate. To confirm it, read the words: gage pair --directory {show(rec.handle)} --name NAME")
    return 0
