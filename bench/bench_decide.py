"""Benchmark: bulk decisions, `gage accept` / `gage reject` of many ids in one call (issue 28).

A home of N pending bundles (bench/scale.py; a mix of confirmed contacts and strangers, so
accepts use --unverified) is made once, and each round copies it afresh for every runner
(the copy is not timed). Runners, interleaved:

- floor: renaming the N pending folders into accepted and one fsync of each folder, in-process;
- one by one: `gate.accept` (or `gate.reject`) per id, in-process, as `gage accept ID...` did
  before issue 28 (a lock, reconcile, and seven fsyncs per bundle);
- batch: `gate.decide_many`, in-process (what `gage accept ID...` runs now);
- cli: `gage accept --unverified ID...` (and `gage reject ID...`) as a new process.

It prints medians and minimums and each ratio to the floor, and batch / one-by-one.

    python bench/bench_decide.py                        # 200 pending, 5 rounds, Ed25519-only
    python bench/bench_decide.py --pending 200 --hybrid --rounds 3
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import make_home  # noqa: E402

from gage.bundle import atomic  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.inbox import gate  # noqa: E402


def _ids(home_dir: Path) -> list[str]:
    return sorted(os.listdir(home_dir / "inbox" / "pending"))


def floor(home_dir: Path, action: str) -> None:
    src, dst = home_dir / "inbox" / "pending", home_dir / "inbox" / ("accepted" if action == "accept" else "rejected")
    for name in _ids(home_dir):
        os.rename(src / name, dst / name)
    atomic.fsync_dir(dst)
    atomic.fsync_dir(src)


def one_by_one(home_dir: Path, action: str) -> None:
    home = Home.open(home_dir)
    for bid in _ids(home_dir):
        if action == "accept":
            gate.accept(home, bid, unverified=True)
        else:
            gate.reject(home, bid, why="bench")


def batch(home_dir: Path, action: str) -> None:
    home = Home.open(home_dir)
    out = gate.decide_many(home, _ids(home_dir), action, unverified=True, why=None if action == "accept" else "bench")  # type: ignore[arg-type]
    assert all(d.error is None for d in out), [str(d.error) for d in out if d.error][:3]


def cli(home_dir: Path, action: str) -> None:
    extra = ["--unverified"] if action == "accept" else ["--why", "bench"]
    gage = Path(sys.executable).with_name("gage")
    cmd = [str(gage)] if gage.exists() else [sys.executable, "-m", "gage"]
    res = subprocess.run([*cmd, "--home", str(home_dir), action, *extra, *_ids(home_dir)], capture_output=True, check=False)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]


RUNNERS: dict[str, Callable[[Path, str], None]] = {"floor": floor, "one by one": one_by_one, "batch": batch, "cli": cli}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hybrid", action="store_true", help="every key Ed25519 + ML-DSA-65")
    ap.add_argument("--only", choices=("accept", "reject"), help="one action only")
    ap.add_argument("--dir", type=Path, help="make the homes here (default: a temporary folder)")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="gage-bench-decide-", dir=a.dir))
    try:
        template = work / "template"
        make_home(template, pending=a.pending, journal=max(1000, a.pending * 5), hybrid=a.hybrid)
        Home.open(template).journal.index.sync()  # as a home in use has it
        actions = [a.only] if a.only else ["accept", "reject"]
        times: dict[tuple[str, str], list[float]] = {(r, act): [] for r in RUNNERS for act in actions}
        for rnd in range(a.rounds):
            names = list(RUNNERS)
            names = names[rnd % len(names):] + names[: rnd % len(names)]  # rotate the order
            for act in actions:
                for name in names:
                    home_dir = work / f"r{rnd}-{act}-{name.replace(' ', '-')}"
                    shutil.copytree(template, home_dir, symlinks=True)
                    start = time.perf_counter()
                    RUNNERS[name](home_dir, act)
                    times[(name, act)].append(time.perf_counter() - start)
                    assert os.listdir(home_dir / "inbox" / "pending") == [], name
                    shutil.rmtree(home_dir)
        kind = "hybrid" if a.hybrid else "Ed25519-only"
        print(f"bulk decisions: {a.pending} pending ({kind}), {a.rounds} interleaved rounds; {os.cpu_count()} cores")
        for act in actions:
            f = statistics.median(times[("floor", act)])
            print(f"\n{act} {a.pending} ids           median      min   x floor")
            for name in RUNNERS:
                t = times[(name, act)]
                print(f"  {name:<20} {statistics.median(t):8.3f} s {min(t):8.3f} s {statistics.median(t) / f:8.1f}")
            one, bat = statistics.median(times[("one by one", act)]), statistics.median(times[("batch", act)])
            print(f"  {act}: batch / one by one {bat / one:.3f}; cli {statistics.median(times[('cli', act)]):.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
