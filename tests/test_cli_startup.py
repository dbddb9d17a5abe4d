"""Start-up (issue 13): the parser loads no command's code, and its copies of core values stay true."""

from __future__ import annotations

import enum
import subprocess
import sys
import typing

from gage.carriers.a2a import artifact
from gage.cli import argtypes, commands, completion, help
from gage.cli.main import build_parser
from gage.format import keystatement, manifest, sanitize
from gage.home import layout as home_mod

# What `import gage.cli.main` and building the parser must not load: the watcher, the
# interface, the A2A code and SDK, the signing library, the core's bundle code, every command.
HEAVY = (
    "watchfiles",
    "textual",
    "rich",
    "nacl",
    "a2a",
    "gage.carriers.a2a",
    "gage.carriers.watch",
    "gage.tui",
    "gage.home.layout",
    "gage.bundle",
    "gage.cli.cmd_core",
    "gage.cli.cmd_trust",
    "gage.cli.cmd_gate",
    "gage.cli.cmd_a2a",
    "gage.cli.cmd_files",
    "gage.cli.cmd_keys",
)


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sys.modules))\n"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return set(res.stdout.split())


def _heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_entry_point_loads_no_command_code() -> None:
    assert _heavy(_loaded_after("import gage.cli.main")) == []


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


def test_a_command_loads_only_its_own_module() -> None:
    mods = _loaded_after(
        "import contextlib, io, tempfile\n"
        "from gage.cli.main import main\n"
        "d = tempfile.mkdtemp()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    assert main(['--home', d + '/h', 'init', '--name', 'a']) == 0\n"
        "    assert main(['--home', d + '/h', 'list']) == 0\n"
    )
    assert "gage.cli.cmd_core" in mods
    assert _heavy(mods) and not {"watchfiles", "textual", "gage.carriers.watch", "gage.carriers.a2a", "gage.cli.cmd_a2a"} & mods


def test_every_command_names_a_function_that_exists() -> None:
    leaves = 0
    for path, p in help.walk(build_parser()):
        if path and not help.subcommands(p):
            func = p._defaults.get("func")
            assert isinstance(func, argtypes.Lazy), f"{path} runs nothing"
            assert callable(func.resolve()), f"{path}: {func!r} does not resolve"
            leaves += 1
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
    assert _values(commands.KINDS) == _values(manifest.KINDS)
    assert _values(commands.ALL_STATES) == _values(home_mod.ALL_STATES)
    assert _values(commands.REASONS) == _values(keystatement.REASONS)
    assert _values(commands.PROTOCOLS) == _values(artifact.PROTOCOLS)
    assert commands.DEFAULT_PROTOCOL == artifact.DEFAULT_PROTOCOL
    for shell in commands.SHELLS:
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
