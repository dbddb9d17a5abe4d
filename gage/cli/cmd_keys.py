"""`gage key retire | countersign | apply | publish`: key statements (spec/keys.md).

Retiring a key makes a statement signed by it (and by its replacement, when there is
one) and a bundle that carries it; contacts apply it when it arrives. Applying one can
only lower trust or add a candidate: nothing here confirms a key.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import atomic, ownkey, retirement, store
from ..errors import Exit, MalformedError, UsageError
from ..home import Home
from ..keys import KeyFile, key_text, short_fingerprint
from ..keystatement import FILE_LIMIT, REASONS
from ..words import WordCache, format_pairs
from .output import emit_json, err, open_home, out, show

RETIRE_EXAMPLES = """\
examples:
  gage key retire --reason superseded --new -o shared/        # a new key here; send the statement
  gage key retire --reason compromised --new -o shared/       # leaked: nothing it signed verifies again
  gage key retire --reason superseded --replace-with new.key --statement retire.json
                                                              # the new key is on another machine:
  gage key countersign retire.json -o shared/                 #   run this there, with the new key
  gage key retire --reason compromised --key 3f2a-91c0-77de -o shared/
                                                              # an old key superseded here was leaked after all
"""


def register(ksub: argparse._SubParsersAction) -> None:
    """Actions under `gage key` (cmd_core registers `key` itself and `key export`)."""
    k = ksub.add_parser(
        "retire",
        help="retire my key with a signed statement; optionally name a new key (--new, --replace-with)",
        epilog=RETIRE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    k.add_argument("--reason", required=True, choices=REASONS, help="superseded (a new key) or compromised (leaked, stolen)")
    which = k.add_mutually_exclusive_group()
    which.add_argument("--new", action="store_true", help="make a new key in this home; it signs the statement too")
    which.add_argument(
        "--replace-with", metavar="KEYFILE", help="the new key's file, from another home; that home countersigns and sends"
    )
    which.add_argument(
        "--key", metavar="KEY", help="with --reason compromised: retire again one of my keys already retired as superseded"
    )
    k.add_argument("--statement", metavar="FILE", help="also write the signed statement file here (required with --replace-with)")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_retire)

    k = ksub.add_parser("countersign", help="sign, with this home's key, a statement that names it as a replacement; send it")
    k.add_argument("file", metavar="FILE", help="the statement file `gage key retire --replace-with` wrote")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_countersign)

    k = ksub.add_parser("apply", help="apply the key statement a bundle carries (import does this when one arrives)")
    k.add_argument("sources", nargs="+", metavar="ID|PATH", help="a bundle id (prefix) in this home, a bundle folder, or a statement file")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_apply)

    k = ksub.add_parser("publish", help="make a new bundle carrying one of my retired keys' statements, to send again")
    k.add_argument("key", metavar="KEY", help="the retired key (key text, fingerprint, or 8+ hex digits)")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle into DIR/<id>")
    k.set_defaults(func=cmd_publish)


def _out_dir(args: Any) -> Path | None:
    return Path(args.output) if args.output else None


def _report_retired(done: ownkey.Retired, args: Any, what: str) -> None:
    st = done.signed.statement
    if args.json:
        emit_json(
            {
                "statement": st.to_json(),
                "complete": st.replacement is None or done.signed.signed_by_replacement(),
                "key": done.identity.key_text,
                "bundle": done.bundle.id if done.bundle else None,
            }
        )
        return
    err(f"{what} {key_text(st.key)} ({st.reason}, as of {st.retired_at}); statement {st.id[:12]}")
    if done.bundle is not None and done.path is not None:
        err(f"the statement travels in bundle {done.bundle.id[:12]} (in the outbox at {done.path}); send it like any bundle:")
        err("each contact who confirmed the old key applies it when they import it (`gage key apply ID` otherwise)")
        if args.output:
            err(f"copied to {Path(args.output) / done.bundle.id}")
        out(done.bundle.id)


def cmd_retire(args: Any) -> int:
    home = open_home(args)
    if args.replace_with and not args.statement:
        raise UsageError("with --replace-with, give --statement FILE: the other home countersigns that file")
    if args.replace_with and args.output:
        raise UsageError("with --replace-with there is no bundle yet: the home with the new key makes it (`gage key countersign`)")
    if args.key:
        if args.reason != "compromised":
            raise UsageError("--key retires a key again, and only as compromised: a retired key never becomes less retired")
        done = ownkey.escalate(home, args.key, copy_to=_out_dir(args))
        if args.statement:
            atomic.write_bytes(Path(args.statement), done.signed.to_bytes(), 0o644)
        _report_retired(done, args, "retired again, as compromised,")
        return 0
    replacement = KeyFile.load(Path(args.replace_with)) if args.replace_with else None
    done = ownkey.retire(home, reason=args.reason, new=args.new, replacement=replacement, copy_to=_out_dir(args))
    if args.statement:
        atomic.write_bytes(Path(args.statement), done.signed.to_bytes(), 0o644)
    if not args.json:
        if args.new:
            words = WordCache(home.cache / "words.json").words_for(done.identity.key)
            err(f"new key: {done.identity.key_text}")
            err(f"new words: {format_pairs(words)}")
            err("from now on this home signs with the new key; contacts must pair with it (the ceremony, your new words)")
        elif replacement is not None:
            err(f"statement written to {args.statement}: take it to the home that holds {key_text(replacement.key)}")
            err(f"and run `gage key countersign {args.statement} -o DIR` there; that home sends it. This home signs nothing more.")
        else:
            err("this home's key signs nothing more; make a new home (`gage init`) to send again")
    _report_retired(done, args, "retired")
    return 0


def _read_file(path: Path) -> bytes:
    return retirement.read_capped(path, FILE_LIMIT)


def cmd_countersign(args: Any) -> int:
    home = open_home(args)
    done = ownkey.countersign(home, _read_file(Path(args.file)), copy_to=_out_dir(args))
    _report_retired(done, args, "countersigned, as its replacement, the retirement of")
    return 0


def _apply_one(home: Home, source: str) -> retirement.Outcome:
    path = Path(source)
    if path.is_dir() and not path.is_symlink():
        outcome = retirement.apply_bundle(home, path)
    elif path.exists() or path.is_symlink():
        outcome = retirement.apply_bytes(home, _read_file(path), source=f"file {path.name}")
    else:
        outcome = retirement.apply_bundle(home, store.resolve(home, source))
    if outcome is None:
        raise MalformedError(
            "does not carry a key statement (a share with one file, gage-key-statement.json)", path=source
        )
    return outcome


def cmd_apply(args: Any) -> int:
    home = open_home(args)
    outcomes = [_apply_one(home, s) for s in args.sources]
    if args.json:
        emit_json([o.to_json() for o in outcomes])
    else:
        for o in outcomes:
            (out if o.applied else err)(("applied: " if o.applied else "") + show(o.message))
    return 0 if all(o.applied for o in outcomes) else int(Exit.REFUSED)


def cmd_publish(args: Any) -> int:
    home = open_home(args)
    done = ownkey.publish(home, args.key, copy_to=_out_dir(args))
    assert done.bundle is not None
    err(f"the statement for {short_fingerprint(done.signed.statement.key)} is in bundle {done.bundle.id[:12]}")
    out(done.bundle.id)
    return 0


def report_outcomes(outcomes: list[retirement.Outcome]) -> None:
    for o in outcomes:
        where = f"{o.carrier[:12]}: " if o.carrier else ""
        err(f"{where}{'key statement applied: ' if o.applied else ''}{show(o.message)}")


def report_arrivals(home: Home, ids: list[str]) -> None:
    report_outcomes(retirement.apply_arrivals(home, ids))


def id_lines(home: Home) -> list[str]:
    """`gage id`: this home's retired keys, oldest first."""
    lines = []
    for r in home.identity.retired:
        where = "" if r.origin == "this home" else " (another home's key, which this one replaces)"
        nxt = f"; replaced by {short_fingerprint(r.replacement)}" if r.replacement else "; no replacement"
        lines.append(f"retired: {key_text(r.key)} {r.reason} as of {r.retired_at}{nxt}{where}")
    return lines


def id_json(home: Home) -> list[dict[str, Any]]:
    cur = home.identity.key
    return [
        {
            "key": key_text(r.key),
            "reason": r.reason,
            "retired_at": r.retired_at,
            "replacement": key_text(r.replacement) if r.replacement else None,
            "origin": r.origin,
            "current": r.key == cur,
        }
        for r in home.identity.retired
    ]
