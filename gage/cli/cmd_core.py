"""Commands that make and move bundles: init, id, key, bundle, verify, import, list, demo, tui."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import bundle as bundle_mod
from .. import send, store
from .. import verdict as verdict_mod
from ..contacts import Contacts
from ..errors import Exit, GageError, GageIOError, UsageError
from ..home import ALL_STATES, Home
from ..keys import KeyFile, key_text
from ..manifest import KINDS
from ..words import WordCache, format_pairs
from . import cmd_keys, import_json
from .output import emit_json, err, home_path, open_home, out, show


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="make an identity and a home")
    p.add_argument("--name", required=True, help="your name, as your contacts will see it claimed")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("id", help="show my name, key and word-pairs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_id)

    p = sub.add_parser("key", help="public key files")
    ksub = p.add_subparsers(dest="key_command", metavar="ACTION", required=True)
    k = ksub.add_parser("export", help="write my public key file, to start a pairing from")
    k.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    k.set_defaults(func=cmd_key_export)
    cmd_keys.register(ksub)

    p = sub.add_parser("bundle", help="make a signed bundle of files and folders")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--to", action="append", default=[], metavar="NAME", help="a confirmed contact (repeatable)")
    p.add_argument("--parent", metavar="ID", help="the bundle this one replies to")
    p.add_argument("--subject", metavar="TEXT")
    p.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle into DIR/<id>")
    p.set_defaults(func=cmd_bundle)

    p = sub.add_parser("verify", help="check structure, integrity and signature of a bundle directory")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("import", help="copy bundle directories into inbox/pending")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--json", action="store_true", help="one result per PATH, as data, instead of the ids")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("list", help="list bundles in the home")
    p.add_argument("--state", choices=ALL_STATES)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("demo", help="open gage on a throwaway demo home")
    p.add_argument("--no-tui", action="store_true", help="make the demo home and print its path")
    p.add_argument("--dir", metavar="DIR", help="make the demo home here instead of a temporary folder")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tui", help="open the interface (the default with no command)")
    p.set_defaults(func=cmd_tui)


def cmd_init(args: Any) -> int:
    home = Home.init(home_path(args), args.name)
    words = WordCache(home.cache / "words.json").words_for(home.identity.key)
    out(f"made a gage home at {home.root}")
    out(f"name:  {show(home.identity.name)}")
    out(f"key:   {home.identity.key_text}")
    out(f"words: {format_pairs(words)}")
    return 0


def cmd_id(args: Any) -> int:
    home = open_home(args)
    ident = home.identity
    words = WordCache(home.cache / "words.json").words_for(ident.key)
    if args.json:
        shown: dict[str, Any] = {"name": ident.name, "key": ident.key_text, "words": [list(p) for p in words]}
        if ident.retired:
            shown["retired"] = cmd_keys.id_json(home)  # this home's retired keys (spec/keys.md section 6)
        emit_json(shown)
        return 0
    out(f"name:  {show(ident.name)}")
    done = ident.current_retirement
    if done is not None:
        out(f"key:   {ident.key_text} (RETIRED as {done.reason} as of {done.retired_at}: this home signs nothing more)")
    else:
        out(f"key:   {ident.key_text}")
    out(f"words: {format_pairs(words)}")
    for line in cmd_keys.id_lines(home):
        out(line)
    return 0


def cmd_key_export(args: Any) -> int:
    home = open_home(args)
    data = KeyFile(key=home.identity.key, name=home.identity.name).to_bytes()
    if args.output:
        from .. import atomic

        atomic.write_bytes(Path(args.output), data, 0o644)
        err(f"wrote {args.output}")
    else:
        sys.stdout.write(data.decode("utf-8"))
    return 0


def cmd_bundle(args: Any) -> int:
    home = open_home(args)
    manifest, dest = send.create(
        home,
        [Path(p) for p in args.paths],
        kind=args.kind,
        to=args.to,
        parent=args.parent,
        subject=args.subject,
        copy_to=Path(args.output) if args.output else None,
    )
    n = len(manifest.files)
    err(f"bundled {n} file{'s' if n != 1 else ''} ({manifest.total_size} bytes) as {manifest.kind} into {dest}")
    if args.output:
        err(f"copied to {Path(args.output) / manifest.id}")
    out(manifest.id)
    return 0


def cmd_verify(args: Any) -> int:
    root = Path(args.dir)
    if not root.exists():
        raise GageIOError("does not exist", path=str(root))
    result = bundle_mod.check(root)
    if args.json:
        emit_json(result.to_json())
    else:
        for w in result.warnings:
            err(f"warning: {show(str(w))}")
        if result.ok:
            m = result.manifest
            assert m is not None
            out(f"ok: {m.id}")
            out(f"  signed by {_key(m)} (the manifest claims the name {show(m.sender.name)!r})")
            out(f"  {len(m.files)} file(s), {m.total_size} bytes, all present and matching; signature good")
        else:
            for p in result.problems:
                err(f"{p.stage}: {show(str(p))}")
    first = result.first_error()
    return int(first.exit_code) if first else 0


def _key(m: Any) -> str:
    return key_text(m.sender.key)


def cmd_import(args: Any) -> int:
    home = open_home(args)
    worst = 0
    arrived: list[str] = []
    rows: list[dict[str, Any]] = []  # for --json (gage/cli/import_json.py)
    for p in args.paths:
        # Each path stands alone: one bad folder is reported and the rest still come in.
        try:
            res = store.import_bundle(home, Path(p))
        except GageError as exc:
            err(f"gage: {exc.stage}: {show(str(exc))}")
            worst = worst or int(exc.exit_code)
            rows.append(import_json.failed(p, exc))
            continue
        rows.append(import_json.result(p, res))
        if not res.new:
            err(f"{res.id[:12]}: already there ({res.state})")
        else:
            for name in res.left_behind:
                err(f"{res.id[:12]}: left behind {show(name)}: not part of the bundle")
            if res.check is not None and not res.check.ok:
                first = res.check.first_error()
                err(f"{res.id[:12]}: imported to pending, but it does NOT verify: {show(str(first))}")
            else:
                err(f"{res.id[:12]}: imported to pending (unread; nothing is accepted until you say so)")
            arrived.append(res.id)
        if not args.json:
            out(res.id)
    # A key statement that arrived is applied now (or refused, and why): spec/keys.md.
    if args.json:
        emit_json(import_json.document(rows, import_json.statements(home, arrived)))
    else:
        cmd_keys.report_arrivals(home, arrived)
    return worst


def cmd_list(args: Any) -> int:
    """Every bundle with the verdict computed now. The sender is the verdict's (`Sender.to_json()`,
    the shape `gage verdict --json` prints): never looked up in the contacts here, so a bundle
    whose signature fails is never listed under a contact's name (issue 9, class 1)."""
    home = open_home(args)
    contacts = Contacts.load(home.contacts_path)
    states = (args.state,) if args.state else ALL_STATES
    facts = verdict_mod.JournalFacts.of(home)
    rows = []
    labels: dict[str, str] = {}
    for s in store.list_bundles(home, states):
        v = verdict_mod.compute(home, s, contacts=contacts, facts=facts)
        m = v.manifest
        verdict: str = v.verdict
        if s.state == "outbox" and v.sender.is_me and verdict != "invalid":
            verdict = "mine"  # my own bundle: "unverified" (no contact is me) would only mislead
        rows.append(
            {
                "id": s.id,
                "state": s.state,
                "kind": m.kind if m else None,
                "created": m.created if m else None,
                "subject": m.subject if m else None,
                "verdict": verdict,
                "accepted_how": v.accepted_how,
                "sender": v.sender.to_json(),
            }
        )
        labels[s.id] = "me" if v.sender.is_me else v.sender.describe()
    order = {st: i for i, st in enumerate(ALL_STATES)}
    rows.sort(key=lambda r: (order[r["state"]], r["created"] or "", r["id"]))
    if args.json:
        emit_json(rows)
        return 0
    if not rows:
        out("no bundles")
        return 0
    for r in rows:
        if r["kind"] is None:
            out(f"{r['state']:<9} {r['id'][:12]}  (unreadable manifest)")
            continue
        subj = show(r["subject"] or "")
        if r["accepted_how"] == "unattended":
            subj = f"[accepted UNATTENDED] {subj}"
        elif r["accepted_how"] == "human-unverified":
            subj = f"[accepted with sender unverified] {subj}"
        out(f"{r['state']:<9} {r['id'][:12]}  {r['verdict']:<10} {r['kind']:<14} {show(labels[r['id']]):<28} {subj}")
    return 0


def cmd_demo(args: Any) -> int:
    from ..demo import make_demo

    root = make_demo(Path(args.dir) if args.dir else None)
    if args.no_tui:
        out(str(root))
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        err("gage: no terminal to open the interface on; the demo home is made:")
        out(str(root))
        err(f"try: GAGE_HOME={root} gage list")
        return 0
    try:
        from ..tui.app import run as run_tui
    except ImportError:
        out(f"demo home: {root}")
        out(f"try: GAGE_HOME={root} gage list")
        return 0
    return run_tui(Home.open(root))


def cmd_tui(args: Any) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the interface needs a terminal on standard input and output; use the commands (`gage --help`)")
    try:
        from ..tui.app import run as run_tui
    except ImportError:
        err("gage: the interface is not available in this build; see `gage --help`")
        return int(Exit.USAGE)
    return run_tui(open_home(args))
