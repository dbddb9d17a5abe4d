"""`gage relay dev`, `gage mailbox`, `gage deliver`, `gage directory`: gage across machines.

These need the optional extra `gage[relay]` (nats-py, pyrage); the relay code is loaded only
when one of them runs, and a missing extra is a usage error that says what to install.
"""

from __future__ import annotations

import importlib
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

from gage.cli.output import emit_json, err, open_home, out, show
from gage.format import relayurl
from gage.format.errors import Exit, UsageError
from gage.format.keys import key_text, short_fingerprint
from gage.home import listing, sealing
from gage.home.layout import Home


def _relay(module: str) -> Any:
    """gage.carriers.relay.<module>, which needs the optional extra; loaded only here."""
    try:
        return importlib.import_module(f"gage.carriers.relay.{module}")
    except ImportError as exc:
        raise UsageError(
            f"this command needs the optional relay extra ({exc.name or exc} is not installed): pip install 'gage-bundles[relay]'"
        ) from None


def _url(home: Home, args: Any) -> str:
    url: str | None = getattr(args, "relay", None) or _relay("config").relay_url(home)
    if not url:
        raise UsageError("no relay is known: give --relay URL (or run `gage mailbox create --relay URL` once)")
    return url


def _creds(home: Home, args: Any) -> str | None:
    """`--creds`, else this home's own credentials, but those only for this home's own relay: a
    `--relay` that names another one is connected to with none (spec/relay.md section 2)."""
    given: str | None = getattr(args, "creds", None)
    if given:
        return given
    config = _relay("config")
    typed = getattr(args, "relay", None)
    if typed and not relayurl.same_relay(typed, config.relay_url(home)):
        return None
    creds: str | None = config.relay_creds(home)
    return creds


def cmd_relay_dev(args: Any) -> int:
    server = _relay("server")
    if args.dir:
        store_dir = Path(args.dir)
        note = f"its store is {store_dir} (kept)"
    else:
        store_dir = Path(tempfile.mkdtemp(prefix="gage-relay-"))
        note = f"its store is {store_dir} (a scratch folder, removed when it stops; give --dir DIR to keep it)"
    srv = server.Server(store=store_dir, port=args.port, name="gage-dev")
    srv.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.json:
        import json

        out(json.dumps({"url": srv.url, "store": str(store_dir)}))
    else:
        out(srv.url)
    err(f"gage relay dev: nats-server with JetStream on {srv.url}, for trying gage on this machine only; {note}. Ctrl-C stops it.")
    try:
        while not stop.wait(0.5):
            if srv.proc is not None and srv.proc.poll() is not None:
                err(f"gage relay dev: nats-server exited with status {srv.proc.returncode}")
                return int(Exit.RELAY)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
        if not args.dir:
            import shutil

            shutil.rmtree(store_dir, ignore_errors=True)  # the scratch store it made
    err("gage relay dev: stopped")
    return 0


def _sealing_key(home: Home) -> sealing.SealingKey:
    from gage.home import unlock

    signer = unlock.signing_identity(home)  # a protected home asks for its passphrase (the options, or the terminal)
    with home.lock():
        return sealing.ensure(home.root, signer)


def cmd_mailbox_create(args: Any) -> int:
    mailbox = _relay("mailbox")
    home = open_home(args)
    if home.identity.current_retirement is not None:
        raise UsageError("this home's key is retired; it opens no new mailbox")
    key = _sealing_key(home)
    address = sealing.mailbox_address(key.recipient)
    box = mailbox.run(
        mailbox.create(args.relay, address, creds=args.creds, max_msgs=args.max_msgs, max_bytes=args.max_bytes, replicas=args.replicas)
    )
    _relay("config").record(home, args.relay, args.creds)
    if args.json:
        emit_json({**box.to_json(), "relay": relayurl.public(args.relay), "sealing_key": key.recipient, "signing_key": home.identity.key_text})
        return 0
    out(address)
    err(
        f"mailbox {address} on {show(relayurl.public(args.relay))} (at most {box.max_msgs} envelopes, {box.max_bytes} bytes); "
        f"sealing key {key.recipient}, bound by your key {short_fingerprint(home.identity.key)}. "
        "Recorded in settings.toml. Your key file (`gage key export`) now carries it."
    )
    return 0


def cmd_mailbox_show(args: Any) -> int:
    from gage.home import unlock

    home = open_home(args)
    key = unlock.sealing_key(home, opened=False)
    if key is None:
        raise UsageError("this home has no mailbox yet: gage mailbox create --relay URL")
    url = _relay("config").relay_url(home)
    info = {"address": sealing.mailbox_address(key.recipient), "relay": relayurl.public(url) if url else None, "sealing_key": key.recipient, "signing_key": home.identity.key_text}
    if args.json:
        emit_json(info)
        return 0
    for k, v in info.items():
        out(f"{k + ':':<13}{show(v or '(none)')}")
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
    got = mailbox.run(
        mailbox.fetch(home, _url(home, args), address, creds=_creds(home, args), limit=args.limit, on_opened=None if args.json else _report)
    )
    if args.json:
        emit_json({"mailbox": address, "fetched": [o.to_json() for o in got.opened], "more": got.left})
        return 0
    if not got.opened:
        err("the mailbox is empty")
    return 0


def cmd_deliver(args: Any) -> int:
    """To the contact's mailbox, A2A agent or drop folder (gage.carriers.route); only the way taken needs its extra."""
    from gage.carriers import route
    from gage.cli.cmd_a2a import token_from_file

    home = open_home(args)
    stored = listing.resolve(home, args.id)
    done = route.deliver(
        home, stored.path, stored.id, args.to, via=args.via, unconfirmed=args.unconfirmed, relay=args.relay, creds=args.creds,
        token=token_from_file(args.token_file),
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
    rec = directory.publish(home, args.handle, url, relay_for_record=args.advertise or relayurl.public(url), creds=_creds(home, args))
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
        emit_json(rec.to_json())
        return 0
    out(f"{show(rec.handle)}: UNCONFIRMED (what the directory on {show(relayurl.public(url))} says; a claim, not a fact)")
    out(f"  signing key  {key_text(rec.signing_key)}  ({short_fingerprint(rec.signing_key)}, not confirmed)")
    out(f"  sealing key  {rec.binding.sealing_key}  (bound by that signing key)")
    out(f"  mailbox      {rec.mailbox} on {show(rec.relay or relayurl.public(url))}")
    out(f"  published    {rec.published_at} (the publisher's claim)")
    if rec.note:
        out(f"  WARNING      {rec.note}")
    out(f"Kept as a candidate. To confirm it, read the words: gage pair --directory {show(rec.handle)} --name NAME")
    return 0
