"""`gage mailbox create | fetch | show`: this home's mailbox on a relay (needs gage[relay]).

`create` makes the mailbox (or, for a relay's operator, every person's in a people file) and
records the relay in settings.toml; `fetch` takes the envelopes waiting, lands their bundles in
pending and then acknowledges them; `show` prints the address, relay and sealing key, making the
sealing key first if there is none. The relay's modules are imported inside each action, within
`relay_extra()`, which names what to install when the extra is missing.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, positive
from gage.cli.extras import relay_extra
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.cli.relaying import RELAY_EXAMPLES, add_credential_options

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gage.home import sealing
    from gage.home.layout import Home


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = RELAY_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    msub = p.add_subparsers(dest="mailbox_command", metavar="ACTION", required=True)
    c = msub.add_parser("create", help="make this home's mailbox on a relay and record the relay in settings.toml")
    c.add_argument("--relay", required=True, metavar="URL", help="the relay, e.g. nats://127.0.0.1:4222")
    add_credential_options(c)
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
    f = msub.add_parser("fetch", help="take the envelopes waiting, land their bundles in pending, then acknowledge them")
    f.add_argument("--relay", metavar="URL", help="default: the relay in settings.toml")
    add_credential_options(f)
    f.add_argument("--limit", type=positive, metavar="N", help="take at most N envelopes")
    add_passphrase_options(f)
    json_option(f)
    s = msub.add_parser("show", help="show this home's mailbox address, relay and sealing key")
    json_option(s)


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.mailbox_command](args)


def create(args: argparse.Namespace) -> int:
    from gage.cli.output import open_home
    from gage.cli.relaying import checked_url, given_creds
    from gage.format.errors import UsageError
    from gage.home import sealing

    with relay_extra():
        from gage.carriers.relay import config, mailbox
    url = checked_url(args.relay)
    cred = given_creds(args)
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
    config.record(home, url, cred)
    return _made(args, box, home, key)


def _made_for_people(args: argparse.Namespace, mailbox: Any, url: str, cred: Any, limits: dict[str, Any]) -> int:
    """Each person's mailbox, with the people file's limits unless a flag says otherwise."""
    from gage.cli.output import emit_json, err, out, show
    from gage.cli.sizes import rounded
    from gage.format import relayurl

    with relay_extra():
        from gage.carriers.relay import people as people_file
    people = people_file.load_people(args.people, read_password=lambda _p: "")  # no password is needed here
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


def _made(args: argparse.Namespace, box: Any, home: Home | None, key: sealing.SealingKey | None) -> int:
    from gage.cli.output import emit_json, err, out, show
    from gage.cli.sizes import rounded
    from gage.format import relayurl
    from gage.format.keys import short_fingerprint

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


def _sealing_key(home: Home) -> sealing.SealingKey:
    from gage.home import sealing, unlock

    signer = unlock.signing_identity(home)  # a protected home asks for its passphrase (the options, or the terminal)
    with home.lock():
        return sealing.ensure(home.root, signer)


def _signing(home: Home) -> dict[str, str]:
    """This home's signing key in JSON, its fingerprint beside it."""
    from gage.format.keys import short_fingerprint

    return {"signing_key": home.identity.key_text, "signing_key_fingerprint": short_fingerprint(home.identity.key)}


