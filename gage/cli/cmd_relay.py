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
from gage.cli.sizes import rounded
from gage.format.errors import Exit, UsageError
from gage.format.keyjson import with_fingerprints
from gage.format.keys import short_fingerprint
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
    creds: str | None = getattr(args, "creds", None) or _relay("config").relay_creds(home)
    return creds


INTERRUPTED = 130  # Ctrl-C, as every command exits on it (spec/cli.md)


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
    why = ["SIGTERM"]  # what stopped it: SIGTERM, unless Ctrl-C (exit 130, as the exit-code table says)
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
        why[0] = "Ctrl-C"
    finally:
        srv.stop()
        if not args.dir:
            import shutil

            shutil.rmtree(store_dir, ignore_errors=True)  # the scratch store it made
    err(f"gage relay dev: stopped ({why[0]})")
    return INTERRUPTED if why[0] == "Ctrl-C" else 0


def _sealing_key(home: Home) -> sealing.SealingKey:
    with home.lock():
        return sealing.ensure(home.root, home.identity.secret)


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
        emit_json({**box.to_json(), "sealing_key": key.recipient, **_signing(home)})
        return 0
    out(address)
    err(f"mailbox {address} on {show(args.relay)}: at most {box.max_msgs:,} envelopes, {rounded(box.max_bytes)}")
    err(f"sealing key {key.recipient}, bound by your key {short_fingerprint(home.identity.key)}")
    err("Recorded in settings.toml. Your key file (`gage key export`) now carries it.")
    return 0


def _signing(home: Any) -> dict[str, str]:
    """This home's signing key in JSON, its fingerprint beside it (issue 27)."""
    return {"signing_key": home.identity.key_text, "signing_key_fingerprint": short_fingerprint(home.identity.key)}


def cmd_mailbox_show(args: Any) -> int:
    home = open_home(args)
    key = sealing.load(home.root, home.identity.key)
    if key is None:
        raise UsageError("this home has no mailbox yet: gage mailbox create --relay URL")
    url = _relay("config").relay_url(home)
    info = {"address": sealing.mailbox_address(key.recipient), "relay": url, "sealing_key": key.recipient, **_signing(home)}
    if args.json:
        emit_json(info)
        return 0
    # The signing key by its fingerprint, as every screen names a key (issue 27); the whole key is in --json.
    shown = {k: v for k, v in info.items() if k != "signing_key"}
    for k, v in shown.items():
        out(f"{k.replace('_fingerprint', '') + ':':<13}{show(v or '(none)')}")
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
    mailbox = _relay("mailbox")
    home = open_home(args)
    key = sealing.load(home.root, home.identity.key)
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
    rec = directory.publish(home, args.handle, url, relay_for_record=args.advertise or url, creds=_creds(home, args))
    if args.json:
        emit_json(rec.to_json() | {"status": "published"})
        return 0
    out(f"published {show(rec.handle)} -> mailbox {rec.mailbox} on {show(url)}")
    err("Anyone can read it, and anyone who runs the directory can change it: it is a claim. People still pair with you by the words.")
    return 0


def directory_claim(home: Home, args: Any) -> tuple[bytes, str, str]:
    """For `gage pair --directory`: the key the directory claims for the handle (a candidate now)."""
    directory = _relay("directory")
    url = _url(home, args)
    rec = directory.lookup(home, args.directory, url, creds=_creds(home, args))
    warn = f"; WARNING: {rec.note}" if rec.note else ""
    return rec.signing_key, rec.handle, f"the directory on {url} (UNCONFIRMED claim for {rec.handle!r}{warn})"


def cmd_directory_lookup(args: Any) -> int:
    directory = _relay("directory")
    home = open_home(args)
    url = _url(home, args)
    rec = directory.lookup(home, args.handle, url, creds=_creds(home, args))
    if args.json:
        emit_json(with_fingerprints(rec.to_json()))
        return 0
    out(f"{show(rec.handle)}: UNCONFIRMED (what the directory on {show(url)} says; a claim, not a fact)")
    out(f"  signing key  {short_fingerprint(rec.signing_key)}  (not confirmed; the whole key: --json)")
    out(f"  sealing key  {rec.binding.sealing_key}  (bound by that signing key)")
    out(f"  mailbox      {rec.mailbox} on {show(rec.relay or url)}")
    out(f"  published    {rec.published_at} (the publisher's claim)")
    if rec.note:
        out(f"  WARNING      {rec.note}")
    out(f"Kept as a candidate. To confirm it, read the words: gage pair --directory {show(rec.handle)} --name NAME")
    return 0
