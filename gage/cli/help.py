"""What `--help` says beyond the options: an example for every command, and the exit codes.

The exit-code table is generated from `gage.errors.Exit`, so it cannot drift from the codes
the commands return; a test checks every code has a meaning here and every command an
example. `attach` puts both into each parser's epilog once all commands are registered.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from ..errors import Exit

EXIT_MEANING: dict[Exit, str] = {
    Exit.OK: "it worked (for verify: well-formed, intact and signed)",
    Exit.FAILED: "the command ran but the answer is no (a journal that does not verify)",
    Exit.USAGE: "bad arguments or input you gave",
    Exit.MALFORMED: "not a well-formed gage object",
    Exit.TAMPERED: "the bytes or layout do not match the manifest",
    Exit.BAD_SIGNATURE: "the signature is missing or does not verify",
    Exit.UNKNOWN_KEY: "a key or contact needed is not known or not confirmed here",
    Exit.IO: "the file system failed (no home: run `gage init`)",
    Exit.NOT_FOUND: "no bundle matches the id or prefix, or it is ambiguous",
    Exit.REFUSED: "well-formed, but gage will not do it",
    Exit.A2A_DISCOVERY: "a2a send: no gage agent found at the URL",
    Exit.A2A_REFUSED: "a2a send: the agent was reached and refused",
    Exit.A2A_TRANSPORT: "a2a send: the connection failed",
    Exit.RELAY: "the relay was unreachable, or refused or failed what was asked",
}
INTERRUPTED = 130

# One or more examples per command, by its path below `gage` ("" is gage itself).
EXAMPLES: dict[str, list[str]] = {
    "": [
        "gage init --name alice",
        'id=$(gage bundle report.txt --kind share --subject "Q3")',
        "gage verify shared/$id && gage import shared/$id",
        "gage --home ./alice list --json",
    ],
    "init": ["gage init --name alice", "GAGE_HOME=./bob gage init --name bob"],
    "id": ["gage id", "gage id --json"],
    "key": ["gage key export -o alice.key", "gage key retire --reason superseded --new -o shared/"],
    "key export": ["gage key export -o alice.key"],
    "key retire": ["gage key retire --reason superseded --new -o shared/"],
    "key countersign": ["gage key countersign retire.json -o shared/"],
    "key apply": ["gage key apply 3f2a91c0"],
    "key publish": ["gage key publish 3f2a-91c0-77de -o shared/"],
    "bundle": [
        'id=$(gage bundle report.txt --kind share --subject "Q3 report" -o shared/)',
        "gage bundle answer.txt --kind answer --parent 3f2a91c0 --to bob",
    ],
    "verify": ["gage verify shared/3f2a91c0...", "gage verify --json shared/3f2a91c0... | jq .problems"],
    "import": ["gage import shared/*/", "gage import --json shared/3f2a91c0..."],
    "list": ["gage list --state pending", "gage list --json"],
    "demo": ["gage demo", "gage demo --no-tui --dir /tmp/gage-demo"],
    "tui": ["gage tui"],
    "pair": ["gage pair bob.key --name bob", "gage pair --card http://127.0.0.1:8470/ --name bob"],
    "contacts": ["gage contacts", "gage contacts remove bob"],
    "journal": ["gage journal verify", "gage journal show --json"],
    "journal verify": ["gage journal verify --json"],
    "journal show": ["gage journal show", "gage journal show --json | jq '.[-1]'"],
    "verdict": ["gage verdict 3f2a91c0", "gage verdict 3f2a91c0 --json"],
    "authority": ["gage authority init", "gage authority check"],
    "authority check": ["gage authority check"],
    "authority init": ["gage authority init"],
    "forward": ["gage forward 3f2a91c0 --to carol -o shared/"],
    "read": ["gage read 3f2a91c0", "gage read 3f2a91c0 --pending --json"],
    "accept": ["gage accept 3f2a91c0", "gage accept 3f2a91c0 --unverified"],
    "reject": ['gage reject 3f2a91c0 --why "not expected"'],
    "watch": ["gage watch --drop ~/Shared/gage", "gage watch --drop in/ --unattended --budget 3 --json"],
    "extract": ["gage extract 3f2a91c0 ~/Documents/q3", "gage extract 3f2a91c0 out/ --pending --force"],
    "completion": [
        'gage completion bash > ~/.local/share/bash-completion/completions/gage',
        "gage completion zsh > ~/.zfunc/_gage",
        "gage completion fish > ~/.config/fish/completions/gage.fish",
    ],
    "man": ["gage man > ~/.local/share/man/man1/gage.1", "gage man | man -l -"],
    "a2a": ["gage a2a export 3f2a91c0 -o report.a2a.json", "gage a2a import report.a2a.json"],
    "a2a export": ["gage a2a export 3f2a91c0 -o report.a2a.json", "gage a2a export 3f2a91c0 --protocol 0.3"],
    "a2a import": ["gage a2a import report.a2a.json", "cat task.json | gage a2a import - --json"],
    "a2a card": ["gage a2a card --json", "gage a2a card --url http://127.0.0.1:8470/ --json"],
    "a2a serve": ["gage a2a serve --port 8470"],
    "a2a send": ["gage a2a send 3f2a91c0 http://127.0.0.1:8470/"],
    "relay": ["gage relay dev --port 4222"],
    "relay dev": ["gage relay dev --port 4222", "gage relay dev --port 0 --dir ./relay-store"],
    "mailbox": ["gage mailbox create --relay nats://127.0.0.1:4222", "gage mailbox fetch"],
    "mailbox create": ["gage mailbox create --relay nats://127.0.0.1:4222", "gage mailbox create --relay nats://hub:4222 --creds me.creds"],
    "mailbox fetch": ["gage mailbox fetch", "gage mailbox fetch --json"],
    "mailbox show": ["gage mailbox show --json"],
    "deliver": ["gage deliver 3f2a91c0 --to bob", "gage deliver 3f2a91c0 --to bob --json"],
    "directory": ["gage directory publish --handle alice", "gage directory lookup bob"],
    "directory publish": ["gage directory publish --handle alice"],
    "directory lookup": ["gage directory lookup bob --json"],
}


def exit_table() -> str:
    lines = ["exit codes:"]
    for code in Exit:
        lines.append(f"  {int(code):>3}  {code.name:<14} {EXIT_MEANING[code]}")
    lines.append(f"  {INTERRUPTED:>3}  {'INTERRUPTED':<14} stopped by Ctrl-C")
    return "\n".join(lines)


def examples_text(path: str) -> str:
    return "examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES.get(path, []))


def walk(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser below (and including) `parser`, with its command path ("" for gage itself)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}".strip())


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def attach(parser: argparse.ArgumentParser) -> None:
    """Give every command's help its examples and the exit codes (after any epilog it has)."""
    for path, p in walk(parser):
        parts = [p.epilog.rstrip("\n")] if p.epilog else []
        if path in EXAMPLES and not (p.epilog and "examples:" in p.epilog):
            parts.append(examples_text(path))
        parts.append(exit_table())
        if path == "":
            parts.append("Docs: spec/cli.md; every command: docs/cli-reference.md; `gage COMMAND --help` for one.")
        p.epilog = "\n\n".join(parts)
        p.formatter_class = argparse.RawDescriptionHelpFormatter