def show_mailbox(args: argparse.Namespace) -> int:
    """This home's mailbox address, relay and sealing key. A home with no sealing key yet gets one
    here, so a person has the address a relay's operator asks for before any relay exists."""
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.cli.relaying import home_relay
    from gage.format import relayurl
    from gage.format.errors import UsageError
    from gage.format.keys import short_fingerprint
    from gage.home import sealing, unlock

    home = open_home(args)
    key = unlock.sealing_key(home, opened=False)
    made = False
    if key is None:
        if home.identity.current_retirement is not None:
            raise UsageError("this home's key is retired; it has no mailbox and opens no new one")
        key = _sealing_key(home)
        made = True
    url = home_relay(home)
    info = {"address": sealing.mailbox_address(key.recipient), "relay": relayurl.public(url) if url else None, "sealing_key": key.recipient, **_signing(home)}
    if args.json:
        emit_json(info)
        return 0
    # The signing key by its fingerprint, as every screen names a key; the whole key is in --json.
    shown = {k: v for k, v in info.items() if k != "signing_key"}
    for k, v in shown.items():
        out(f"{k.replace('_fingerprint', '') + ':':<13}{show(v or '(none yet)')}")
    if made:
        err(f"made this home's sealing key, bound by your key {short_fingerprint(home.identity.key)}.")
    if url is None:
        err("No relay yet: give the address to the relay's operator (the people file's mailbox), then: gage mailbox create --relay URL")
    return 0


def fetch(args: argparse.Namespace) -> int:
    from gage.cli import relaying
    from gage.cli.output import JsonList, err, open_home
    from gage.format.errors import UsageError
    from gage.home import sealing, unlock

    with relay_extra():
        from gage.carriers.relay import mailbox
    home = open_home(args)
    # Opened now, before anything is taken: a protected home's passphrase is asked here, not per envelope.
    key = unlock.sealing_key(home, opened=True)
    if key is None:
        raise UsageError("this home has no mailbox yet: gage mailbox create --relay URL")
    address = sealing.mailbox_address(key.recipient)
    from gage.cli.progress import CountLine

    line = CountLine("mailbox fetch")
    # Nothing kept per envelope: the summary's counts, and the JSON's items written out as they come.
    tally = _Tally()
    listed = JsonList("fetched", home.staging) if args.json else None

    def each(o: Any) -> None:
        line.add(1, o.nbytes)
        tally.add(o)
        if listed is not None:
            listed.add(o.to_json())
        else:
            with line.aside():
                _report(o)

    try:
        got = mailbox.run(
            mailbox.fetch(home, relaying.relay_url(home, args), address, creds=relaying.creds(home, args), limit=args.limit, on_opened=each, keep=False)
        )
    finally:
        line.clear()
    if listed is not None:
        listed.emit({"mailbox": address}, {"more": got.left})
        return 0
    if not tally.fetched:
        err("the mailbox is empty")
    elif tally.fetched > 1:
        err(_summary(tally, got.left, line.rate()))
    return 0


def _report(o: Any) -> None:
    from gage.cli.output import err, show

    if o.dropped is not None:
        err(f"an envelope was dropped ({o.stage}): {show(o.dropped)}; journaled")
    elif not o.new:
        err(f"{o.id[:12]}: already there ({o.state})")
    elif not o.ok:
        err(f"{o.id[:12]}: arrived by relay in pending, but it does NOT verify")
    else:
        err(f"{o.id[:12]}: arrived by relay in pending (unread; nothing is accepted until you say so)")


class _Tally:
    """What a fetch's envelopes came to, counted as each is acknowledged: the summary's numbers."""

    def __init__(self) -> None:
        self.fetched = self.new = self.bad = self.again = self.dropped = 0

    def add(self, o: Any) -> None:
        self.fetched += 1
        self.new += bool(o.new)
        self.bad += bool(o.new and not o.ok)
        self.again += bool(o.id is not None and not o.new)
        self.dropped += o.dropped is not None


def _summary(got: _Tally, left: bool, rate: float) -> str:
    """The one line a fetch of many ends with: how many came to what."""
    more = "; more are waiting (--limit)" if left else ""
    return (
        f"fetched {got.fetched} envelopes ({rate:.0f}/s): {got.new} landed in pending"
        f"{f' ({got.bad} do NOT verify)' if got.bad else ''}, {got.again} already there, {got.dropped} dropped{more}"
    )


# Each action's function, by the name `gage mailbox ACTION` gives it.
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {"create": create, "fetch": fetch, "show": show_mailbox}
