"""`gage key retire | upgrade | countersign | apply | publish`: key statements (spec/keys.md).

Retiring a key makes a statement signed by it (and by its replacement, when there is
one) and a bundle that carries it; contacts apply it when it arrives. Applying one can
only lower trust or add a candidate: nothing here confirms a key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gage.bundle import atomic
from gage.cli.output import emit_json, err, open_home, out, show
from gage.format.errors import Exit, MalformedError, UsageError
from gage.format.keyjson import with_fingerprints
from gage.format.keys import key_shown, key_text, short_fingerprint
from gage.format.keystatement import FILE_LIMIT
from gage.format.words import format_pairs
from gage.home import listing
from gage.home.cache.wordpairs import WordCache
from gage.home.identity import load_key_file
from gage.home.layout import Home
from gage.inbox import ownkey
from gage.trust import retirement


def _out_dir(args: Any) -> Path | None:
    return Path(args.output) if args.output else None


def _report_retired(done: ownkey.Retired, args: Any, what: str) -> None:
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


def cmd_upgrade(args: Any) -> int:
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
        outcome = retirement.apply_bundle(home, listing.resolve(home, source))
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
    if args.json:
        from gage.inbox.made_json import made

        assert done.path is not None
        emit_json(made(home, done.bundle, done.path, _out_dir(args)))
    else:
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
        lines.append(f"retired: {key_shown(r.key)} {r.reason} as of {r.retired_at}{nxt}{where}")
    return lines


def id_json(home: Home) -> list[dict[str, Any]]:
    cur = home.identity.key
    return [
        {
            "key": key_text(r.key),
            "fingerprint": short_fingerprint(r.key),
            "reason": r.reason,
            "retired_at": r.retired_at,
            "replacement": key_text(r.replacement) if r.replacement else None,
            "replacement_fingerprint": short_fingerprint(r.replacement) if r.replacement else None,
            "origin": r.origin,
            "current": r.key == cur,
        }
        for r in home.identity.retired
    ]
