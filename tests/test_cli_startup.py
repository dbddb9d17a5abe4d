"""Start-up: the parser loads no command's body, a command only its own module, and the parsers' copies of core values stay true."""

from __future__ import annotations

import enum
import subprocess
import sys
import typing

from gage.carriers.a2a import artifact
from gage.cli import commands, completion, help
from gage.cli.main import build_parser
from gage.format import manifest, sanitize
from gage.format.keys import statement as keystatement
from gage.home import layout as home_mod

# What `import gage.cli.main` and building the parser must not load: the watcher, the
# interface, the A2A code and SDK, the signing library, the core's bundle code, and every
# command's body: what a command's `run` imports (gage/cli/commands/__init__.py), the core
# below the command line, and the command line's modules that only a body uses.
HEAVY = (
    "watchfiles",
    "textual",
    "rich",
    "nacl",
    "a2a",
    "gage.carriers",
    "gage.tui",
    "gage.mcp",
    "gage.home",
    "gage.bundle",
    "gage.trust",
    "gage.inbox",
    "gage.cli.output",
    "gage.cli.keyreport",
    "gage.cli.deciding",
    "gage.cli.meeting",
    "gage.cli.pairing",
    "gage.cli.import_run",
    "gage.cli.tokenfile",
    "gage.cli.candidates",
)
COMMAND_MODULES = "gage.cli.commands."


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sys.modules))\n"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return set(res.stdout.split())


def _heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_entry_point_loads_no_command_code() -> None:
    mods = _loaded_after("import gage.cli.main")
    assert _heavy(mods) == []
    assert sorted(m for m in mods if m.startswith(COMMAND_MODULES)) == []  # the table, and no command


def test_building_the_parser_and_help_load_no_command_code() -> None:
    mods = _loaded_after(
        "import contextlib, io\n"
        "from gage.cli.main import build_parser, main\n"
        "build_parser().format_help()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--version'])\n"
    )
    assert _heavy(mods) == []


def test_python_m_gage_version_loads_no_command_code() -> None:
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gage", "--version"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and res.stdout.startswith("gage "), res.stderr
    names = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert _heavy(names) == []


def test_help_version_and_a_typo_read_the_table_and_import_no_command() -> None:
    """`gage --help`, `gage --version` and `gage lsit` need each command's name and one line, which
    the table holds: no command's module is imported for them."""
    for argv in (["--help"], ["--version"], ["lsit"], ["--home", "/nonexistent", "-h"]):
        mods = _loaded_after(
            "import contextlib, io\n"
            "from gage.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):\n"
            f"    main({argv!r})\n"
        )
        assert sorted(m for m in mods if m.startswith(COMMAND_MODULES)) == [], argv
        assert _heavy(mods) == [], argv
    mods = _loaded_after(
        "import contextlib, io\n"
        "from gage.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['key', 'retire', '--help'])\n"
    )
    assert sorted(m for m in mods if m.startswith(COMMAND_MODULES)) == ["gage.cli.commands.key"]  # a command's help: its own


def test_a_command_loads_only_its_own_module() -> None:
    mods = _loaded_after(
        "import contextlib, io, tempfile\n"
        "from gage.cli.main import main\n"
        "d = tempfile.mkdtemp()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    assert main(['--home', d + '/h', 'init', '--name', 'a']) == 0\n"
        "    assert main(['--home', d + '/h', 'list']) == 0\n"
    )
    assert sorted(m for m in mods if m.startswith(COMMAND_MODULES)) == ["gage.cli.commands.init", "gage.cli.commands.list"]
    assert _heavy(mods) and not {"watchfiles", "textual", "gage.carriers.watch", "gage.carriers.a2a"} & mods


def test_every_command_is_one_module_that_runs_each_of_its_actions() -> None:
    """Every name in the table is a module with `add_arguments` and `run`, which the parser runs;
    a command with actions has a function for exactly the actions its parser makes."""
    leaves = 0
    whole = build_parser()
    assert list(help.subcommands(whole)) == list(commands.COMMANDS)
    for name, p in help.subcommands(whole).items():
        module = commands.load(name)
        assert module.__name__ == f"gage.cli.commands.{commands.COMMANDS[name][0]}"
        assert callable(module.add_arguments) and callable(module.run), name
        assert (module.__doc__ or "").startswith(f"`gage {name}"), f"{name}: its module's docstring opens with the command"
        assert p._defaults.get("func") is module.run, f"{name} does not run its own module"
        actions = help.subcommands(p)
        if actions:
            assert set(module.ACTIONS) == set(actions), name
            assert all(callable(f) for f in module.ACTIONS.values()), name
            assert all(not help.subcommands(a) for a in actions.values()), name  # one level of actions
        else:
            assert not hasattr(module, "ACTIONS"), name
        leaves += len(actions) or 1
    assert leaves > 30


