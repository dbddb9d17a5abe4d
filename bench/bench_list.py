"""Benchmark: `gage list` (second run) against the floor, and `verdict ID` / `read ID` in a small and a big home.

The floor is what any listing must do: read every pending bundle's `manifest.json` once
and parse it (`Manifest.parse`). A second `gage list` may add a stat of each bundle's
files (the check cache's key: gage.home.cache.checks), the verdict's trust half and the output,
but it must not hash payloads again; the target is within 3x of the floor. `verdict ID`
and `read ID` must not grow with the inbox: each is run in a small home and a big one,
and the ratio big/small is printed (target about 1).

Homes are made with bench/scale.py (a big one of --pending bundles and --journal entries,
a small one of --small-pending), then each is listed once so the check cache is warm.
Rounds are interleaved (every runner once per round, so all see the same load and page
cache); medians and minimums are printed, then the ratios. Runners:

  floor          read + Manifest.parse of every pending manifest, in this process
  list body      gage.inbox.rows.inbox_rows on an open home, in this process
  list in-proc   the whole command in this process (`main(["list"])`: opening the home too)
  list cli       `python -m gage list --json` as a subprocess (interpreter start-up included)
  floor, new process  the floor in a new interpreter (its start-up and imports included), the
                 fair floor for a command that starts one: printed beside the in-process one

The first listing of the big home (no check cache, no row index: every bundle checked and every
row computed) is timed once and printed against the floor too. With --landed, so is the first
listing of a third home whose pending came through gage's batched import (bench/scale.py --landed:
as a fetch lands them, each batch keeping its rows). With --compare, the before runs
on its own copy of the home (two versions whose caches differ in layout would each find the
other's file and start it again, and neither would list warm).
  verdict/read   `python -m gage verdict ID` / `read ID`, small and big home

Not run in CI; see bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import make_home  # noqa: E402

from gage.cli.main import main as gage_main  # noqa: E402
from gage.format.manifest import Manifest  # noqa: E402
from gage.home.cache import checks  # noqa: E402
from gage.home.layout import ALL_STATES  # noqa: E402
from gage.inbox.listed import listed_rows  # noqa: E402
from gage.inbox.opening import open_home
from gage.inbox.rows import inbox_rows  # noqa: E402

FLOOR_PROCESS = (
    "import os, sys; from gage.format.manifest import Manifest; p = os.path.join(sys.argv[1], 'inbox', 'pending')\n"
    "for n in os.listdir(p):\n"
    "    with open(os.path.join(p, n, 'manifest.json'), 'rb') as f: Manifest.parse(f.read())"
)


def floor_process(home: Path) -> Callable[[], None]:
    def run() -> None:
        code, err = _waited([sys.executable, "-c", FLOOR_PROCESS, str(home)], "floor, new process")
        if code != 0:
            raise SystemExit(f"the floor failed: {err.decode(errors='replace')}")

    return run


def floor(home: Path) -> None:
    pending = home / "inbox" / "pending"
    for name in os.listdir(pending):
        with open(pending / name / "manifest.json", "rb") as f:
            Manifest.parse(f.read())


# Runs the gage package found in argv[1] (the editable install's finder removed), for --compare.
LAUNCH = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__];"
    " sys.path.insert(0, sys.argv.pop(1)); from gage.cli import main as m; sys.exit(getattr(m, 'run', m.main)(sys.argv[1:]))"
)
PEAK_KIB: dict[str, list[int]] = {}
# CPU seconds (user + system) of each new process, by runner: on a machine shared with other work,
# the wall clock swings by 2x within a run; the CPU time a process used swings far less.
CPU_S: dict[str, list[float]] = {}


def _waited(cmd: list[str], name: str | None) -> tuple[int, bytes]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    if name is not None:
        PEAK_KIB.setdefault(name, []).append(usage.ru_maxrss)
        CPU_S.setdefault(name, []).append(usage.ru_utime + usage.ru_stime)
    return os.waitstatus_to_exitcode(status), err


def cli(home: Path, *args: str, src: str | None = None, name: str | None = None) -> Callable[[], None]:
    """The command as a new process; its peak memory (ru_maxrss) is kept under `name`."""
    cmd = [sys.executable, "-m", "gage", "--home", str(home), *args]
    if src is not None:
        cmd = [sys.executable, "-c", LAUNCH, src, "--home", str(home), *args]

    def run() -> None:
        code, err = _waited(cmd, name)
        if code != 0:
            raise SystemExit(f"{' '.join(args)} failed: {err.decode(errors='replace')}")

    return run


def in_process(home: Path) -> Callable[[], None]:
    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            if gage_main(["--home", str(home), "list"]) != 0:
                raise SystemExit("list failed")

    return run


def body(home: Path) -> Callable[[], None]:
    opened = open_home(home)
    return lambda: inbox_rows(opened, ALL_STATES) and None


def listed(home: Path) -> Callable[[], None]:
    opened = open_home(home)
    return lambda: listed_rows(opened, ALL_STATES) and None


def some_id(home: Path) -> str:
    return sorted(os.listdir(home / "inbox" / "pending"))[0][:12]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=10_000, help="bundles pending in the big home (default 10000)")
    ap.add_argument("--journal", type=int, default=None, help="journal entries in the big home (default 10 per pending)")
    ap.add_argument("--small-pending", type=int, default=100, help="bundles pending in the small home (default 100)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, help="make the homes here (default: a temporary folder, removed after)")
    ap.add_argument("--hybrid", action="store_true", help="every key Ed25519 + ML-DSA-65 (bench/scale.py --hybrid)")
    ap.add_argument("--compare", metavar="DIR", help="also run `gage list` of the gage package in DIR/gage (a before)")
    ap.add_argument("--landed", action="store_true", help="also time the first listing of a home whose pending landed through the batched import")
    ap.add_argument("--journal-small", type=int, default=None, help="also list the big home's inbox with this short a journal (peak memory against the journal)")
    a = ap.parse_args(argv)
    journal = a.journal if a.journal is not None else 10 * a.pending
    small_journal = max(a.small_pending, journal * a.small_pending // max(a.pending, 1))
    work = Path(tempfile.mkdtemp(prefix="gage-bench-list-", dir=a.dir))
    try:
        big, small = work / "big", work / "small"
        start = time.perf_counter()
        make_home(big, pending=a.pending, journal=journal, hybrid=a.hybrid)
        make_home(small, pending=a.small_pending, journal=small_journal, seed=2, hybrid=a.hybrid)
        print(f"made homes: {a.pending} pending / {journal} journal entries, and {a.small_pending} / {small_journal} "
              f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        # A check is remembered only once its files are older than the cache's racy window.
        time.sleep(checks.RACY_NS / 1e9 + 0.2)
        before_home = work / "big-before"
        if a.compare:
            shutil.copytree(big, before_home, symlinks=True)
        os.sync()
        first = time.perf_counter()
        cli(big, "list", "--json")()
        first_listing = time.perf_counter() - first
        first_floor = time.perf_counter()
        floor(big)
        first_floor = time.perf_counter() - first_floor
        print(f"first gage list (fills the check cache and the row index): {first_listing:.2f} s; the floor just after: {first_floor:.2f} s", file=sys.stderr)
        # The same again with the journal index as gage's own commands keep it (current: every
        # command brings it up to date; bench/scale.py writes the journal directly, so the first
        # listing above also built it from 100,000 lines), and no check cache or row index.
        indexed = work / "big-indexed"
        shutil.copytree(big, indexed, symlinks=True)
        for name in ("checks.json", "rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
            (indexed / "cache" / name).unlink(missing_ok=True)
        os.sync()  # the copy's writeback is not the listing's to pay
        first = time.perf_counter()
        cli(indexed, "list", "--json")()
        first_indexed = time.perf_counter() - first
        print(f"first gage list, the journal index current: {first_indexed:.2f} s", file=sys.stderr)
        first_landed = None
        if a.landed:
            # A home whose pending came through gage's batched import, as a fetch lands it (the rows
            # each batch keeps included); its first listing is what a person back from a week away waits.
            landed_home = work / "big-landed"
            t = time.perf_counter()
            make_home(landed_home, pending=a.pending, journal=journal, hybrid=a.hybrid, landed=True)
            print(f"landed {a.pending} through the batched import in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            landed_before = work / "big-landed-before"
            if a.compare:  # the before keeps no rows as it lands: its first listing computes them all
                shutil.copytree(landed_home, landed_before, symlinks=True)
                for name in ("rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
                    (landed_before / "cache" / name).unlink(missing_ok=True)
            os.sync()
            first = time.perf_counter()
            cli(landed_home, "list", "--json")()
            first_landed = time.perf_counter() - first
            print(f"first gage list after landing: {first_landed:.2f} s", file=sys.stderr)
            if a.compare:
                os.sync()
                first = time.perf_counter()
                cli(landed_before, "list", "--json", src=str(Path(a.compare).resolve()))()
                print(f"first gage list after landing [before]: {time.perf_counter() - first:.2f} s", file=sys.stderr)
        cli(small, "list")()
        if a.compare:
            first = time.perf_counter()
            cli(before_home, "list", "--json", src=str(Path(a.compare).resolve()))()  # its own caches warm too
            print(f"first gage list [before]: {time.perf_counter() - first:.2f} s", file=sys.stderr)
            shutil.rmtree(indexed / "cache")
            shutil.copytree(before_home / "cache", indexed / "cache", symlinks=True)
            for name in ("checks.json", "rows.sqlite", "rows.sqlite-wal", "rows.sqlite-shm"):
                (indexed / "cache" / name).unlink(missing_ok=True)
            os.sync()
            first = time.perf_counter()
            cli(indexed, "list", "--json", src=str(Path(a.compare).resolve()))()
            print(f"first gage list, the journal index current [before]: {time.perf_counter() - first:.2f} s", file=sys.stderr)
        short = None
        if a.journal_small is not None:
            short = work / "short"
            make_home(short, pending=a.pending, journal=a.journal_small, hybrid=a.hybrid)
            time.sleep(checks.RACY_NS / 1e9 + 0.2)
            cli(short, "list")()
        big_id, small_id = some_id(big), some_id(small)
        runners: dict[str, Callable[[], None]] = {
            "floor (read + parse manifests)": lambda: floor(big),
            "floor, new process": floor_process(big),
            "list body (inbox_rows)": body(big),
            "list in-proc (main)": in_process(big),
            "list rows (listed_rows)": listed(big),
            "list cli (second run)": cli(big, "list", "--json", name="list cli"),
            "verdict ID, small home": cli(small, "verdict", small_id),
            "verdict ID, big home": cli(big, "verdict", big_id),
            "read ID, small home": cli(small, "read", small_id),
            "read ID, big home": cli(big, "read", big_id),
        }
        if a.compare:
            runners["list cli [before]"] = cli(before_home, "list", "--json", src=str(Path(a.compare).resolve()), name="list cli [before]")
        if short is not None:
            runners[f"list cli, {a.journal_small} journal entries"] = cli(short, "list", "--json", name="list cli, short journal")
        times: dict[str, list[float]] = {k: [] for k in runners}
        for _ in range(a.rounds):
            for name, run in runners.items():
                t = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{'runner':<34} {'median s':>9} {'min s':>9}")
        for k, v in times.items():
            print(f"{k:<34} {med[k]:>9.3f} {min(v):>9.3f}")
        f = med["floor (read + parse manifests)"]
        print(f"list body / floor:     {med['list body (inbox_rows)'] / f:.2f}")
        print(f"list in-proc / floor:  {med['list in-proc (main)'] / f:.2f}")
        print(f"list rows / floor:     {med['list rows (listed_rows)'] / f:.2f}")
        fp = med["floor, new process"]
        print(f"list cli / floor:      {med['list cli (second run)'] / f:.2f}  (/ floor in a new process: {med['list cli (second run)'] / fp:.2f})")
        if a.compare:
            print(f"list cli [before] / floor: {med['list cli [before]'] / f:.2f}  (/ floor in a new process: {med['list cli [before]'] / fp:.2f})")
        print(f"first listing / floor: {first_listing / f:.2f}  (/ floor in a new process: {first_listing / fp:.2f})")
        print(f"first listing, the journal index current / floor: {first_indexed / f:.2f}  (/ floor in a new process: {first_indexed / fp:.2f})")
        if first_landed is not None:
            print(f"first listing after landing / floor: {first_landed / f:.2f}  (/ floor in a new process: {first_landed / fp:.2f})")
        cpu = {k: statistics.median(v) for k, v in CPU_S.items()}
        if "floor, new process" in cpu:
            for k, v in cpu.items():
                print(f"CPU s, {k}: {v:.3f}  (/ the floor's, new process: {v / cpu['floor, new process']:.2f})")
        for k, v in PEAK_KIB.items():
            print(f"peak memory, {k}: {max(v) / 1024:.0f} MiB")
        print(f"verdict big / small:   {med['verdict ID, big home'] / med['verdict ID, small home']:.2f}")
        print(f"read big / small:      {med['read ID, big home'] / med['read ID, small home']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
