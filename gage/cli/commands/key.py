"""`gage key export | retire | upgrade | countersign | apply | publish | protect | unprotect`: this home's key.

Retiring a key makes a statement signed by it (and by its replacement, when there is one) and a
bundle that carries it; contacts apply it when it arrives (spec/keys.md). Applying one can only
lower trust or add a candidate: nothing here confirms a key. Protecting seals the secret key
with a passphrase, asked on the terminal (twice for a new one) or read from a file or an
inherited descriptor (gage/cli/passphrase.py); identity.json is rewritten in one atomic step, so
a wrong passphrase, a mismatch or an interruption leaves it as it was.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.format.vocab import REASONS

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gage.home.layout import Home
    from gage.inbox import ownkey
    from gage.trust import retirement

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


def add_arguments(p: argparse.ArgumentParser) -> None:
    ksub = p.add_subparsers(dest="key_command", metavar="ACTION", required=True)
    k = ksub.add_parser("export", help="write my public key file, to start a pairing from")
    k.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    json_option(k, 'print {"name", "key", "path", "keyfile"} instead of the key file')

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
    json_option(k)
    add_passphrase_options(k)

    k = ksub.add_parser(
        "upgrade",
        help="replace my Ed25519-only key with a hybrid one (Ed25519 + ML-DSA-65); the old one is retired as superseded",
    )
    k.add_argument("--statement", metavar="FILE", help="also write the signed statement file here")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    json_option(k)

    k = ksub.add_parser("countersign", help="sign, with this home's key, a statement that names it as a replacement; send it")
    k.add_argument("file", metavar="FILE", help="the statement file `gage key retire --replace-with` wrote")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    json_option(k)
    add_passphrase_options(k)

    k = ksub.add_parser("apply", help="apply the key statement a bundle carries (import does this when one arrives)")
    k.add_argument("sources", nargs="+", metavar="ID|PATH", help="a bundle id (prefix) in this home, a bundle folder, or a statement file")
    json_option(k)

    k = ksub.add_parser("publish", help="make a new bundle carrying one of my retired keys' statements, to send again")
    k.add_argument("key", metavar="KEY", help="the retired key (key text, fingerprint, or 8+ hex digits)")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle into DIR/<id>")
    json_option(k, "describe the bundle made, as `gage bundle --json` does")
    add_passphrase_options(k)

    k = ksub.add_parser("protect", help="seal my secret key with a passphrase, or change the passphrase")
    add_passphrase_options(k, new=True)
    json_option(k, 'print {"key", "fingerprint", "protected": true}')

    k = ksub.add_parser("unprotect", help="keep my secret key unsealed again (asks for the passphrase)")
    add_passphrase_options(k)
    json_option(k, 'print {"key", "fingerprint", "protected": false}')


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.key_command](args)


def export(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from gage.cli.output import emit_json, err, open_home
    from gage.format.keys.file import KeyFile
    from gage.format.sanitize import json_text
    from gage.home import (
        sealing,  # the sealing-key binding, once this home has a mailbox (spec/relay.md)
    )

    home = open_home(args)
    mine = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
    carried = mine.binding.to_carried() if mine is not None else None
    data = KeyFile(key=home.identity.key, name=home.identity.name, sealing=carried).to_bytes()
    if args.output:
        from gage.bundle import atomic

        atomic.write_bytes(Path(args.output), data, 0o644)
        err(f"wrote {args.output}")
    if args.json:
        # The key file's own text too: without -o it is the only place it is written.
        from gage.format.keys.asjson import key_json

        ident = home.identity
        path = json_text(args.output) if args.output else None
        emit_json({"name": ident.name, **key_json(ident.key), "path": path, "keyfile": data.decode("utf-8")})
    elif not args.output:
        sys.stdout.write(data.decode("utf-8"))
    return 0


def _out_dir(args: argparse.Namespace) -> Path | None:
    from pathlib import Path

    return Path(args.output) if args.output else None


def _report_retired(done: ownkey.Retired, args: argparse.Namespace, what: str) -> None:
    from pathlib import Path

    from gage.cli.output import emit_json, err, out
    from gage.format.keys import short_fingerprint
    from gage.format.keys.asjson import with_fingerprints

    st = done.signed.statement
    if args.json:
        emit_json(
            {
                "statement": with_fingerprints(st.to_json()),
                "complete": st.replacement is None or done.signed.signed_by_replacement(),
                "key": done.identity.key_text,
                "fingerprint": short_fingerprint(done.identity.key),
                "bundle": done.bundle.id if done.bundle else None,
            }
        )
        return
    err(f"{what} {short_fingerprint(st.key)} ({st.reason}, as of {st.retired_at}); statement {st.id[:12]}")
    if done.bundle is not None and done.path is not None:
        err(f"the statement travels in bundle {done.bundle.id[:12]} (in the outbox at {done.path}); send it like any bundle:")
        err("each contact who confirmed the old key applies it when they import it (`gage key apply ID` otherwise)")
        if args.output:
            err(f"copied to {Path(args.output) / done.bundle.id}")
        out(done.bundle.id)


def retire(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gage.bundle import atomic
    from gage.cli.output import err, open_home
    from gage.format.errors import UsageError
    from gage.format.keys import short_fingerprint
    from gage.format.words import format_pairs
    from gage.home.cache.wordpairs import WordCache
    from gage.home.identity import load_key_file
    from gage.inbox import ownkey

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
    replacement = load_key_file(Path(args.replace_with)) if args.replace_with else None
    done = ownkey.retire(home, reason=args.reason, new=args.new, replacement=replacement, copy_to=_out_dir(args))
    if args.statement:
        atomic.write_bytes(Path(args.statement), done.signed.to_bytes(), 0o644)
    if not args.json:
        if args.new:
            words = WordCache(home.cache / "words.json").words_for(done.identity.key)
            err(f"new key: {short_fingerprint(done.identity.key)} (the whole key: `gage key export` or `gage id --full`)")
            err(f"new words: {format_pairs(words)}")
            err("from now on this home signs with the new key; contacts must pair with it (the ceremony, your new words)")
        elif replacement is not None:
            err(f"statement written to {args.statement}: take it to the home that holds the key {short_fingerprint(replacement.key)}")
            err(f"and run `gage key countersign {args.statement} -o DIR` there; that home sends it. This home signs nothing more.")
        else:
            err("this home's key signs nothing more; make a new home (`gage init`) to send again")
    _report_retired(done, args, "retired")
    return 0


def upgrade(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gage.bundle import atomic
    from gage.cli.output import err, open_home
    from gage.format.keys import short_fingerprint
    from gage.format.words import format_pairs
    from gage.home.cache.wordpairs import WordCache
    from gage.inbox import ownkey

    home = open_home(args)
    done = ownkey.upgrade(home, copy_to=_out_dir(args))
    if args.statement:
        atomic.write_bytes(Path(args.statement), done.signed.to_bytes(), 0o644)
    if not args.json:
        words = WordCache(home.cache / "words.json").words_for(done.identity.key)
        err(f"new hybrid key (Ed25519 + ML-DSA-65): {short_fingerprint(done.identity.key)}")
        err(f"new words: {format_pairs(words)}")
        err("the old key is retired as superseded; what it signed stays verified. Contacts see the new key as a")
        err("linked candidate when the statement arrives, and confirm it with the ceremony (your new words)")
    _report_retired(done, args, "upgraded: retired")
    return 0


def _read_file(path: Path) -> bytes:
    from gage.format.keys.statement import FILE_LIMIT
    from gage.trust import retirement

    return retirement.read_capped(path, FILE_LIMIT)


def countersign(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gage.cli.output import open_home
    from gage.inbox import ownkey

    home = open_home(args)
    done = ownkey.countersign(home, _read_file(Path(args.file)), copy_to=_out_dir(args))
    _report_retired(done, args, "countersigned, as its replacement, the retirement of")
    return 0


def _apply_one(home: Home, source: str) -> retirement.Outcome:
    from pathlib import Path

    from gage.format.errors import MalformedError
    from gage.home import listing
    from gage.trust import retirement

    path = Path(source)
    if path.is_dir() and not path.is_symlink():
        outcome = retirement.apply_bundle(home, path)
    elif path.exists() or path.is_symlink():
        outcome = retirement.apply_bytes(home, _read_file(path), source=f"file {path.name}")
    else:
        outcome = retirement.apply_bundle(home, listing.resolve(home, source))
    if outcome is None:
        raise MalformedError(
            "does not carry a key statement (a share with one file, gage-key-statement.json)", path=source
        )
    return outcome


def apply(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, err, open_home, out, show
    from gage.format.errors import Exit

    home = open_home(args)
    outcomes = [_apply_one(home, s) for s in args.sources]
    if args.json:
        emit_json([o.to_json() for o in outcomes])
    else:
        for o in outcomes:
            (out if o.applied else err)(("applied: " if o.applied else "") + show(o.message))
    return 0 if all(o.applied for o in outcomes) else int(Exit.REFUSED)


def publish(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, err, open_home, out
    from gage.format.keys import short_fingerprint
    from gage.inbox import ownkey

    home = open_home(args)
    done = ownkey.publish(home, args.key, copy_to=_out_dir(args))
    assert done.bundle is not None
    err(f"the statement for {short_fingerprint(done.signed.statement.key)} is in bundle {done.bundle.id[:12]}")
    if args.json:
        from gage.inbox.made_json import made

        assert done.path is not None
        emit_json(made(home, done.bundle, done.path, _out_dir(args)))
    else:
        out(done.bundle.id)
    return 0


def protect(args: argparse.Namespace) -> int:
    from gage.cli import passphrase
    from gage.cli.output import emit_json, err, open_home
    from gage.format.keys import short_fingerprint
    from gage.home import unlock

    home = open_home(args)
    was = home.identity.protected
    if was:
        unlock.signing_identity(home)  # the current passphrase first: a wrong one stops here
    new = passphrase.new(args)
    now = unlock.protect(home, new)
    if args.json:
        emit_json({"key": now.key_text, "fingerprint": short_fingerprint(now.key), "protected": True})
    err(
        "changed the passphrase of this home's key"
        if was
        else "this home's secret key is now sealed with the passphrase; commands that sign will ask for it"
    )
    return 0


def unprotect(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, err, open_home
    from gage.format.keys import short_fingerprint
    from gage.home import unlock

    home = open_home(args)
    now = unlock.unprotect(home)
    if args.json:
        emit_json({"key": now.key_text, "fingerprint": short_fingerprint(now.key), "protected": False})
    err("this home's secret key is no longer sealed: identity.json holds it in the clear (mode 0600)")
    return 0


# Each action's function, by the name `gage key ACTION` gives it (tests/test_cli_startup.py
# checks these are exactly the actions add_arguments makes).
ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {
    "export": export,
    "retire": retire,
    "upgrade": upgrade,
    "countersign": countersign,
    "apply": apply,
    "publish": publish,
    "protect": protect,
    "unprotect": unprotect,
}
