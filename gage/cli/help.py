"""What `--help` says beyond the options: an example for every command, and the exit codes.

The exit-code table is generated from `gage.format.errors.Exit`, so it cannot drift from the codes
the commands return; a test checks every code has a meaning here and every command an
example. `attach` puts both into each parser's epilog once all commands are registered.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from gage.format.errors import Exit

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
    Exit.PASSPHRASE: "the passphrase is wrong, or none could be asked for",
    Exit.A2A_UNCONFIRMED: "a2a send: the agent answered but never confirmed the delivery",
    Exit.RELAY: "the relay was unreachable, or refused or failed what was asked",
    Exit.QUEUED: "deliver: the way was not there; the delivery waits in the outbox (`gage outbox`)",
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
    "init": ["gage init --name alice --protect", "GAGE_HOME=./bob gage init --name bob"],
    "id": ["gage id", "gage id --json"],
    "key": ["gage key export -o alice.key", "gage key retire --reason superseded --new -o shared/"],
    "key export": ["gage key export -o alice.key"],
    "key retire": ["gage key retire --reason superseded --new -o shared/"],
    "key upgrade": ["gage key upgrade -o shared/"],
    "key countersign": ["gage key countersign retire.json -o shared/"],
    "key apply": ["gage key apply 3f2a91c0"],
    "key publish": ["gage key publish 3f2a-91c0-77de -o shared/"],
    "key protect": ["gage key protect", "gage key protect --new-passphrase-fd 3 3<passphrase.txt"],
    "key unprotect": ["gage key unprotect"],
    "bundle": [
        'id=$(gage bundle report.txt --kind share --subject "Q3 report" -o shared/)',
        "gage bundle answer.txt --kind answer --parent 3f2a91c0 --to bob",
    ],
    "verify": ["gage verify shared/3f2a91c0...", "gage verify --json shared/3f2a91c0... | jq .problems"],
    "import": ["gage import shared/*/", "gage import --json shared/3f2a91c0..."],
    "list": ["gage list --state pending", "gage list --json"],
    "demo": ["gage demo", "gage demo --no-tui --dir /tmp/gage-demo"],
    "tui": ["gage tui"],
    "pair": ["gage pair bob.key --name bob", "gage pair bob.key --name bob --mutual", "gage pair --card http://127.0.0.1:8470/ --name bob"],
    "contacts": ["gage contacts", "gage contacts remove bob", "gage contacts where bob --folder ~/Sync/for-bob"],
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
        "mkdir -p ~/.local/share/bash-completion/completions && gage completion bash > ~/.local/share/bash-completion/completions/gage",
        "mkdir -p ~/.zfunc && gage completion zsh > ~/.zfunc/_gage",
        "mkdir -p ~/.config/fish/completions && gage completion fish > ~/.config/fish/completions/gage.fish",
    ],
    "man": ["mkdir -p ~/.local/share/man/man1 && gage man > ~/.local/share/man/man1/gage.1", "gage man | man -l -"],
    "a2a": ["gage a2a export 3f2a91c0 -o report.a2a.json", "gage a2a import report.a2a.json"],
    "a2a export": ["gage a2a export 3f2a91c0 -o report.a2a.json", "gage a2a export 3f2a91c0 --protocol 0.3"],
    "a2a import": ["gage a2a import report.a2a.json", "cat task.json | gage a2a import - --json"],
    "a2a card": ["gage a2a card --json", "gage a2a card --url http://127.0.0.1:8470/ --json"],
    "a2a serve": ["gage a2a serve --port 8470"],
    "a2a send": ["gage a2a send 3f2a91c0 http://127.0.0.1:8470/"],
    "mcp": ["gage --home ~/.local/share/gage mcp    # run by an MCP client, from its configuration"],
    "relay": ["gage relay dev --port 4222"],
    "relay dev": ["gage relay dev --port 4222", "gage relay dev --port 0 --store ./relay-store"],
    "relay config": ["gage relay config people.toml -o relay.conf", "gage relay config people.toml -o n1.conf --name n1 --cluster gage --cluster-listen 10.0.0.1:6222 --route nats-route://n2:6222"],
    "relay reload": ["gage relay reload relay.conf"],
    "relay nkey": ["gage relay nkey operator.nk"],
    "invite": ["gage invite --relay nats://127.0.0.1:4222", "gage invite --name bob --expires 5m"],
    "join": ["gage join 7-tiger-guitarist --relay nats://127.0.0.1:4222", "gage join 7-tiger-guitarist --name alice"],
    "mailbox": ["gage mailbox create --relay nats://127.0.0.1:4222", "gage mailbox fetch"],
    "mailbox create": ["gage mailbox create --relay nats://127.0.0.1:4222", "gage mailbox create --relay nats://hub:4222 --nkey me.nk"],
    "mailbox fetch": ["gage mailbox fetch", "gage mailbox fetch --json"],
    "mailbox show": ["gage mailbox show --json"],
    "deliver": [
        "gage deliver 3f2a91c0 --to bob", "gage deliver 3f2a91c0 --to bob --via folder", "gage deliver 3f2a91c0 --to bob --now --json",
    ],
    "outbox": ["gage outbox", "gage outbox send", "gage outbox cancel 9c41"],
    "directory": ["gage directory publish --handle alice", "gage directory lookup bob"],
    "directory publish": ["gage directory publish --handle alice"],
    "directory lookup": ["gage directory lookup bob --json"],
}


# The codes each command can return besides OK, USAGE, IO (no home, a missing path) and 130,
# which every command can: `list --help` should not list failures it cannot have (A2A's). A command
# group (`key`, `a2a`) shows the union of its actions'; `gage --help` shows every code.
_E = Exit
CODES: dict[str, frozenset[Exit]] = {
    path: frozenset(codes)
    for path, codes in {
        "init": {_E.REFUSED, _E.PASSPHRASE},
        "id": {_E.MALFORMED},
        "key export": {_E.MALFORMED},
        "key retire": {_E.MALFORMED, _E.UNKNOWN_KEY, _E.REFUSED, _E.PASSPHRASE},
        "key upgrade": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE},
        "key countersign": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE},
        "key apply": {_E.MALFORMED, _E.NOT_FOUND, _E.REFUSED},
        "key publish": {_E.MALFORMED, _E.UNKNOWN_KEY, _E.REFUSED, _E.PASSPHRASE},
        "key protect": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE},
        "key unprotect": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE},
        "bundle": {_E.MALFORMED, _E.UNKNOWN_KEY, _E.NOT_FOUND, _E.REFUSED, _E.PASSPHRASE},
        "verify": {_E.MALFORMED, _E.TAMPERED, _E.BAD_SIGNATURE, _E.NOT_FOUND},
        "import": {_E.MALFORMED, _E.TAMPERED, _E.BAD_SIGNATURE, _E.REFUSED},
        "list": {_E.MALFORMED, _E.UNKNOWN_KEY},
        "demo": set(),
        "tui": set(),
        "pair": {_E.MALFORMED, _E.UNKNOWN_KEY, _E.NOT_FOUND, _E.REFUSED, _E.A2A_DISCOVERY, _E.RELAY},
        "invite": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE, _E.RELAY},
        "join": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE, _E.RELAY},
        "contacts": {_E.MALFORMED, _E.UNKNOWN_KEY, _E.NOT_FOUND, _E.REFUSED},
        "journal verify": {_E.FAILED, _E.MALFORMED},
        "journal show": {_E.MALFORMED},
        "verdict": {_E.MALFORMED, _E.NOT_FOUND},
        "authority check": {_E.MALFORMED},
        "authority init": set(),
        "forward": {_E.MALFORMED, _E.TAMPERED, _E.BAD_SIGNATURE, _E.UNKNOWN_KEY, _E.NOT_FOUND, _E.REFUSED, _E.PASSPHRASE},
        "read": {_E.MALFORMED, _E.TAMPERED, _E.BAD_SIGNATURE, _E.NOT_FOUND, _E.REFUSED},
        "accept": {_E.MALFORMED, _E.TAMPERED, _E.BAD_SIGNATURE, _E.NOT_FOUND, _E.REFUSED},
        "reject": {_E.MALFORMED, _E.NOT_FOUND, _E.REFUSED},
        "watch": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE, _E.RELAY},
        "extract": {_E.MALFORMED, _E.TAMPERED, _E.BAD_SIGNATURE, _E.NOT_FOUND, _E.REFUSED},
        "completion": set(),
        "man": set(),
        "a2a export": {_E.MALFORMED, _E.NOT_FOUND, _E.REFUSED},
        "a2a import": {_E.MALFORMED, _E.TAMPERED, _E.REFUSED},
        "a2a card": {_E.MALFORMED},
        "a2a serve": {_E.MALFORMED, _E.REFUSED},
        "a2a send": {_E.MALFORMED, _E.NOT_FOUND, _E.REFUSED, _E.A2A_DISCOVERY, _E.A2A_REFUSED, _E.A2A_TRANSPORT, _E.A2A_UNCONFIRMED},
        "mcp": {_E.MALFORMED},
        # The relay's commands, each with only its own codes (not all sixteen): spec/relay.md.
        "relay dev": {_E.RELAY},
        "relay config": {_E.MALFORMED},
        "relay reload": {_E.MALFORMED, _E.RELAY},
        "relay nkey": set(),
        "mailbox show": {_E.MALFORMED, _E.PASSPHRASE},
        "mailbox create": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE, _E.RELAY},
        "mailbox fetch": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE, _E.RELAY},
        "directory publish": {_E.MALFORMED, _E.REFUSED, _E.PASSPHRASE, _E.RELAY},
        "directory lookup": {_E.MALFORMED, _E.REFUSED, _E.RELAY},
        "deliver": {
            _E.MALFORMED, _E.UNKNOWN_KEY, _E.NOT_FOUND, _E.REFUSED, _E.A2A_DISCOVERY, _E.A2A_REFUSED, _E.A2A_TRANSPORT,
            _E.A2A_UNCONFIRMED, _E.RELAY, _E.QUEUED,
        },
        "outbox": {
            _E.MALFORMED, _E.UNKNOWN_KEY, _E.NOT_FOUND, _E.REFUSED, _E.A2A_DISCOVERY, _E.A2A_REFUSED, _E.A2A_TRANSPORT,
            _E.A2A_UNCONFIRMED, _E.RELAY, _E.QUEUED,
        },
    }.items()
}
ALWAYS = frozenset({Exit.OK, Exit.USAGE, Exit.IO})


def codes_for(path: str) -> frozenset[Exit]:
    """The exit codes `gage PATH` can return ("" is gage itself: all of them)."""
    if path == "":
        return frozenset(Exit)
    if path in CODES:
        return ALWAYS | CODES[path]
    below = [c for p, c in CODES.items() if p.startswith(path + " ")]
    return ALWAYS.union(*below) if below else frozenset(Exit)


def exit_table(path: str = "") -> str:
    lines = ["exit codes:"]
    wanted = codes_for(path)
    for code in Exit:
        if code in wanted:
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


# `gage --help` lists the commands by task, as `git help` does; every command is in one group
# (tests/test_cli_help.py), so a new command is placed here when it is added.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("start: a home, your identity, the interface", ("init", "id", "demo", "tui", "completion", "man")),
    ("exchange: make, check and move bundles", ("bundle", "verify", "import", "forward", "deliver", "outbox", "watch", "extract")),
    ("review: what you hold, and what you decide about it", ("list", "verdict", "read", "accept", "reject", "journal")),
    ("keys: whose key is whose", ("key", "pair", "contacts", "authority")),
    ("relay: homes apart, through a mailbox relay (needs gage[relay])", ("relay", "mailbox", "directory", "invite", "join")),
    ("agents: A2A and MCP", ("a2a", "mcp")),
)


class GroupedHelp(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, with the commands listed under GROUPS' headings (any command no
    group names last, under "more"), each line as argparse lays it out."""

    def _format_action(self, action: argparse.Action) -> str:
        if not isinstance(action, argparse._SubParsersAction):
            return super()._format_action(action)
        rows = {row.dest: row for row in action._get_subactions()}
        parts: list[str] = []
        groups = [*GROUPS, ("more", tuple(n for n in rows if not any(n in names for _t, names in GROUPS)))]
        for title, names in groups:
            present = [rows[n] for n in names if n in rows]
            if not present:
                continue
            parts.append(" " * self._current_indent + title + "\n")
            self._indent()
            parts += [super(GroupedHelp, self)._format_action(row) for row in present]
            self._dedent()
        return "".join(parts)


def _sentence(summary: str) -> str:
    return summary[:1].upper() + summary[1:] + ("" if summary.endswith(".") else ".")


def attach(parser: argparse.ArgumentParser) -> None:
    """Give every command's help its opening sentence (its summary), its examples and the exit
    codes (after any epilog it has); the top level lists the commands by task."""
    summaries: dict[str, str] = {}
    for path, p in walk(parser):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                summaries.update((f"{path} {row.dest}".strip(), row.help or "") for row in action._get_subactions())
        if path and summaries.get(path):
            said = _sentence(summaries[path])
            p.description = said if not p.description else f"{said}\n\n{p.description}"
        parts = [p.epilog.rstrip("\n")] if p.epilog else []
        if path in EXAMPLES and not (p.epilog and "examples:" in p.epilog):
            parts.append(examples_text(path))
        parts.append(exit_table(path))
        if path == "":
            parts.append("One command: `gage COMMAND --help`. Every command and code: `gage man` (or `man gage` once installed).")
        else:
            parts.append("Every command and exit code: `gage man`.")
        p.epilog = "\n\n".join(parts)
        p.formatter_class = GroupedHelp if path == "" else argparse.RawDescriptionHelpFormatter
    parser._positionals.title = "commands, by task"
