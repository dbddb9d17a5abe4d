"""Commands that make and move bundles: init, id, key, bundle, verify, import, list, demo, tui."""

from __future__ import annotations

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
from ..sanitize import json_text
from ..vocab import Place
from ..words import WordCache, format_pairs
from . import cmd_keys, import_json, made_json
from .output import emit_json, err, home_path, open_home, out, show


def cmd_init(args: Any) -> int:
    home = Home.init(home_path(args), args.name)
    if args.json:
        emit_json(made_json.identity(home))
        return 0
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
    from .. import (
        sealing,  # the sealing-key binding, once this home has a mailbox (spec/relay.md)
    )

    mine = sealing.load(home.root, home.identity.signing_key)
    carried = mine.binding.to_carried() if mine is not None else None
    data = KeyFile(key=home.identity.key, name=home.identity.name, sealing=carried).to_bytes()
    if args.output:
        from .. import atomic

        atomic.write_bytes(Path(args.output), data, 0o644)
        err(f"wrote {args.output}")
    if args.json:
        # The key file's own text too: without -o it is the only place it is written.
        ident = home.identity
        path = json_text(args.output) if args.output else None
        emit_json({"name": ident.name, "key": ident.key_text, "path": path, "keyfile": data.decode("utf-8")})
    elif not args.output:
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
    if args.json:
        emit_json(made_json.made(home, manifest, dest, Path(args.output) if args.output else None))
    else:
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
    from .. import ceremony

    home = open_home(args)
    worst = 0
    arrived: list[str] = []
    rows: list[dict[str, Any]] = []  # for --json (gage/cli/import_json.py)
    for p in args.paths:
        # Each path stands alone: one bad folder is reported and the rest still come in.
        try:
            res = store.import_bundle(home, Path(p))
            ceremony.remember_signer(home, res)  # the key layer records the candidate, not the store
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
    rows, labels = list_rows(home, (args.state,) if args.state else ALL_STATES)
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


def list_rows(home: Home, states: tuple[Place, ...]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows of `gage list`, and each bundle's sender as the line shows it.

    Checks come through the home's check cache (gage.checkcache: a payload is hashed again
    only when its tree changed, and each manifest is parsed once); contacts, journal and
    authority are read once, here, and the trust half of every verdict is computed fresh."""
    from ..checkcache import CheckCache

    contacts = Contacts.load(home.contacts_path)
    facts = verdict_mod.JournalFacts.of(home)
    authority = verdict_mod.load_authority(home, contacts)
    cache = CheckCache.of(home)
    rows: list[dict[str, Any]] = []
    labels: dict[str, str] = {}
    listed = store.list_bundles(home, states)
    checks = [cache.check(s) for s in listed]
    # One index query for the listing's bundles and their parents, not one per bundle.
    facts.prefetch([*(s.id for s in listed), *(c.manifest.parent for c in checks if c.manifest and c.manifest.parent)])
    keys: dict[bytes, verdict_mod.KeyTrust] = {}  # each signing key's trust, computed once in this listing
    for s, check in zip(listed, checks, strict=True):
        v = verdict_mod.compute(home, s, contacts=contacts, facts=facts, check=check, authority=authority, keys=keys)
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
    for state in states:
        cache.keep_only(state, {s.id for s in listed if s.state == state})
    cache.save()
    order = {st: i for i, st in enumerate(ALL_STATES)}
    rows.sort(key=lambda r: (order[r["state"]], r["created"] or "", r["id"]))
    return rows, labels


def cmd_demo(args: Any) -> int:
    from ..demo import make_demo

    root = make_demo(Path(args.dir) if args.dir else None)
    if args.no_tui or args.json:
        if args.json:
            emit_json({"home": json_text(str(root))})
        else:
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