def _values(x: object) -> tuple[str, ...]:
    """A tuple of strings, an enum, or a Literal: the core may hold its choices any of these ways."""
    if isinstance(x, type) and issubclass(x, enum.Enum):
        return tuple(str(m.value) for m in x)
    if typing.get_origin(x) is typing.Literal:
        return tuple(str(a) for a in typing.get_args(x))
    assert isinstance(x, tuple | list), x
    return tuple(str(getattr(v, "value", v)) for v in x)


def test_the_parsers_copies_of_core_choices_are_the_cores() -> None:
    from gage.cli.commands import a2a, bundle, key
    from gage.cli.commands import completion as completion_command
    from gage.cli.commands import list as list_command

    assert _values(bundle.KINDS) == _values(manifest.KINDS)
    assert _values(list_command.ALL_STATES) == _values(home_mod.ALL_STATES)
    assert _values(key.REASONS) == _values(keystatement.REASONS)
    assert _values(a2a.PROTOCOLS) == _values(artifact.PROTOCOLS)
    assert a2a.DEFAULT_PROTOCOL == artifact.DEFAULT_PROTOCOL
    assert completion.SHELLS == completion_command.SHELLS
    for shell in completion_command.SHELLS:
        assert completion.script(shell, build_parser())


def test_the_ascii_shortcut_in_sanitize_agrees_with_the_full_table() -> None:
    """`visible` skips compiling the full Unicode class for ASCII text: same answer for every ASCII character."""
    for cp in range(128):
        ch = chr(cp)
        for keep in (False, True):
            short = sanitize._pattern(ch, keep_lines=keep).match(ch) is None
            full = sanitize._not_plain(keep).match(ch) is None
            assert short == full, (cp, keep)
    assert sanitize.visible("a\x1bb\u202ec\n") == "a\\x1bb\\u202ec\\n"
    assert sanitize.visible("a\tb\n\x7f", oneline=False) == "a\tb\n\\x7f"


# What the small commands a person types all day must not load: the ML-DSA library
# (only where a hybrid signature is made or checked), the thread pool (only for large files),
# the builder, the key-statement and sending code, and the parsers of other commands.
SMALL_NEVER = (
    "cryptography",
    "concurrent.futures",
    "logging",
    "tomli_w",
    "gage.bundle.making",
    "gage.inbox.send",
    "gage.inbox.store",
    "gage.inbox.ownkey",
    "gage.format.keys.seal",
    "gage.home.sealing",
    "gage.cli.commands.key",
    "gage.cli.keyreport",
    "threading",  # the home's, the check cache's and the journal index's locks are _thread's own
    "gage.cli.commands.relay",  # other commands' modules: not even imported
    "gage.cli.commands.invite",
    "gage.cli.relaying",
    "gage.cli.extras",
)

# ...and, without --json, what only JSON output, a carrier's entry or a journal repair uses.
PLAIN_NEVER = ("base64", "gage.format.relayurl", "gage.format.keys.asjson", "gage.inbox.rowshape")


def _small_command_modules(*argv: str) -> tuple[set[str], int]:
    """The modules a fresh `gage ARGV` on a small home (hybrid identity, a hybrid contact's
    bundle listed once so its check is cached) loads, and how many parsers it built."""
    code = (
        "import contextlib, io, sys, tempfile, argparse\n"
        "from gage.cli import main as m\n"
        "built = []\n"
        "orig = argparse.ArgumentParser.__init__\n"
        "def counting(self, *a, **k):\n"
        "    built.append(1)\n"
        "    orig(self, *a, **k)\n"
        "argparse.ArgumentParser.__init__ = counting\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert m.main({list(argv)!r}) == 0\n"
        "print('PARSERS', len(built))\n"
    )
    probe = code + "print('\\n'.join(sys.modules))\n"
    return _run_probe(probe)


def _run_probe(probe: str) -> tuple[set[str], int]:
    import os

    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=os.environ)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.split()
    parsers = int(lines[lines.index("PARSERS") + 1])
    return set(lines), parsers


