"""Benchmark: the interface at scale, headless (Textual's run_test), a big home beside a small one.

For each size (10,000 pending bundles and 100,000 journal entries by default, beside a
small home of 100 and 1,000 made the same way by bench/scale.py) it measures, in rounds
interleaved between the sizes so both see the same machine load:

- first rows: from starting the app until the inbox shows its first rows;
- all verdicts: until every row's verdict is filled in;
- new bundle: a bundle imported by another process (`store.import_bundle`, as `gage import`
  does) until its row is on screen with its verdict, with the live watcher on;
- tick: one run of the periodic age refresh with every row loaded;
- restart rows, restart fill: the app closed and started again on the unchanged home, with
  the check cache (gage.home.cache.checks, `cache/checks.json`) the first app saved: first rows,
  and until every verdict is filled in.

It prints the median of each, for each size, and the ratio big/small. Each round starts a
fresh app on the same home (page cache warm) with the check cache deleted, as on a first
run, then the restart; each app starts with the last one's garbage collected, as a new
process would. The journal index is built once after making the home, as every
append keeps it for a home gage has been using (bench/scale.py writes the journal
directly). Not run in CI; see bench/README.md.

    python bench/bench_tui.py                          # 10,000 vs 100 pending, 3 rounds
    python bench/bench_tui.py --pending 2000 --small 50 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_list import floor  # noqa: E402
from scale import make_home, person, write_bundle  # noqa: E402

from gage.home.cache import checks
from gage.inbox import store  # noqa: E402
from gage.inbox.opening import open_home
from gage.tui.app import GageApp  # noqa: E402

SIZE = (120, 40)
LIMIT = 600.0  # seconds: a bench that waits longer than this reports failure instead of hanging


async def _until(check: Callable[[], bool], what: str) -> float:
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > LIMIT:
            raise SystemExit(f"gave up waiting for {what}")
        await asyncio.sleep(0.005)
    return time.perf_counter() - start


class AllChecked:
    """Whether every row has its verdict, polled every few ms without scanning 10,000 rows
    each time (the scan took the GIL from the worker it waits for): verdicts fill in roughly
    in display order, so it remembers the first row found still without one."""

    def __init__(self, app: GageApp) -> None:
        self.app = app
        self.rows: object = None
        self.ids: list[str] = []
        self.pos = 0

    def __call__(self) -> bool:
        inbox = self.app.inbox
        if inbox.loading:
            return False
        rows = inbox.rows
        if rows is not self.rows or len(self.ids) != len(rows):
            self.rows, self.ids, self.pos = rows, list(rows), 0
        while self.pos < len(self.ids):
            row = rows.get(self.ids[self.pos])
            if row is not None and row.verdict is None:
                return False
            self.pos += 1
        return all(r.verdict is not None for r in rows.values())  # once, at the end: nothing was missed


async def one_round(root: Path, wire: Path, n: int) -> dict[str, float]:
    home = open_home(root)
    (home.cache / checks.FILE_NAME).unlink(missing_ok=True)  # a first run: nothing remembered
    app = GageApp(home, watch=True)
    out: dict[str, float] = {}
    gc.collect()  # as a new process starts: nothing of the last round's app left to collect
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: app.inbox.loads >= 1, "the first rows")
        out["first rows"] = time.perf_counter() - start
        await _until(AllChecked(app), "the verdicts")
        out["all verdicts"] = time.perf_counter() - start
        # A live watcher: wait until it reports a probe, so the timing starts from a running watcher.
        seen = app.changes_seen
        probe = home.state_dir("pending") / "probe"
        while app.changes_seen == seen:
            probe.mkdir()
            probe.rmdir()
            await asyncio.sleep(0.1)
        await _until(lambda: not app.inbox.loading, "the probe's sync")
        sender = person("alice", 1)  # a confirmed contact (bench/scale.py), so no pending limit applies
        import random

        m = write_bundle(wire, sender, {"new.txt": f"new bundle {time.time()}\n".encode()}, kind="share", subject="new", rng=random.Random(n * 7919 + len(app.inbox.rows)))
        t0 = time.perf_counter()
        store.import_bundle(home, wire / m.id)
        row = lambda: app.inbox.rows.get(m.id)  # noqa: E731
        await _until(lambda: row() is not None and row().verdict is not None, "the new bundle")  # type: ignore[union-attr]
        out["new bundle"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        app.inbox.refresh_ages()
        out["tick"] = time.perf_counter() - t0
        await pilot.pause()
    out.update(await restart(root))
    return out


async def restart(root: Path) -> dict[str, float]:
    """The app started again on the same home, with the check cache the last one saved."""
    app = GageApp(open_home(root), watch=False)
    out: dict[str, float] = {}
    gc.collect()
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: app.inbox.loads >= 1, "the first rows")
        out["restart rows"] = time.perf_counter() - start
        await _until(AllChecked(app), "the verdicts")
        out["restart fill"] = time.perf_counter() - start
        await pilot.pause()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--journal", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=100, help="pending bundles in the small home (journal 10x)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        sizes = {"small": (args.small, args.small * 10), "big": (args.pending, args.journal)}
        homes: dict[str, Path] = {}
        for label, (n, j) in sizes.items():
            print(f"making the {label} home: {n} pending, {j} journal entries ...", flush=True)
            homes[label] = Path(tmp) / label
            make_home(homes[label], pending=n, journal=j)
            open_home(homes[label]).journal.index.sync()  # as a home's appends keep it
            (Path(tmp) / f"wire-{label}").mkdir()
        results: dict[str, dict[str, list[float]]] = {k: {} for k in sizes}
        floors: list[float] = []
        for r in range(args.rounds):
            # The floor side by side, each round: reading and parsing every pending manifest of the big home.
            t = time.perf_counter()
            floor(homes["big"])
            floors.append(time.perf_counter() - t)
            for label in sizes:
                got = asyncio.run(one_round(homes[label], Path(tmp) / f"wire-{label}", r))
                for k, v in got.items():
                    results[label].setdefault(k, []).append(v)
                print(f"round {r + 1} {label}: " + ", ".join(f"{k} {v:.3f}s" for k, v in got.items()), flush=True)
        print()
        print(f"{'':14}{'small (' + str(args.small) + ')':>16}{'big (' + str(args.pending) + ')':>16}{'big/small':>11}")
        for k in results["big"]:
            s = statistics.median(results["small"][k])
            b = statistics.median(results["big"][k])
            print(f"{k:14}{s:15.3f}s{b:15.3f}s{b / s if s else float('inf'):10.1f}x")
        f = statistics.median(floors)
        print(f"floor (read + parse {args.pending} manifests) {f:.3f}s; big / floor: "
              + ", ".join(f"{k} {statistics.median(v) / f:.2f}" for k, v in results["big"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
