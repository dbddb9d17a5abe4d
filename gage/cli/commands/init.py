"""`gage init`: make an identity and a home."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option
from gage.cli.passphrase import add_options as add_passphrase_options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", required=True, help="your name, as your contacts will see it claimed")
    p.add_argument("--protect", action="store_true", help="seal the secret key with a passphrase (asked twice, or from the options below)")
    add_passphrase_options(p)
    json_option(p, 'print {"home", "name", "key", "words"}')


def run(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, home_path, out, show
    from gage.cli.showkey import whole_key_hint
    from gage.format.errors import UsageError
    from gage.home.layout import Home

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
    out(f"key:   {whole_key_hint(home.identity.key)}{' (secret sealed with a passphrase)' if secret else ''}")
    out(f"words: {format_pairs(words)}")
    return 0
