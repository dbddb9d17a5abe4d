"""`gage verify`: check structure, integrity and signature of a bundle directory (or a held bundle, by id)."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from pathlib import Path

    from gage.home.layout import Home


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", metavar="DIR|ID", help="a bundle folder anywhere, or the id (prefix) of a bundle in this home")
    json_option(p, 'print {"path", "id", "ok", "problems", "warnings"} whatever the outcome')


def run(args: argparse.Namespace) -> int:
    from gage import bundle as bundle_mod
    from gage.cli.output import emit_json, err, out, show
    from gage.cli.signer import (  # the key trust it names the signer by: verify's alone
        signer_json,
        signer_text,
    )
    from gage.cli.sizes import human

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


def _held_or_path(args: argparse.Namespace) -> Path:
    """A bundle folder, or the id (prefix) of a bundle this home holds, as the README promises.

    A path that exists is always the path; an id is looked up only when no such path exists
    and a home is there, so `verify` still needs no home for a folder."""
    import os
    from pathlib import Path

    from gage.cli.output import home_path, open_home
    from gage.format.errors import GageIOError
    from gage.home import listing

    root = Path(args.dir)
    if os.path.lexists(root):
        return root
    text = args.dir.strip().lower()
    if text and len(text) <= 64 and all(c in "0123456789abcdef" for c in text):
        where = home_path(args)
        if (where / "identity.json").exists():
            return listing.resolve(open_home(args), text).path
    raise GageIOError("does not exist", path=str(root))


def _home_if_any(args: argparse.Namespace) -> Home | None:
    """The home, when there is one, to name a signer as the verdict would; `verify` needs none."""
    from gage.cli.output import home_path, open_home
    from gage.format.errors import GageError

    where = home_path(args)
    if not (where / "identity.json").exists():
        return None
    try:
        return open_home(args)
    except GageError:
        return None
