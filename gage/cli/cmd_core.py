"""Commands that make and move bundles: init, id, key, bundle, verify, import, list, demo, tui.

Each command imports what only it runs inside itself (issue 28): `gage list` and `gage id`
must not pay for making, importing and retiring.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gage.cli.output import emit_json, err, home_path, open_home, out, show
from gage.cli.sizes import human
from gage.format.errors import Exit, GageError, GageIOError, UsageError
from gage.format.keys import key_shown, key_text, short_fingerprint
from gage.format.sanitize import json_text
from gage.home import listing
from gage.home.layout import ALL_STATES, Home
from gage.inbox import opening

TYPE_CHECKING = False  # importing typing costs start-up time (issue 28)
if TYPE_CHECKING:
    from typing import Any



def cmd_init(args: Any) -> int:
    secret = None
    if args.protect:
        from gage.cli import passphrase

        secret = passphrase.new(args, names=("passphrase_file", "passphrase_fd"))
    elif args.passphrase_file is not None or args.passphrase_fd is not None:
        raise UsageError("a passphrase was given without --protect")
    home = Home.init(home_path(args), args.name, passphrase=secret)
    if args.json:
        from gage.inbox import made_json

        emit_json(made_json.identity(home))
        return 0
    from gage.format.words import format_pairs
    from gage.home.cache.wordpairs import WordCache

    words = WordCache(home.cache / "words.json").words_for(home.identity.key)
    out(f"made a gage home at {home.root}")
    out(f"name:  {show(home.identity.name)}")
    out(f"key:   {_whole_key_hint(home.identity.key)}{' (secret sealed with a passphrase)' if secret else ''}")
    out(f"words: {format_pairs(words)}")
    return 0


def _whole_key_hint(key: bytes) -> str:
    """The key as a person reads it on one line: a hybrid key's 3984 characters would bury the
    rest of `gage id`, so it is named by its fingerprint and where the whole text is."""
    shown = key_shown(key)
    return shown if shown == key_text(key) else f"{shown} (the whole key: `gage id --full` or `gage key export`)"


def cmd_id(args: Any) -> int:
    home = open_home(args)
    ident = home.identity
    # The word list, only for the commands that show words (not `gage list`, in this module too).
    from gage.format.words import format_pairs
    from gage.home.cache.wordpairs import WordCache

    words = WordCache(home.cache / "words.json").words_for(ident.key)
    if args.json:
        from gage.format.keyjson import key_json  # JSON only

        shown: dict[str, Any] = {"name": ident.name, **key_json(ident.key), "words": [list(p) for p in words]}
        if ident.protected:
            shown["protected"] = True  # the secret is sealed with a passphrase (spec/keys.md section 11)
        if ident.retired:
            from gage.cli import cmd_keys

            shown["retired"] = cmd_keys.id_json(home)  # this home's retired keys (spec/keys.md section 6)
        emit_json(shown)
        return 0
    out(f"name:  {show(ident.name)}")
    done = ident.current_retirement
    if done is not None:
        out(f"key:   {_whole_key_hint(ident.key)} (RETIRED as {done.reason} as of {done.retired_at}: this home signs nothing more)")
    else:
        out(f"key:   {_whole_key_hint(ident.key)}{' (secret sealed with a passphrase)' if ident.protected else ''}")
    out(f"words: {format_pairs(words)}")
    if args.full:
        out(f"fingerprint: {short_fingerprint(ident.key)}; the whole key, on the next line:")
        out(ident.key_text)
    if not ident.retired:
        return 0
    from gage.cli import cmd_keys

    for line in cmd_keys.id_lines(home):
        out(line)
    return 0


def cmd_key_export(args: Any) -> int:
    home = open_home(args)
    from gage.home import (
        sealing,  # the sealing-key binding, once this home has a mailbox spec/relay.md
    )

    mine = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
    carried = mine.binding.to_carried() if mine is not None else None
    from gage.format.keyfile import KeyFile

    data = KeyFile(key=home.identity.key, name=home.identity.name, sealing=carried).to_bytes()
    if args.output:
        from gage.bundle import atomic

        atomic.write_bytes(Path(args.output), data, 0o644)
        err(f"wrote {args.output}")
    if args.json:
        # The key file's own text too: without -o it is the only place it is written.
        from gage.format.keyjson import key_json

        ident = home.identity
        path = json_text(args.output) if args.output else None
        emit_json({"name": ident.name, **key_json(ident.key), "path": path, "keyfile": data.decode("utf-8")})
    elif not args.output:
        sys.stdout.write(data.decode("utf-8"))
    return 0


def cmd_bundle(args: Any) -> int:
    from gage.inbox import made_json, send

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
    err(f"bundled {n} file{'s' if n != 1 else ''} ({human(manifest.total_size)}) as {manifest.kind} into {dest}")
    if args.output:
        err(f"copied to {Path(args.output) / manifest.id}")
    if args.json:
        emit_json(made_json.made(home, manifest, dest, Path(args.output) if args.output else None))
    else:
        out(manifest.id)
    return 0


def cmd_verify(args: Any) -> int:
    from gage import bundle as bundle_mod
    from gage.cli.signer import (  # the key trust it names the signer by: verify's alone
        signer_json,
        signer_text,
    )

    root = _held_or_path(args)
    result = bundle_mod.check(root)
    home = _home_if_any(args)
    if args.json:
        emit_json(result.to_json() | {"signer": signer_json(home, result.manifest, result.signature_ok)})
    else:
        for w in result.warnings:
            err(f"warning: {show(str(w))}")
        if result.ok:
            m = result.manifest
            assert m is not None
            out(f"ok: {m.id}")
            out(f"  signed by {signer_text(home, m, True)}")
            out(f"  {len(m.files)} file(s), {human(m.total_size)}, all present and matching; signature good")
        else:
            for p in result.problems:
                err(f"{p.stage}: {show(str(p))}")
    first = result.first_error()
    return int(first.exit_code) if first else 0


def _held_or_path(args: Any) -> Path:
    """A bundle folder, or the id (prefix) of a bundle this home holds, as the README promises.

    A path that exists is always the path; an id is looked up only when no such path exists
    and a home is there, so `verify` still needs no home for a folder."""
    root = Path(args.dir)
    if os.path.lexists(root):
        return root
    text = args.dir.strip().lower()
    if text and len(text) <= 64 and all(c in "0123456789abcdef" for c in text):
        where = home_path(args)
        if (where / "identity.json").exists():
            return listing.resolve(open_home(args), text).path
    raise GageIOError("does not exist", path=str(root))


def _home_if_any(args: Any) -> Home | None:
    """The home, when there is one, to name a signer as the verdict would; `verify` needs none."""
    where = home_path(args)
    if not (where / "identity.json").exists():
        return None
    try:
        return open_home(args)
    except GageError:
        return None


def cmd_import(args: Any) -> int:
    from gage.cli import import_run

    return import_run.run(args)


def cmd_list(args: Any) -> int:
    """Every bundle with the verdict computed now, from the inbox read model (gage.inbox.rows),
    the rows the interface shows. The sender is the verdict's (`Sender.to_json()`, the shape
    `gage verdict --json` prints): never looked up in the contacts here, so a bundle whose
    signature fails is never listed under a contact's name (issue 9, class 1)."""
    from gage.cli.list_filter import filtered
    from gage.inbox.listed import listed_rows

    home = open_home(args)
    if getattr(args, "sent", False):
        if args.state not in (None, "outbox"):
            raise UsageError("--sent is --state outbox: give one or the other")
        args.state = "outbox"
    rows = listed_rows(home, (args.state,) if args.state else ALL_STATES)  # from the row index where unchanged
    rows, left_out = filtered(home, rows, kind=getattr(args, "kind", None), sender=getattr(args, "sender", None), limit=getattr(args, "limit", None))
    sent: dict[str, Any] = {}
    if any(r.state == "outbox" for r in rows):  # a sent bundle's row says queued, delivered or cancelled
        from gage.home import sendqueue

        if args.json:
            emit_json(sendqueue.with_delivery(home, [r.to_json() for r in rows]))
            return 0
        sent = sendqueue.states_by_bundle(home)
    if args.json:
        from gage.inbox.rowshape import rows_text

        print(rows_text([r.to_json() for r in rows]), flush=True)  # one row a line (spec/cli.md: `--json`)
        return 0
    if left_out:
        err(f"{left_out} more not listed (--limit {args.limit})")
    if not rows:
        out("no bundles")
        return 0
    for r in rows:
        if r.kind is None:
            out(f"{r.state:<9} {r.id[:12]}  (unreadable manifest)")
            continue
        went = sent.get(r.id) if r.state == "outbox" else None
        if went:
            who = ", ".join(f"{show(d['to'])} {d['state']}" for d in went["deliveries"])
            out(f"{r.state:<9} {r.id[:12]}  {went['state']:<10} {r.kind:<14} to {who:<25} {show(r.subject or '')}")
            continue
        subj = show(r.subject or "")
        if r.accepted_how == "unattended":
            subj = f"[accepted UNATTENDED] {subj}"
        elif r.accepted_how == "human-unverified":
            subj = f"[accepted with sender unverified] {subj}"
        out(f"{r.state:<9} {r.id[:12]}  {r.level:<10} {r.kind:<14} {show(r.sender_label):<28} {subj}")
    return 0


