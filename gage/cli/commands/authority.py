"""`gage authority check | init`: check or start the authority file (what agents may do with whose bundles)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable


def add_arguments(p: argparse.ArgumentParser) -> None:
    asub = p.add_subparsers(dest="authority_command", metavar="ACTION", required=True)
    a = asub.add_parser("check", help="validate authority.toml")
    json_option(a, 'print {"path", "exists", "ok", "errors", "grants"}')
    a = asub.add_parser("init", help="write a commented example authority.toml if there is none")
    json_option(a, 'print {"path"}')


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.authority_command](args)


def check(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format.errors import Exit, GageError
    from gage.format.sanitize import json_text
    from gage.home import authority as authority_mod
    from gage.home.contacts import Contacts

    home = open_home(args)
    contacts = Contacts.load(home.contacts_path)
    if not home.authority_path.exists():
        if args.json:
            emit_json({"path": json_text(str(home.authority_path)), "exists": False, "ok": True, "errors": [], "grants": []})
            return 0
        out("no authority.toml: every bundle is information only (`gage authority init` writes an example)")
        return 0
    try:
        af = authority_mod.load(home.authority_path, contacts)
    except GageError as exc:
        if not args.json:
            raise
        # cli.md promises the object whatever the file holds: a file that is not TOML (or not a
        # readable file) is one error, with its stage's exit code.
        emit_json({"path": json_text(str(home.authority_path)), "exists": True, "ok": False, "errors": [str(exc)], "grants": []})
        return int(exc.exit_code)
    if args.json:
        # Errors and grants quote the file, which anyone who can edit it wrote: JSON escapes them.
        doc = {"path": json_text(str(home.authority_path)), "exists": True, "ok": not af.errors}
        emit_json({**doc, "errors": af.errors, "grants": [g.to_json() for g in af.grants]})
        return int(Exit.MALFORMED) if af.errors else 0
    for e in af.errors:
        err(show(e))
    if af.errors:
        return int(Exit.MALFORMED)
    for g in af.grants:
        out(f"line {g.line}: {show(g.contact)} / {g.kind}: {show(g.may)}")
    out(f"ok: {len(af.grants)} grant(s)")
    return 0


def init(args: argparse.Namespace) -> int:
    from gage.bundle import atomic
    from gage.cli.output import emit_json, open_home, out
    from gage.format.errors import RefusedError
    from gage.format.sanitize import json_text
    from gage.home import authority as authority_mod

    home = open_home(args)
    if home.authority_path.exists():
        raise RefusedError("authority.toml exists; edit it by hand", path=str(home.authority_path))
    atomic.write_bytes(home.authority_path, authority_mod.EXAMPLE.encode("utf-8"), 0o600)
    if args.json:
        emit_json({"path": json_text(str(home.authority_path))})
    else:
        out(f"wrote {home.authority_path}")
    return 0


# Each action's function, by the name `gage authority ACTION` gives it.
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {"check": check, "init": init}
