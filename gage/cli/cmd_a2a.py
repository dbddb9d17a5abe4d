"""`gage a2a`: bundles as A2A artifacts (export, import), this home's card, and the live
endpoint (serve, send; these need the optional extra `gage[a2a]`).

The format and the card are core code (gage.carriers.a2a.artifact, gage.carriers.a2a.card); serve and
send load the SDK only when run, so every other command starts without it.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from pathlib import Path
from typing import Any

from gage import __version__
from gage.bundle import atomic
from gage.carriers.a2a import artifact, card
from gage.cli import cmd_keys
from gage.cli.output import emit_json, err, open_home, out, show
from gage.format.errors import Exit, GageIOError, RefusedError, UsageError
from gage.format.keys import short_fingerprint
from gage.home import listing
from gage.trust import retirement


def _limits(home: Any, args: Any) -> artifact.Limits:
    return artifact.Limits(max_bytes=args.max_bytes) if getattr(args, "max_bytes", None) else artifact.Limits.of(home)


def _read_bounded(source: str, limit: int) -> tuple[bytes, str]:
    """The input, read no further than `limit` + 1 bytes: a regular file (never a FIFO that
    would block) or standard input."""
    if source == "-":
        data = sys.stdin.buffer.read(limit + 1)
        where = "standard input"
    else:
        try:
            fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise GageIOError(f"cannot open: {exc.strerror}", path=source) from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise RefusedError("is not a regular file", path=source)
            chunks: list[bytes] = []
            total = 0
            while total <= limit:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            data = b"".join(chunks)
        except OSError as exc:
            raise GageIOError(f"cannot read: {exc.strerror}", path=source) from exc
        finally:
            os.close(fd)
        where = Path(source).name
    if len(data) > limit:
        raise RefusedError(f"is over the A2A limit of {limit} bytes for a JSON object; nothing was imported", path=where)
    return data, where


# What works today: the distribution is not on the package index yet (README, "Install it").
A2A_INSTALL = (
    "From a checkout: pip install -e '.[a2a]'; from a wheel: "
    f"pip install 'dist/gage_bundles-{__version__}-py3-none-any.whl[a2a]'; "
    "with pipx: pipx inject gage-bundles 'a2a-sdk[http-server]>=1.3,<2' uvicorn httpx"
)


def _sdk(module: str) -> Any:
    """gage.carriers.a2a.server or gage.carriers.a2a.client, which need the optional extra; loaded only here."""
    import importlib

    try:
        return importlib.import_module(f"gage.carriers.a2a.{module}")
    except ImportError as exc:
        raise UsageError(
            f"serve and send need the optional A2A extra ({exc.name or exc} is not installed). {A2A_INSTALL}"
        ) from None


def token_from_file(path: str | None) -> str | None:
    """A bearer token from a file (never an argument, which `ps` shows): for send, and deliver to an A2A agent."""
    if path is None:
        return None
    data, where = _read_bounded(path, 4096)
    token = data.decode("utf-8", errors="replace").strip()
    if len(token) < 16 or any(c.isspace() for c in token):
        raise RefusedError("a bearer token must be one line of at least 16 characters, with no spaces", path=where)
    return token


def cmd_export(args: Any) -> int:
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


def _report(landed: list[artifact.Landed], how: str) -> None:
    for r in landed:
        for note in r.notes:
            err(f"{r.id[:12]}: note: {show(note)}")
        if not r.new:
            err(f"{r.id[:12]}: already there ({r.state})")
        elif not r.ok:
            err(f"{r.id[:12]}: arrived {how} in pending, but it does NOT verify: {show(r.problem or '')}")
        else:
            err(f"{r.id[:12]}: arrived {how} in pending (unread; nothing is accepted until you say so)")


def cmd_import(args: Any) -> int:
    home = open_home(args)
    limits = _limits(home, args)
    data, where = _read_bounded(args.source, limits.max_request_bytes)
    transport = {"file": where} if args.source != "-" else {}
    landed = artifact.receive_bytes(home, data, protocol=args.protocol, transport=transport, limits=limits)
    # A key statement that arrived is applied now, or refused and why (spec/keys.md section 4).
    statements = retirement.apply_arrivals(home, [r.id for r in landed if r.new])
    if args.json:
        emit_json({"landed": [r.to_json() for r in landed], "key_statements": [o.to_json() for o in statements]})
        return 0
    _report(landed, "over A2A")
    cmd_keys.report_outcomes(statements)
    for r in landed:
        out(r.id)
    return 0


def cmd_card(args: Any) -> int:
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
    # The key by its fingerprint, as every line names one (issue 27); the card itself (--json) carries it whole.
    out(f"key:       {short_fingerprint(home.identity.key)} (a claim to whoever reads the card; they confirm it with the ceremony)")
    out(f"name:      {show(params['name'])} (a claim)")
    out(f"takes:     format versions {', '.join(params['versions'])}; kinds {', '.join(params['kinds'])}; "
        f"protocols {', '.join(params['protocols'])}; at most {params['max_bytes']} bytes")
    if args.url:
        out(f"card:      served at {show(card.card_url(args.url))} by `gage a2a serve`")
    out("Use --json for the JSON to put in a card's capabilities.extensions (with --url: the whole card).")
    return 0


def cmd_serve(args: Any) -> int:
    server = _sdk("server")
    home = open_home(args)
    token = token_from_file(args.token_file)
    server.check_binding(args.host, token)
    if args.url:
        card.check_url(args.url)
    srv = server.Server(
        home, host=args.host, port=args.port, token=token, limits=_limits(home, args), on_event=out, public_url=args.url
    )
    err(f"gage: serving {show(str(home.root))} as an A2A agent at {show(srv.url)} (card: {show(card.card_url(srv.url))})")
    err("gage: what arrives lands in pending, unread; nothing is accepted until you say so. Ctrl-C stops.")
    server.show_logs_visibly()
    # uvicorn stops on SIGTERM, then raises it again once shut down: caught here, to say why it stopped.
    caught: list[int] = []
    old = signal.signal(signal.SIGTERM, lambda signum, _frame: caught.append(signum))
    try:
        srv.run()
    finally:
        signal.signal(signal.SIGTERM, old)
    if caught:
        err(
            "gage: a2a serve stopped: it was sent SIGTERM (a request to end from another process, a service manager"
            " or the system); what had arrived is in pending"
        )
    return 0


def cmd_send(args: Any) -> int:
    client = _sdk("client")
    home = open_home(args)
    stored = listing.resolve(home, args.id)
    result = client.send(
        home, stored.path, args.url, protocol=args.protocol, token=token_from_file(args.token_file), limits=_limits(home, args),
        from_card=args.reply_to,
    )
    # Only gage's delivery result for this bundle counts as delivered; any other answer is its
    # own exit code (13), never 0 (issue 19).
    code = 0 if result.delivered else int(Exit.A2A_UNCONFIRMED)
    if args.json:
        emit_json(result.to_json())
        return code
    out(show(result.summary()))
    return code
