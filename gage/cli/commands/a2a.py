"""`gage a2a export | import | card | serve | send`: bundles over A2A.

Bundles as A2A artifacts (export, import), this home's card, and the live endpoint (serve, send:
these need the optional extra `gage[a2a]`, imported inside them within `a2a_extra()`). The
format and the card are core code (gage.carriers.a2a.artifact, gage.carriers.a2a.card); every
other command starts without the SDK.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option, max_bytes, port
from gage.cli.extras import a2a_extra

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable

    from gage.carriers.a2a import artifact
    from gage.home.layout import Home

# Copies of gage.carriers.a2a.artifact's PROTOCOLS and DEFAULT_PROTOCOL: importing them would load
# the A2A code to build this parser (tests/test_cli_startup.py checks the copies equal the core's).
PROTOCOLS = ("1.0", "0.3")
DEFAULT_PROTOCOL = "1.0"

A2A_EXAMPLES = """\
examples:
  gage a2a export 3f2a -o bundle.a2a.json          # an A2A 1.0 Artifact
  gage a2a export 3f2a --protocol 0.3 -o b.json     # the same bundle for a 0.3 agent
  gage a2a import bundle.a2a.json                  # lands in inbox/pending, unread
  gage a2a card --url http://127.0.0.1:8470/ --json
  gage a2a serve --port 8470                       # needs the a2a extra
  gage a2a send 3f2a http://127.0.0.1:8470/        # needs the a2a extra
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Bundles over A2A. The bundle travels byte for byte; nothing A2A says is consent or trust."
    p.epilog = A2A_EXAMPLES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    asub = p.add_subparsers(dest="a2a_command", metavar="ACTION", required=True)

    e = asub.add_parser("export", help="write a bundle as an A2A Artifact (JSON)")
    e.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    e.add_argument("--protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL, help="A2A protocol version (default 1.0)")
    e.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    e.add_argument("--force", action="store_true", help="replace FILE if it exists")
    e.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the largest bundle to export (default: this home's A2A limit)")

    i = asub.add_parser("import", help="land the bundles in an A2A Artifact, Message or Task in inbox/pending")
    i.add_argument("source", metavar="FILE", help="a JSON file, or - for standard input")
    i.add_argument("--protocol", choices=PROTOCOLS, help="read as this version (default: detected)")
    i.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the most bytes to take (default: this home's A2A limit)")
    json_option(i)

    c = asub.add_parser("card", help="print this home's gage extension entry for an agent card, or a whole card with --url")
    c.add_argument("--url", metavar="URL", help="the URL the agent is served at: print a whole agent card")
    json_option(c)

    s = asub.add_parser("serve", help="run an A2A agent that lands received bundles in pending (needs the a2a extra; see the README)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=port, default=8470, help="port (default 8470; 0 picks a free one)")
    s.add_argument("--url", metavar="URL", help="the URL the card advertises (default: http://HOST:PORT/)")
    s.add_argument("--token-file", metavar="FILE", help="a file holding a bearer token every request must carry (required off loopback)")
    s.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the most bytes one request may carry (default: this home's A2A limit)")
    json_option(s, "one JSON object per line, as `gage watch --json` prints (time, kind, message, id, path)")

    t = asub.add_parser("send", help="send a bundle to an A2A agent (needs the a2a extra; see the README)")
    t.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    t.add_argument("url", metavar="URL", help="the agent's URL or its card's URL")
    t.add_argument("--protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL, help="A2A protocol version (default 1.0)")
    t.add_argument("--token-file", metavar="FILE", help="a bearer token for the agent")
    t.add_argument("--reply-to", metavar="URL", help="the URL of your own `gage a2a serve`, sent as a claim so the receiver can answer")
    t.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the largest bundle to send (default: this home's A2A limit)")
    json_option(t)


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.a2a_command](args)


def _limits(home: Home, args: argparse.Namespace) -> artifact.Limits:
    from gage.carriers.a2a import artifact

    return artifact.Limits(max_bytes=args.max_bytes) if getattr(args, "max_bytes", None) else artifact.Limits.of(home)


def export(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from gage.bundle import atomic
    from gage.carriers.a2a import artifact
    from gage.cli.output import err, open_home, show
    from gage.format.errors import RefusedError
    from gage.home import listing

    home = open_home(args)
    stored = listing.resolve(home, args.id)
    obj = artifact.export_artifact(stored.path, protocol=args.protocol, limits=_limits(home, args))
    data = (json.dumps(obj, indent=2, ensure_ascii=True) + "\n").encode("ascii")
    if args.output:
        dest = Path(args.output)
        if (dest.exists() or dest.is_symlink()) and not args.force:
            raise RefusedError("exists; give --force to replace it", path=str(dest))
        atomic.write_bytes(dest, data, 0o644)
        err(f"{stored.id[:12]}: wrote an A2A {args.protocol} artifact to {show(str(dest))}")
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def import_(args: argparse.Namespace) -> int:
    from gage.carriers.a2a import artifact
    from gage.cli.keyreport import report_outcomes
    from gage.cli.output import emit_json, open_home, out
    from gage.cli.tokenfile import read_bounded
    from gage.trust import retirement

    home = open_home(args)
    limits = _limits(home, args)
    data, where = read_bounded(args.source, limits.max_request_bytes)
    transport = {"file": where} if args.source != "-" else {}
    landed = artifact.receive_bytes(home, data, protocol=args.protocol, transport=transport, limits=limits)
    # A key statement that arrived is applied now, or refused and why (spec/keys.md section 4).
    statements = retirement.apply_arrivals(home, [r.id for r in landed if r.new])
    if args.json:
        emit_json({"landed": [r.to_json() for r in landed], "key_statements": [o.to_json() for o in statements]})
        return 0
    _report(landed, "over A2A")
    report_outcomes(statements)
    for r in landed:
        out(r.id)
    return 0


def _report(landed: list[artifact.Landed], how: str) -> None:
    from gage.cli.output import err, show

    for r in landed:
        for note in r.notes:
            err(f"{r.id[:12]}: note: {show(note)}")
        if not r.new:
            err(f"{r.id[:12]}: already there ({r.state})")
        elif not r.ok:
            err(f"{r.id[:12]}: arrived {how} in pending, but it does NOT verify: {show(r.problem or '')}")
        else:
            err(f"{r.id[:12]}: arrived {how} in pending (unread; nothing is accepted until you say so)")


def show_card(args: argparse.Namespace) -> int:
    from gage.carriers.a2a import card
    from gage.cli.output import emit_json, open_home, out, show
    from gage.format.keys import short_fingerprint

    home = open_home(args)
    if args.url:
        value = card.agent_card(home, args.url)
    else:
        value = card.card_extension(home)
    if args.json:
        emit_json(value)
        return 0
    ext = card.card_extension(home)
    params = ext["params"]
    out(f"extension: {ext['uri']}")
    # The key by its fingerprint, as every line names one; the card itself (--json) carries it whole.
    out(f"key:       {short_fingerprint(home.identity.key)} (a claim to whoever reads the card; they confirm it with the ceremony)")
    out(f"name:      {show(params['name'])} (a claim)")
    out(f"takes:     format versions {', '.join(params['versions'])}; kinds {', '.join(params['kinds'])}; "
        f"protocols {', '.join(params['protocols'])}; at most {params['max_bytes']} bytes")
    if args.url:
        out(f"card:      served at {show(card.card_url(args.url))} by `gage a2a serve`")
    out("Use --json for the JSON to put in a card's capabilities.extensions (with --url: the whole card).")
    return 0


def serve(args: argparse.Namespace) -> int:
    import signal

    from gage.carriers.a2a import card
    from gage.carriers.events import WatchEvent
    from gage.cli.output import open_home
    from gage.cli.tokenfile import token_from_file
    from gage.cli.watch_log import WatchLog

    with a2a_extra():
        from gage.carriers.a2a import server
    home = open_home(args)
    token = token_from_file(args.token_file)
    server.check_binding(args.host, token)
    if args.url:
        card.check_url(args.url)
    # The lines `gage watch` prints, by its printer: what arrives, what is refused, and why.
    log = WatchLog(as_json=args.json)
    srv = server.Server(
        home, host=args.host, port=args.port, token=token, limits=_limits(home, args), on_event=log, public_url=args.url
    )
    log(
        WatchEvent(
            "started",
            f"serving {home.root} as an A2A agent at {srv.url} (card: {card.card_url(srv.url)}); what arrives lands in"
            " pending, unread; nothing is accepted until you say so. Ctrl-C stops.",
        )
    )
    server.show_logs_visibly()
    # uvicorn stops on SIGTERM, then raises it again once shut down: caught here, to say why it stopped.
    caught: list[int] = []
    old = signal.signal(signal.SIGTERM, lambda signum, _frame: caught.append(signum))
    try:
        srv.run()
    finally:
        signal.signal(signal.SIGTERM, old)
        why = (
            ": it was sent SIGTERM (a request to end from another process, a service manager or the system)"
            if caught
            else ""
        )
        log(WatchEvent("stopped", f"stopped serving{why}; what had arrived is in pending"))
    return 0


def send(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, open_home, out, show
    from gage.cli.tokenfile import token_from_file
    from gage.format.errors import Exit
    from gage.home import listing

    with a2a_extra():
        from gage.carriers.a2a import client
    home = open_home(args)
    stored = listing.resolve(home, args.id)
    result = client.send(
        home, stored.path, args.url, protocol=args.protocol, token=token_from_file(args.token_file), limits=_limits(home, args),
        from_card=args.reply_to,
    )
    # Only gage's delivery result for this bundle counts as delivered; any other answer is its
    # own exit code (13), never 0.
    code = 0 if result.delivered else int(Exit.A2A_UNCONFIRMED)
    if args.json:
        emit_json(result.to_json())
        return code
    out(show(result.summary()))
    return code


# Each action's function, by the name `gage a2a ACTION` gives it.
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {
    "export": export,
    "import": import_,
    "card": show_card,
    "serve": serve,
    "send": send,
}
