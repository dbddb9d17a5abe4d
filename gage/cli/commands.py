"""Every command's arguments, and where its code is, without importing that code.

`gage --version`, `--help` and completion need only the parser, and a command needs only
its own module: the watcher (watchfiles), the A2A card fetcher (urllib, ssl), the
interface (textual) and the signing library load when a command that uses them runs
(the start path: docs/architecture.md). So this module imports nothing of gage's but `Lazy` targets by name.

Kinds, states and reasons come from gage.format.vocab, which imports only `typing`. The A2A
protocols are written out here, since importing them would load the A2A code;
tests/test_cli_startup.py checks that the copies equal the core's own.
"""

from __future__ import annotations

import argparse

from gage.cli.argtypes import (
    json_option,
    max_bytes,
    port,
    positive,
    run_as,
    seconds,
)
from gage.cli.passphrase import add_options as add_passphrase_options
from gage.format.vocab import KINDS, REASONS
from gage.format.vocab import PLACES as ALL_STATES

# Copies of a2a.artifact.PROTOCOLS and DEFAULT_PROTOCOL (see the module docstring).
PROTOCOLS = ("1.0", "0.3")
DEFAULT_PROTOCOL = "1.0"
SHELLS = ("bash", "zsh", "fish")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Every command, in the order `gage --help` lists them."""
    _core(sub)
    _trust(sub)
    _gate(sub)
    _a2a(sub)
    _mcp(sub)
    if _builds(sub, RELAY_COMMANDS):
        from gage.cli import (
            relay_args,  # the relay commands' parser, imported only when one of them is built
        )

        relay_args.register(sub)
    if _builds(sub, INVITE_COMMANDS):
        from gage.cli import invite_args  # `gage invite` / `gage join`, likewise

        invite_args.register(sub)
    _files(sub)


# The commands gage/cli/relay_args.py and invite_args.py add (tests/test_cli_startup.py checks
# they are exactly these): building another command's parser alone skips importing them.
RELAY_COMMANDS = ("relay", "mailbox", "deliver", "outbox", "directory")
INVITE_COMMANDS = ("invite", "join")


def _builds(sub: object, names: tuple[str, ...]) -> bool:
    """Whether `register` must add these commands: always, unless `sub` is building one other
    command's parser alone (gage/cli/lazyparse.py's `OnlyOne`, whose `only` names it)."""
    only = getattr(sub, "only", None)
    return only is None or only in names


# --- making and moving bundles (gage/cli/cmd_core.py) ------------------------------------------


def _core(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("init", help="make an identity and a home")
    p.add_argument("--name", required=True, help="your name, as your contacts will see it claimed")
    p.add_argument("--protect", action="store_true", help="seal the secret key with a passphrase (asked twice, or from the options below)")
    add_passphrase_options(p)
    json_option(p, 'print {"home", "name", "key", "words"}')
    run_as(p, "cmd_core", "cmd_init")

    p = sub.add_parser("id", help="show my name, key and word-pairs")
    p.add_argument("--full", action="store_true", help="also print my whole key text (a hybrid key is 3984 characters)")
    json_option(p)
    run_as(p, "cmd_core", "cmd_id")

    p = sub.add_parser("key", help="export, retire, upgrade or protect this home's key")
    ksub = p.add_subparsers(dest="key_command", metavar="ACTION", required=True)
    k = ksub.add_parser("export", help="write my public key file, to start a pairing from")
    k.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    json_option(k, 'print {"name", "key", "path", "keyfile"} instead of the key file')
    run_as(k, "cmd_core", "cmd_key_export")
    _keys(ksub)

    p = sub.add_parser("bundle", help="make a signed bundle of files and folders")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files and folders to bundle (a folder keeps its name and layout)")
    p.add_argument("--kind", default="share", choices=KINDS, help="what the bundle is (default: share; answer and ack need --parent)")
    p.add_argument("--to", action="append", default=[], metavar="NAME", help="a confirmed contact (repeatable)")
    p.add_argument("--parent", metavar="ID", help="the bundle this one replies to")
    p.add_argument("--subject", metavar="TEXT", help="a one-line subject, shown to the receiver as the sender's claim")
    p.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle into DIR/<id>")
    json_option(p, "describe the bundle made (id, files, where, sender) instead of printing its id")
    add_passphrase_options(p)
    run_as(p, "cmd_core", "cmd_bundle")

    p = sub.add_parser("verify", help="check structure, integrity and signature of a bundle directory")
    p.add_argument("dir", metavar="DIR|ID", help="a bundle folder anywhere, or the id (prefix) of a bundle in this home")
    json_option(p, 'print {"path", "id", "ok", "problems", "warnings"} whatever the outcome')
    run_as(p, "cmd_core", "cmd_verify")

    p = sub.add_parser("import", help="copy bundle directories into inbox/pending")
    p.add_argument("paths", nargs="+", metavar="PATH", help="bundle folders (each lands in pending; nothing is accepted)")
    p.add_argument("-v", "--verbose", action="store_true", help="with several PATHs: a line for each one, refused or imported")
    json_option(p, "one result per PATH, as data, instead of the ids")
    run_as(p, "cmd_core", "cmd_import")

    p = sub.add_parser("list", help="list bundles in the home")
    p.add_argument("--state", choices=ALL_STATES, help="only the bundles in this place (default: all, pending first)")
    p.add_argument("--sent", action="store_true", help="the bundles made here (--state outbox), each with its delivery's state: queued, delivered, cancelled")
    p.add_argument("--kind", choices=KINDS, help="only bundles of this kind")
    p.add_argument(
        "--from", dest="sender", metavar="NAME",
        help="only bundles a confirmed contact signed (by name; `me` for mine), or a key (its fingerprint, 8+ hex digits)",
    )
    p.add_argument("--limit", type=positive, metavar="N", help="only the first N (after the filters), as `git log -n`")
    json_option(p)
    run_as(p, "cmd_core", "cmd_list")

    p = sub.add_parser("demo", help="open gage on a throwaway demo home")
    p.add_argument("--no-tui", action="store_true", help="make the demo home and print its path")
    p.add_argument("--dir", metavar="DIR", help="make the demo home here instead of a temporary folder")
    json_option(p, 'with --no-tui: print {"home"}')
    run_as(p, "cmd_core", "cmd_demo")

    p = sub.add_parser("tui", help="open the interface (the default with no command)")
    run_as(p, "cmd_core", "cmd_tui")


RETIRE_EXAMPLES = """\
examples:
  gage key retire --reason superseded --new -o shared/        # a new key here; send the statement
  gage key retire --reason compromised --new -o shared/       # leaked: nothing it signed verifies again
  gage key retire --reason superseded --replace-with new.key --statement retire.json
                                                              # the new key is on another machine:
  gage key countersign retire.json -o shared/                 #   run this there, with the new key
  gage key retire --reason compromised --key 3f2a-91c0-77de -o shared/
                                                              # an old key superseded here was leaked after all