def test_small_commands_load_only_what_they_run_and_build_one_parser(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    from gagetest import small_home_with_a_bundle

    from gage.inbox.listed import listed_rows

    me, them, m = small_home_with_a_bundle(tmp_path)
    assert me.identity.hybrid and them.identity.hybrid
    listed_rows(me)  # the check and the row are kept, as after any earlier listing
    monkeypatch.setenv("GAGE_HOME", str(me.root))
    assert os.environ["GAGE_HOME"] == str(me.root)
    for argv in (["list"], ["list", "--json"], ["id"], ["--home", str(me.root), "id", "--json"], ["verdict", m.id[:8]]):
        mods, parsers = _small_command_modules(*argv)
        loaded = sorted(m for m in mods if any(m == n or m.startswith(n + ".") for n in SMALL_NEVER))
        assert loaded == [], (argv, loaded)
        named = "id" if "id" in argv else argv[0]
        assert sorted(m for m in mods if m.startswith(COMMAND_MODULES)) == [COMMAND_MODULES + named], argv
        assert parsers <= 3, (argv, parsers)  # gage, its subcommand (and nothing of the other fifty)
        if "--json" not in argv:  # the JSON shapes, the relay URL cleaner, the torn-line repair's base64
            never = set(PLAIN_NEVER) - {"base64"} if argv[0] == "id" else set(PLAIN_NEVER)  # `id` stretches words once (nacl's base64)
            assert sorted(never & mods) == [], (argv, sorted(never & mods))


def test_help_completion_and_did_you_mean_still_see_every_command(capsys) -> None:  # type: ignore[no-untyped-def]
    import contextlib

    from gage.cli.main import main

    with contextlib.suppress(SystemExit):
        main(["lsit"])
    said = capsys.readouterr().err
    assert "did you mean list?" in said, said
    with contextlib.suppress(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert all(name in shown for name in ("accept", "mcp", "mailbox", "completion", "verdict")), shown
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert all(name in script for name in ("accept", "mailbox", "verdict", "a2a")), script[:400]
    with contextlib.suppress(SystemExit):
        main(["a2a", "exprot"])
    assert "did you mean export?" in capsys.readouterr().err


def test_the_help_width_is_argparses(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # gage's parsers give argparse's formatter the width it would have read through shutil.
    import argparse

    from gage.cli.parser import GageParser, help_width

    for columns in ("120", "45", "0", "-3", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert help_width() == argparse.HelpFormatter("gage")._width
        assert GageParser(prog="gage")._get_formatter()._width == argparse.HelpFormatter("gage")._width


def test_the_program_skips_the_exit_collection_and_main_does_not() -> None:
    """`gage` and `python -m gage` run `run`, which freezes the collector after `main` (the exit's
    last collections were 4-6 ms of a small command); `main`, which the tests call many times in
    one process, leaves the collector as it was."""
    import gc
    import tomllib
    from pathlib import Path

    from gage.cli import main as entry

    scripts = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"gage": "gage.cli.main:run"}
    assert "run()" in (Path(entry.__file__).parent.parent / "__main__.py").read_text()
    before = gc.get_freeze_count()
    assert entry.main(["completion", "bash"]) == 0
    assert gc.get_freeze_count() == before
    probe = "import gc, sys; from gage.cli.main import run; code = run(['completion', 'bash']); print(code, gc.get_freeze_count() > 0, file=sys.stderr)"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.stderr.split()[-2:] == ["0", "True"] and res.stdout  # the output was all written


def test_a_command_run_by_name_builds_and_imports_only_its_own_parser() -> None:
    # main builds the parser of the command it is given by name alone, from its module alone.
    from gage.cli.commands import invite, join
    from gage.cli.main import build_parser

    whole = set(help.subcommands(build_parser()))
    assert whole == set(commands.COMMANDS)
    for name in commands.COMMANDS:
        assert set(help.subcommands(build_parser(name))) == {name}, name
    args = build_parser("join").parse_args(["join", "7-tiger-guitarist", "--relay", "nats://127.0.0.1:4222"])
    assert (args.command, args.code, args.func) == ("join", "7-tiger-guitarist", join.run)
    args = build_parser("invite").parse_args(["invite", "--code", "7-tiger-guitarist"])
    assert args.func is invite.run
    args = build_parser("mailbox").parse_args(["mailbox", "show", "--json"])
    assert args.mailbox_command == "show" and args.json
    mods = _loaded_after(
        "import contextlib, io\n"
        "from gage.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['join'])\n"  # a usage error from join's own parser
    )
    assert sorted(m for m in mods if m.startswith(COMMAND_MODULES)) == ["gage.cli.commands.join"]
    assert "gage.cli.relaying" in mods  # join's credential options are the relay's


def test_the_home_lock_is_reentrant_in_a_thread_and_excludes_other_threads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import threading

    from gage.home.layout import Home, LockBusy

    home = Home.init(tmp_path / "h", "h")
    held, done = threading.Event(), threading.Event()
    seen: list[str] = []

    def other() -> None:
        held.wait(10)
        try:
            with home.lock(timeout=0.2):
                seen.append("entered")
        except LockBusy as exc:
            seen.append(str(exc))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with home.lock(), home.lock(timeout=0):  # the same thread enters again at once
        held.set()
        assert done.wait(10)
    t.join(10)
    assert seen == ["the home is locked by another gage task in this process"]
    with home.lock(timeout=0):  # released on the way out
        pass
