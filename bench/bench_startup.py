"""Benchmark: start-up of small commands, against starting Python and doing nothing.

`gage --version`, `gage list` on a small home and `gage verdict ID` are typed many times a
day; most of their time is start-up, and most of that was importing modules the command
never used (issue 13). This makes a small home (one identity, a confirmed contact, a few
pending bundles), then runs each command as a new process in interleaved rounds beside
`python -c pass` (same interpreter, same environment), and prints the median wall time of
each and its ratio to bare Python. Then, with `python -X importtime`, the time each spends
importing beyond what bare Python imports, its share of the command's wall time, and any
heavy module (watchfiles, textual, rich, the A2A SDK, the card fetcher) it loaded.

Bytecode is cached in a temporary folder (PYTHONPYCACHEPREFIX) and warmed first, as an
install by pip, pipx or uv leaves it; `--no-bytecode` measures compiling every module on
every run instead. `--compare DIR` runs, in the same rounds, the gage whose package is in
DIR too (for example the previous commit: `git archive HEAD~1 gage | tar -x -C /tmp/before`).
Not run in CI; see bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Modules no small command should load: the watcher, the interface, the A2A SDK and the
# card fetcher (urllib, ssl), the signing library only where a signature is checked.
HEAVY = ("watchfiles", "textual", "rich", "a2a", "gage.carriers.a2a", "gage.carriers.watch", "gage.tui", "uvicorn", "httpx", "ssl")


# Runs the gage package found in argv[1] (the editable install's finder removed, so it cannot
# answer first), as the console script would: `python -c LAUNCH DIR ARGS...`.
LAUNCH = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__];"
    " sys.path.insert(0, sys.argv.pop(1)); from gage.cli import main as m; sys.exit(getattr(m, 'run', m.main)(sys.argv[1:]))"
)


def _gage_argv() -> list[str]:
    """The `gage` console script beside this Python, as an installed user runs it, else `-m gage`."""
    script = Path(sys.executable).with_name("gage")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gage"]


def _env(pycache: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, env=env, check=False)
    took = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{res.stderr.decode(errors='replace')}")
    return took


def make_home(root: Path, pending: int) -> tuple[Path, str]:
    """A small home with `pending` bundles from a confirmed contact; the id of one of them."""
    from gage.format.words import derive
    from gage.home.layout import Home
    from gage.inbox import send, store
    from gage.trust import ceremony

    me = Home.init(root / "me", "me")
    them = Home.init(root / "them", "them")
    words = " ".join(" ".join(p) for p in derive(them.identity.key))
    assert ceremony.confirm(me, "them", them.identity.key, words).confirmed
    src = root / "src"
    src.mkdir()
    first = ""
    for i in range(pending):
        f = src / f"note-{i}.txt"
        f.write_text(f"note {i}\n" * 50)
        m, _dest = send.create(them, [f], kind="share", subject=f"note {i}", copy_to=root / "wire")
        store.import_bundle(me, root / "wire" / m.id)
        first = first or m.id
    return me.root, first


def _import_ms(argv: list[str], env: dict[str, str]) -> tuple[float, set[str]]:
    """Total import time of a process (the top-level modules' cumulative times), and the modules it imported."""
    res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    total = 0
    names = set()
    for line in res.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        parts = line.split("|")
        if len(parts) < 3:
            continue
        name = parts[2]
        names.add(name.strip())
        if name.startswith(" ") and not name.startswith("  "):
            total += int(parts[1])
    return total / 1000, names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    ap.add_argument("--pending", type=int, default=5, help="pending bundles in the home (default 5)")
    ap.add_argument("--no-bytecode", action="store_true", help="compile every module on every run (no .pyc)")
    ap.add_argument(
        "--compare", metavar="DIR", action="append", default=[],
        help="also run the gage package in DIR (DIR/gage), in the same rounds (repeatable: before and after alike)",
    )
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gage-bench-startup-"))
    try:
        pycache = None if args.no_bytecode else work / "pycache"
        env = _env(pycache)
        home, bid = make_home(work, args.pending)
        env["GAGE_HOME"] = str(home)
        gage = _gage_argv()
        py = [sys.executable]
        runs = {
            "python -c pass": (py + ["-c", "pass"], py + ["-X", "importtime", "-c", "pass"]),
            "gage --version": (gage + ["--version"], py + ["-X", "importtime", "-m", "gage", "--version"]),
            f"gage list ({args.pending} pending)": (gage + ["list"], py + ["-X", "importtime", "-m", "gage", "list"]),
            "gage verdict ID": (gage + ["verdict", bid], py + ["-X", "importtime", "-m", "gage", "verdict", bid]),
            "gage id": (gage + ["id"], py + ["-X", "importtime", "-m", "gage", "id"]),
        }
        own = list(runs.items())[1:]
        for compare in args.compare:
            src = str(Path(compare).resolve())
            for name, (cmd, _it) in own:
                rest = cmd[len(gage):]
                runs[f"{name} [{Path(src).name}]"] = (
                    py + ["-c", LAUNCH, src, *rest],
                    py + ["-X", "importtime", "-c", LAUNCH, src, *rest],
                )
        for cmd, _it in runs.values():  # warm: the page cache, and the bytecode an install leaves
            _run(cmd, env)
        wall: dict[str, list[float]] = {name: [] for name in runs}
        imports: dict[str, list[float]] = {name: [] for name in runs}
        loaded: dict[str, set[str]] = {name: set() for name in runs}
        for _ in range(args.rounds):
            for name, (cmd, it) in runs.items():
                wall[name].append(_run(cmd, env))
                ms, names = _import_ms(it, env)
                imports[name].append(ms)
                loaded[name] |= names
        base = statistics.median(wall["python -c pass"])
        base_imports = statistics.median(imports["python -c pass"])
        how = "no bytecode: every module compiled on every run" if args.no_bytecode else "bytecode cached, as after an install"
        print(f"start-up, {args.rounds} interleaved rounds, medians ({how}); {os.cpu_count()} cores")
        width = max(len(n) for n in runs) + 1
        print(f"{'':<{width}} {'wall':>9} {'x python':>9} {'imports':>9} {'share':>6}  heavy modules loaded")
        for name in runs:
            w = statistics.median(wall[name])
            imp = statistics.median(imports[name]) - base_imports if name != "python -c pass" else base_imports
            heavy = sorted(m for m in loaded[name] if m in HEAVY or m.split(".")[0] in HEAVY[:5])
            print(
                f"{name:<{width}} {w * 1000:7.1f}ms {w / base:8.2f}x {imp:7.1f}ms {imp / (w * 1000):6.0%}  "
                f"{', '.join(heavy) if heavy else 'none'}"
            )
        print("imports: -X importtime, beyond what `python -c pass` imports (its own row: its total).")
        worst = max(statistics.median(wall[n]) for n in runs if n.startswith("gage") and not n.endswith("]"))
        print(f"slowest small command / python: {worst / base:.2f}")
        for compare in args.compare:
            tag = f"[{Path(compare).name}]"
            theirs = max(statistics.median(wall[n]) for n in runs if n.endswith(tag) and "--version" not in n)
            print(f"slowest small command {tag} / python: {theirs / base:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