"""


def _keys(ksub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Actions under `gage key` besides export (gage/cli/cmd_keys.py)."""
    k = ksub.add_parser(
        "retire",
        help="retire my key with a signed statement; optionally name a new key (--new, --replace-with)",
        epilog=RETIRE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    k.add_argument("--reason", required=True, choices=REASONS, help="superseded (a new key) or compromised (leaked, stolen)")
    which = k.add_mutually_exclusive_group()
    which.add_argument("--new", action="store_true", help="make a new key in this home; it signs the statement too")
    which.add_argument(
        "--replace-with", metavar="KEYFILE", help="the new key's file, from another home; that home countersigns and sends"
    )
    which.add_argument(
        "--key", metavar="KEY", help="with --reason compromised: retire again one of my keys already retired as superseded"
    )
    k.add_argument("--statement", metavar="FILE", help="also write the signed statement file here (required with --replace-with)")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    json_option(k)
    add_passphrase_options(k)
    run_as(k, "cmd_keys", "cmd_retire")

    k = ksub.add_parser(
        "upgrade",
        help="replace my Ed25519-only key with a hybrid one (Ed25519 + ML-DSA-65); the old one is retired as superseded",
    )
    k.add_argument("--statement", metavar="FILE", help="also write the signed statement file here")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    json_option(k)
    run_as(k, "cmd_keys", "cmd_upgrade")

    k = ksub.add_parser("countersign", help="sign, with this home's key, a statement that names it as a replacement; send it")
    k.add_argument("file", metavar="FILE", help="the statement file `gage key retire --replace-with` wrote")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle carrying the statement into DIR/<id>")
    json_option(k)
    add_passphrase_options(k)
    run_as(k, "cmd_keys", "cmd_countersign")

    k = ksub.add_parser("apply", help="apply the key statement a bundle carries (import does this when one arrives)")
    k.add_argument("sources", nargs="+", metavar="ID|PATH", help="a bundle id (prefix) in this home, a bundle folder, or a statement file")
    json_option(k)
    run_as(k, "cmd_keys", "cmd_apply")

    k = ksub.add_parser("publish", help="make a new bundle carrying one of my retired keys' statements, to send again")
    k.add_argument("key", metavar="KEY", help="the retired key (key text, fingerprint, or 8+ hex digits)")
    k.add_argument("-o", "--output", metavar="DIR", help="also copy the bundle into DIR/<id>")
    json_option(k, "describe the bundle made, as `gage bundle --json` does")
    add_passphrase_options(k)
    run_as(k, "cmd_keys", "cmd_publish")

    k = ksub.add_parser("protect", help="seal my secret key with a passphrase, or change the passphrase")
    add_passphrase_options(k, new=True)
    json_option(k, 'print {"key", "fingerprint", "protected": true}')
    run_as(k, "cmd_passphrase", "cmd_protect")

    k = ksub.add_parser("unprotect", help="keep my secret key unsealed again (asks for the passphrase)")
    add_passphrase_options(k)
    json_option(k, 'print {"key", "fingerprint", "protected": false}')
    run_as(k, "cmd_passphrase", "cmd_unprotect")


# --- trust: pairing, contacts, the journal, verdicts, authority, forward, read (cmd_trust.py) ---


def _trust(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pair", help="confirm someone's key by reading word-pairs aloud with them (the ceremony)")
    p.add_argument(
        "source", metavar="KEYFILE", nargs="?", help="their key file (or a key ed25519:..., the id of a bundle they signed, or a candidate's fingerprint)"
    )
    p.add_argument("--card", metavar="FILE|URL", help="start from the key an A2A agent card claims (a file, or the agent's URL)")
    p.add_argument("--refresh", action="store_true", help="with --card URL: fetch the card again instead of using the cached copy")
    p.add_argument("--directory", metavar="HANDLE", help="start from the key a relay's directory claims for HANDLE (needs gage[relay])")
    p.add_argument("--relay", metavar="URL", help="with --directory: the relay whose directory to ask (default: this home's relay)")
    p.add_argument("--name", required=True, help="what you will call them here")
    p.add_argument("--mutual", action="store_true", help="both ways in one call: they run it with your key at the same time")
    run_as(p, "cmd_trust", "cmd_pair")

    p = sub.add_parser(
        "contacts",
        help="list confirmed contacts and candidates; `contacts remove NAME` unpairs, `contacts forget KEY` drops a"
        " candidate, `contacts where NAME` shows or sets where they are (a claim)",
    )
    p.add_argument("action", nargs="?", choices=("list", "remove", "forget", "where"), default="list")
    p.add_argument(
        "name", nargs="?",
        help="NAME for remove and where; for forget (and a candidate's where), the key or fingerprint (a unique prefix will do)",
    )
    p.add_argument("--a2a", metavar="URL", help="with where: their A2A agent's URL, your claim (gage deliver --via a2a)")
    p.add_argument("--folder", metavar="DIR", help="with where: a drop folder they watch, your claim (gage deliver --via folder)")
    p.add_argument("--relay", metavar="URL", help="with where: the relay their mailbox is on, your claim")
    p.add_argument(
        "--clear", action="append", choices=("mailbox", "relay", "a2a", "folder"), metavar="WHAT",
        help="with where: forget that claim (mailbox, relay, a2a, folder; repeatable)",
    )
    json_option(p)
    run_as(p, "cmd_trust", "cmd_contacts")

    p = sub.add_parser("journal", help="check or print the append-only journal")
    jsub = p.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    j = jsub.add_parser("verify", help="check the chain, the head, torn lines, and each decision against the inbox folders")
    json_option(j)
    run_as(j, "cmd_trust", "cmd_journal_verify")
    j = jsub.add_parser("show", help="print the journal entries")
    j.add_argument("-n", type=positive, metavar="N", help="only the last N entries (the newest)")
    json_option(j)
    run_as(j, "cmd_trust", "cmd_journal_show")

    p = sub.add_parser("verdict", help="show what this home computes about a bundle: its verdict")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    json_option(p)
    run_as(p, "cmd_trust", "cmd_verdict")

    p = sub.add_parser("authority", help="check or start the authority file (what agents may do with whose bundles)")
    asub = p.add_subparsers(dest="authority_command", metavar="ACTION", required=True)
    a = asub.add_parser("check", help="validate authority.toml")
    json_option(a, 'print {"path", "exists", "ok", "errors", "grants"}')
    run_as(a, "cmd_trust", "cmd_authority_check")
    a = asub.add_parser("init", help="write a commented example authority.toml if there is none")
    json_option(a, 'print {"path"}')
    run_as(a, "cmd_trust", "cmd_authority_init")

    p = sub.add_parser("forward", help="sign a bundle's payload anew for someone else; earlier hops become claims")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    p.add_argument("--to", action="append", default=[], metavar="NAME", help="a confirmed contact (repeatable)")
    p.add_argument("-o", "--output", metavar="DIR", help="also copy the new bundle into DIR/<id>")
    p.add_argument(
        "--unverified",
        action="store_true",
        help="forward a bundle whose signer is not a confirmed, unretired contact; the hop then names the key as unverified",
    )
    json_option(p, "describe the bundle made, as `gage bundle --json` does, and the one forwarded")
    add_passphrase_options(p)
    run_as(p, "cmd_trust", "cmd_forward")

    p = sub.add_parser("read", help="print a bundle's frame, then its payload: what an agent should read")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    p.add_argument("--pending", action="store_true", help="show a pending bundle's payload (it stays pending)")
    json_option(p, "the frame's fields and a description of each payload file")
    run_as(p, "cmd_trust", "cmd_read")


# --- the gate: accept, reject, watch (cmd_gate.py) ---------------------------------------------


def _gate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("accept", help="accept pending bundles (verifies the exact bytes as it moves them)")
    p.add_argument("ids", nargs="+", metavar="ID", help="bundle id or unique prefix (several: each is found before any is moved)")
    p.add_argument(
        "--unverified", action="store_true", help="accept even though the sender is not a confirmed contact (journaled as such)"
    )
    json_option(p, 'print {"id", "state", "how", "verdict"} (a list of them for several ids)')
    run_as(p, "cmd_gate", "cmd_accept")

    p = sub.add_parser("reject", help="reject pending bundles")
    p.add_argument("ids", nargs="+", metavar="ID", help="bundle id or unique prefix (several: each is found before any is moved)")
    p.add_argument("--why", metavar="TEXT", help="the reason, kept in the journal")
    json_option(p, 'print {"id", "state", "why"} (a list of them for several ids)')
    run_as(p, "cmd_gate", "cmd_reject")

    p = sub.add_parser("watch", help="import bundles from drop folders and this home's mailbox until stopped")
    p.add_argument("--drop", action="append", default=[], metavar="DIR", help="a drop folder to watch (repeatable)")
    box = p.add_mutually_exclusive_group()
    box.add_argument("--mailbox", action="store_true", help="fetch this home's relay mailbox as envelopes arrive (the default when it has one)")
    box.add_argument("--no-mailbox", action="store_true", help="only the drop folders, even when this home has a mailbox")
    p.add_argument(
        "--unattended",
        action="store_true",
        help="accept verified replies to bundles I sent without asking, within --budget per thread",
    )
    p.add_argument("--budget", type=positive, metavar="N", help="unattended accepts allowed per thread (counted in the journal)")
    p.add_argument("--settle", type=seconds, default=2.0, metavar="SECONDS", help="wait this long for an incomplete bundle to stop changing (default 2)")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="also name each event's kind, bundle id and path")
    loud.add_argument("-q", "--quiet", action="store_true", help="only arrivals, decisions and errors")
    add_passphrase_options(p)  # --mailbox on a protected home: its sealing key opens with the identity
    json_option(p, "one JSON object per line (time, kind, message, id, path)")
    run_as(p, "cmd_gate", "cmd_watch")


# --- A2A (cmd_a2a.py; serve and send load the SDK only when run) ------------------------------

A2A_EXAMPLES = """\
examples:
  gage a2a export 3f2a -o bundle.a2a.json          # an A2A 1.0 Artifact
  gage a2a export 3f2a --protocol 0.3 -o b.json     # the same bundle for a 0.3 agent
  gage a2a import bundle.a2a.json                  # lands in inbox/pending, unread
  gage a2a card --url http://127.0.0.1:8470/ --json
  gage a2a serve --port 8470                       # needs the a2a extra
  gage a2a send 3f2a http://127.0.0.1:8470/        # needs the a2a extra
"""


def _a2a(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "a2a",
        help="move bundles over A2A: export and import artifacts, show the agent card, serve and send",
        description="Bundles over A2A. The bundle travels byte for byte; nothing A2A says is consent or trust.",
        epilog=A2A_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    asub = p.add_subparsers(dest="a2a_command", metavar="ACTION", required=True)

    e = asub.add_parser("export", help="write a bundle as an A2A Artifact (JSON)")
    e.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    e.add_argument("--protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL, help="A2A protocol version (default 1.0)")
    e.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    e.add_argument("--force", action="store_true", help="replace FILE if it exists")
    e.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the largest bundle to export (default: this home's A2A limit)")
    run_as(e, "cmd_a2a", "cmd_export")

    i = asub.add_parser("import", help="land the bundles in an A2A Artifact, Message or Task in inbox/pending")
    i.add_argument("source", metavar="FILE", help="a JSON file, or - for standard input")
    i.add_argument("--protocol", choices=PROTOCOLS, help="read as this version (default: detected)")
    i.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the most bytes to take (default: this home's A2A limit)")
    json_option(i)
    run_as(i, "cmd_a2a", "cmd_import")

    c = asub.add_parser("card", help="print this home's gage extension entry for an agent card, or a whole card with --url")
    c.add_argument("--url", metavar="URL", help="the URL the agent is served at: print a whole agent card")
    json_option(c)
    run_as(c, "cmd_a2a", "cmd_card")

    s = asub.add_parser("serve", help="run an A2A agent that lands received bundles in pending (needs the a2a extra; see the README)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=port, default=8470, help="port (default 8470; 0 picks a free one)")
    s.add_argument("--url", metavar="URL", help="the URL the card advertises (default: http://HOST:PORT/)")
    s.add_argument("--token-file", metavar="FILE", help="a file holding a bearer token every request must carry (required off loopback)")
    s.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the most bytes one request may carry (default: this home's A2A limit)")
    run_as(s, "cmd_a2a", "cmd_serve")

    t = asub.add_parser("send", help="send a bundle to an A2A agent (needs the a2a extra; see the README)")
    t.add_argument("id", metavar="ID", help="bundle id or unique prefix (4 hex digits or more)")
    t.add_argument("url", metavar="URL", help="the agent's URL or its card's URL")
    t.add_argument("--protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL, help="A2A protocol version (default 1.0)")
    t.add_argument("--token-file", metavar="FILE", help="a bearer token for the agent")
    t.add_argument("--reply-to", metavar="URL", help="the URL of your own `gage a2a serve`, sent as a claim so the receiver can answer")
    t.add_argument("--max-bytes", type=max_bytes, metavar="N", help="the largest bundle to send (default: this home's A2A limit)")
    json_option(t)
    run_as(t, "cmd_a2a", "cmd_send")


# --- MCP (cmd_mcp.py; loads the SDK only when run) ---------------------------------------------


def _mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve this home to an agent over MCP on stdio: it reads through the frame (needs gage[mcp])",
        description="An MCP server on standard input and output. Its tools read; none accepts, rejects or trusts.",
    )
    run_as(p, "cmd_mcp", "cmd_mcp")


# --- the person's own tools: extract, completion, man (cmd_files.py) ---------------------------


def _files(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("extract", help="copy an accepted bundle's files into a folder, checking every byte")
    p.add_argument("id", metavar="ID", help="bundle id or unique prefix")
    p.add_argument("dir", metavar="DIR", help="the folder to copy the payload into (made if missing)")
    p.add_argument("--pending", action="store_true", help="extract a pending bundle without accepting it")
    p.add_argument("--force", action="store_true", help="replace files that exist in DIR")
    json_option(p)
    run_as(p, "cmd_files", "cmd_extract")

    p = sub.add_parser("completion", help="print shell completion for bash, zsh or fish")
    p.add_argument("shell", choices=SHELLS, help="the shell to print the script for")
    run_as(p, "cmd_files", "cmd_completion")

    p = sub.add_parser("man", help="print the manual page (roff), to install for `man gage`")
    run_as(p, "cmd_files", "cmd_man")
