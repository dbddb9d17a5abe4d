"""`gage id`: show my name, key and word-pairs."""

from __future__ import annotations

import argparse

from gage.cli.argtypes import json_option

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--full", action="store_true", help="also print my whole key text (a hybrid key is 3984 characters)")
    json_option(p)


def run(args: argparse.Namespace) -> int:
    from gage.cli.output import emit_json, open_home, out, show
    from gage.cli.showkey import whole_key_hint
    from gage.format.keys import short_fingerprint
    from gage.format.words import format_pairs
    from gage.home.cache.wordpairs import WordCache

    home = open_home(args)
    ident = home.identity
    words = WordCache(home.cache / "words.json").words_for(ident.key)
    if args.json:
        from gage.format.keys.asjson import key_json  # JSON only

        shown: dict[str, Any] = {"name": ident.name, **key_json(ident.key), "words": [list(p) for p in words]}
        if ident.protected:
            shown["protected"] = True  # the secret is sealed with a passphrase (spec/keys.md section 11)
        if ident.retired:
            from gage.cli import keyreport

            shown["retired"] = keyreport.id_json(home)  # this home's retired keys (spec/keys.md section 6)
        emit_json(shown)
        return 0
    out(f"name:  {show(ident.name)}")
    done = ident.current_retirement
    if done is not None:
        out(f"key:   {whole_key_hint(ident.key)} (RETIRED as {done.reason} as of {done.retired_at}: this home signs nothing more)")
    else:
        out(f"key:   {whole_key_hint(ident.key)}{' (secret sealed with a passphrase)' if ident.protected else ''}")
    out(f"words: {format_pairs(words)}")
    if args.full:
        out(f"fingerprint: {short_fingerprint(ident.key)}; the whole key, on the next line:")
        out(ident.key_text)
    if not ident.retired:
        return 0
    from gage.cli import keyreport

    for line in keyreport.id_lines(home):
        out(line)
    return 0
