"""Benchmark: start-up of small commands, against a clean Python starting and doing nothing.

`gage --version`, `gage id`, `gage list` on a small home and `gage verdict ID` are typed many
times a day; most of their time is start-up. This builds a wheel from the tree and installs it
in a throwaway venv, as pipx or uv would (no editable install: its `.pth` finder imports
pathlib, re and urllib into every process, `python -c pass` included, which doubles a bare
start and flatters every ratio). The wheel's dependencies are read from this venv's
site-packages as a plain directory on the path (a `.pth` line, which imports nothing; the
editable finder's `.pth` there is not run). It makes a small home (one identity, a confirmed
contact, a few pending bundles), then runs each command with the installed `gage` as a new
process in interleaved rounds beside the clean venv's `python -c pass` (and, for comparison,
this venv's), and prints the median wall time of each and its ratio to the clean one; the
bound (docs/architecture.md, the start path) is `id`, `list` and `verdict` within 6x. Then,
with `python -X importtime`, the time each spends importing beyond what bare Python imports,
its share of the command's wall time, and any heavy module it loaded.

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


# Runs the gage package found in argv[1] (ahead of the installed one; an editable install's
# finder removed, so it cannot answer first), as the console script would: `python -c LAUNCH DIR ARGS...`.
LAUNCH = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__];"
    " sys.path.insert(0, sys.argv.pop(1)); from gage.cli import main as m; sys.exit(getattr(m, 'run', m.main)(sys.argv[1:]))"
)


BOUND = 6.0  # id, list and verdict within this many times a clean `python -c pass`
ROOT = Path(__file__).resolve().parent.parent


def clean_install(work: Path) -> Path:
    """A throwaway venv with gage installed from a wheel built from this tree; its python."""
    import sysconfig

    venv = work / "clean"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    dist = work / "dist"
    # Built from a copy, so no build/ is left in the tree and none left there (with modules since
    # removed) gets into the wheel.
    src = work / "src"
    shutil.copytree(ROOT / "gage", src / "gage", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)], check=True, capture_output=True)
    wheel = next(dist.glob("*.whl"))
    subprocess.run([*pip, "--python", str(py), "install", "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "gage_bench_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = "import sys, gage; print(gage.__file__); print(any('editable' in type(f).__module__ for f in sys.meta_path))"
    where, editable = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True, cwd=work).stdout.split()
    if not where.startswith(str(site)) or editable != "False":
        raise SystemExit(f"the throwaway venv does not run the installed wheel: {where}, editable finder {editable}")
    return py


def _env(pycache: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _run(cmd: list[str], env: dict[str, str]) -> float:
    """The wall time of `cmd`, run in the home (not the tree, whose gage `-m` and `-c` would find first)."""
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, env=env, check=False, cwd=env["GAGE_HOME"])
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
    res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, cwd=env["GAGE_HOME"])
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
        help="also run the gage package in DIR (DIR/gage), in the same rounds (repeatable: before and after alike); only between versions whose caches have the same format, or each throws the other's away and both are measured cold",
    )
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gage-bench-startup-"))
    try:
        pycache = None if args.no_bytecode else work / "pycache"
        env = _env(pycache)
        home, bid = make_home(work, args.pending)
        env["GAGE_HOME"] = str(home)
        py = [str(clean_install(work))]
        gage = [str(Path(py[0]).with_name("gage"))]
        dev = [sys.executable]
        runs = {
            "python -c pass": (py + ["-c", "pass"], py + ["-X", "importtime", "-c", "pass"]),
            "python -c pass [editable venv]": (dev + ["-c", "pass"], dev + ["-X", "importtime", "-c", "pass"]),
            "gage --version": (gage + ["--version"], py + ["-X", "importtime", "-m", "gage", "--version"]),
            f"gage list ({args.pending} pending)": (gage + ["list"], py + ["-X", "importtime", "-m", "gage", "list"]),
            "gage verdict ID": (gage + ["verdict", bid], py + ["-X", "importtime", "-m", "gage", "verdict", bid]),
            "gage id": (gage + ["id"], py + ["-X", "importtime", "-m", "gage", "id"]),
        }
        own = list(runs.items())[2:]
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
        print(f"start-up, {args.rounds} interleaved rounds, medians ({how}); {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        print("gage: a wheel of this tree in a throwaway venv; x python: against that venv's `python -c pass`")
        width = max(len(n) for n in runs) + 1
        print(f"{'':<{width}} {'wall':>9} {'x python':>9} {'imports':>9} {'share':>6}  heavy modules loaded")
        for name in runs:
            w = statistics.median(wall[name])
            imp = statistics.median(imports[name]) - base_imports if not name.startswith("python") else statistics.median(imports[name])
            heavy = sorted(m for m in loaded[name] if m in HEAVY or m.split(".")[0] in HEAVY[:5])
            print(
                f"{name:<{width}} {w * 1000:7.1f}ms {w / base:8.2f}x {imp:7.1f}ms {imp / (w * 1000):6.0%}  "
                f"{', '.join(heavy) if heavy else 'none'}"
            )
        print("imports: -X importtime, beyond what the clean `python -c pass` imports (the python rows: their totals).")
        worst = max(statistics.median(wall[n]) for n in runs if n.startswith("gage") and not n.endswith("]"))
        print(f"slowest small command / python: {worst / base:.2f}")
        bounded = [n for n in runs if n.split(" ")[:2] in (["gage", "id"], ["gage", "list"], ["gage", "verdict"]) and not n.endswith("]")]
        over = [n for n in bounded if statistics.median(wall[n]) / base > BOUND]
        print(f"bound: id, list, verdict within {BOUND:g}x a clean `python -c pass`: {'met' if not over else 'NOT met: ' + ', '.join(over)}")
        for compare in args.compare:
            tag = f"[{Path(compare).name}]"
            theirs = max(statistics.median(wall[n]) for n in runs if n.endswith(tag) and "--version" not in n)
            print(f"slowest small command {tag} / python: {theirs / base:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