def cmd_demo(args: Any) -> int:
    from gage.cli.demo import is_temporary, make_demo, other_side

    root = make_demo(Path(args.dir) if args.dir else None)
    base = root.parent
    if args.no_tui or args.json:
        if args.json:
            emit_json({"home": json_text(str(root))})
        else:
            out(str(root))
        _demo_notes(root, base, other_side(root))
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        err("gage: no terminal to open the interface on; the demo home is made:")
        out(str(root))
        _demo_notes(root, base, other_side(root))
        return 0
    try:
        from gage.tui.app import run as run_tui
    except ImportError:
        out(f"demo home: {root}")
        _demo_notes(root, base, other_side(root))
        return 0
    temporary = is_temporary(root)
    try:
        # The demo plays both people: its ceremonies show the other side's words (issue 18).
        return run_tui(opening.open_home(root), demo_people=other_side(root))
    finally:
        if temporary:
            # A demo in a fresh temporary folder is removed on quit, so runs leave nothing behind (issue 18).
            import shutil

            shutil.rmtree(base, ignore_errors=True)
            err(f"gage: removed the demo home ({base}); `gage demo --dir DIR` keeps one")
        else:
            err(f"gage: the demo home is kept at {base}; remove it with: rm -rf {base}")


def _demo_notes(root: Path, base: Path, people: dict[str, Any]) -> None:
    """Where the demo is, how to try it and remove it, and the words the demo's people would read."""
    err(f"try: GAGE_HOME={root} gage list")
    from gage.format.words import format_pairs

    err("the demo plays the other people too; the words each would read to you on a call:")
    for who, (_key, words) in people.items():
        err(f"  {who}: {format_pairs(words)}")
    err(f"remove the demo when done: rm -rf {base}")


def cmd_tui(args: Any) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the interface needs a terminal on standard input and output; use the commands (`gage --help`)")
    try:
        from gage.tui.app import run as run_tui
    except ImportError:
        err("gage: the interface is not available in this build; see `gage --help`")
        return int(Exit.USAGE)
    home = open_home(args)
    home.identity.key  # noqa: B018 - the interface shows it: held to its seed first, so a damaged file is an error here
    return run_tui(home)
