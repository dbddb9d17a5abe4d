"""Every command of `gage`, one module each: its arguments (`add_arguments`) and its body (`run`).

`COMMANDS` is the one table: a command's name, the module that is the whole command, and the
one line `gage --help` shows for it. Running a command imports only its own module
(gage/cli/main.py: `load`), and a module imports at its top only what its arguments need (argparse
and the small value checks in gage/cli/argtypes.py); what its body needs is imported inside
`run`, by name, so mypy and import-linter see every edge. So `gage list` loads nothing of
`gage relay`, and `gage --help`, completion and `gage man`, which build every command's
parser, load no command's body.

A command with actions (`gage key retire`, `gage relay dev`) is one module holding all its
actions, as it is one entry in `gage --help`: its `run` picks the action's function from the
module's own `ACTIONS`.
"""

from __future__ import annotations

from types import ModuleType

# name -> (module under gage.cli.commands, the one-line help). The order is `gage man`'s, the
# CLI reference's and completion's; `gage --help` groups them by task (gage/cli/help.py GROUPS).
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "make an identity and a home"),
    "id": ("id", "show my name, key and word-pairs"),
    "key": ("key", "export, retire, upgrade or protect this home's key"),
    "bundle": ("bundle", "make a signed bundle of files and folders"),
    "verify": ("verify", "check structure, integrity and signature of a bundle directory"),
    "import": ("import_", "copy bundle directories into inbox/pending"),
    "list": ("list", "list bundles in the home"),
    "demo": ("demo", "open gage on a throwaway demo home"),
    "tui": ("tui", "open the interface (the default with no command)"),
    "pair": ("pair", "confirm someone's key by reading word-pairs aloud with them (the ceremony)"),
    "contacts": (
        "contacts",
        "list confirmed contacts and candidates; `contacts remove NAME` unpairs, `contacts forget KEY` drops a"
        " candidate, `contacts where NAME` shows or sets where they are (a claim)",
    ),
    "journal": ("journal", "check or print the append-only journal"),
    "verdict": ("verdict", "show what this home computes about a bundle: its verdict"),
    "authority": ("authority", "check or start the authority file (what agents may do with whose bundles)"),
    "forward": ("forward", "sign a bundle's payload anew for someone else; earlier hops become claims"),
    "read": ("read", "print a bundle's frame, then its payload: what an agent should read"),
    "accept": ("accept", "accept pending bundles (verifies the exact bytes as it moves them)"),
    "reject": ("reject", "reject pending bundles"),
    "watch": ("watch", "import bundles from drop folders and this home's mailbox until stopped"),
    "a2a": ("a2a", "move bundles over A2A: export and import artifacts, show the agent card, serve and send"),
    "mcp": ("mcp", "serve this home to an agent over MCP on stdio: it reads through the frame (needs gage[mcp])"),
    "relay": ("relay", "run a local NATS JetStream relay to try gage across homes (needs gage[relay] and nats-server)"),
    "mailbox": ("mailbox", "create, fetch or show this home's mailbox on a relay (needs gage[relay])"),
    "deliver": (
        "deliver",
        "send a bundle to a contact where they are: their mailbox (sealed; gage[relay]), A2A agent (gage[a2a]) or drop folder",
    ),
    "outbox": (
        "outbox",
        "list, send now or cancel the deliveries waiting for their way (a relay down, an agent asleep, a folder missing)",
    ),
    "directory": ("directory", "publish your handle in a relay's directory, or look one up (a claim; needs gage[relay])"),
    "invite": ("invite", "print a one-time code to pair with someone through a relay, then the word-pair ceremony (needs gage[relay])"),
    "join": ("join", "pair with the person who gave you an invite code, through the relay, by the word-pair ceremony (needs gage[relay])"),
    "extract": ("extract", "copy an accepted bundle's files into a folder, checking every byte"),
    "completion": ("completion", "print shell completion for bash, zsh or fish"),
    "man": ("man", "print the manual page (roff), to install for `man gage`"),
}


def load(name: str) -> ModuleType:
    """The module that is command `name` (a key of COMMANDS), imported now.

    `__import__` rather than importlib.import_module: the same import, but through the
    interpreter's own import path, so `python -X importtime` reports the command's module
    (import_module's is not timed there, which would hide it from bench/bench_startup.py)."""
    module: ModuleType = __import__(f"{__name__}.{COMMANDS[name][0]}", fromlist=("run",))
    return module
