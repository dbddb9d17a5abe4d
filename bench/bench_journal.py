"""Benchmark: the cost of one journal operation at a short history and at a long one.

Issue 13 asks that appending to the journal, importing a bundle, accepting and rejecting
cost the same at 100,000 journal entries as at 100 (within 1.5x), and that the facts the
verdict needs for one bundle (`gage verdict ID`) do not grow with the history. This makes
two homes with `bench/scale.py` (the same few pending bundles; a journal of `--small` and of
`--big` entries), then times, in interleaved rounds (small, big, small, big, ...):

- `append`:  one `Journal.append` (the journal's own cost: tail, chain, head, index);
- `import`:  opening the home as a command does (`Home.open`, which reconciles) and
             `store.import_bundle` of a new three-file bundle;
- `accept`:  `Home.open` and `gate.accept` of a pending bundle (its payload checked);
- `reject`:  `Home.open` and `gate.reject` of a pending bundle;
- `verdict`: `Home.open`, `listing.resolve` and `verdict.compute` of one pending bundle;
- `gage verdict ID`: the real command in a fresh process (fewer rounds: start-up dominates).

It prints each operation's median at both sizes and the ratio big/small (the target is at
most 1.5). The homes are built before timing; the first operation on each home (which may
build the journal index) is not timed. Not run in CI; see bench/README.md.

    python bench/bench_journal.py                       # 100 vs 100,000 entries, 15 rounds
    python bench/bench_journal.py --big 20000 --rounds 5
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import make_home, person, write_bundle  # noqa: E402

from gage.home import listing
from gage.home.layout import Home  # noqa: E402
from gage.inbox import (
    gate,
    store,  # noqa: E402
)
from gage.inbox.opening import open_home
from gage.trust import verdict as verdict_mod  # noqa: E402

OPS = ("append", "import", "accept", "reject", "verdict")


class Bench:
    """One home, with its own pending bundles to accept and reject and sources to import."""

    def __init__(self, root: Path, entries: int, rounds: int) -> None:
        self.root = root / "home"
        pending = 2 * rounds + 4
        self.home = make_home(self.root, pending=pending, journal=max(entries, pending + 10), seed=7)
        self.ids = sorted(p.name for p in self.home.state_dir("pending").iterdir())
        rng = random.Random(entries)
        alice = person("alice", 7)  # a confirmed contact of every scale home
        self.sources: list[Path] = []
        src = root / "src"
        src.mkdir()
        for i in range(rounds + 1):
            files = {f"f{j}.txt": rng.randbytes(2048) for j in range(3)}
            m = write_bundle(src, alice, files, kind="share", subject=f"import {i}", rng=rng)
            self.sources.append(src / m.id)
        self.look = self.ids[-1]  # the bundle `verdict` reads, never decided
        self.n = 0
        # Untimed warm-up: whatever the first command after building the home does once.
        open_home(self.root).journal.append("sent", bundle="0" * 64, to=[])
        store.import_bundle(open_home(self.root), self.sources.pop())

    def op(self, name: str) -> Callable[[], None]:
        self.n += 1
        n = self.n
        if name == "append":
            home = Home(self.root)
            fake = hashlib.sha256(f"bench-{n}".encode()).hexdigest()
            return lambda: home.journal.append("sent", bundle=fake, kind="share", parent=None, thread=None, to=[])
        if name == "import":
            src = self.sources.pop()
            return lambda: store.import_bundle(open_home(self.root), src)
        if name == "accept":
            bid = self.ids.pop(0)
            return lambda: gate.accept(open_home(self.root), bid, unverified=True)
        if name == "reject":
            bid = self.ids.pop(0)
            return lambda: gate.reject(open_home(self.root), bid, why="bench")
        if name == "verdict":

            def run() -> None:
                home = open_home(self.root)
                verdict_mod.compute(home, listing.resolve(home, self.look))

            return run
        raise ValueError(name)

    def command(self) -> float:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gage", "--home", str(self.root), "verdict", self.look[:16], "--json"],
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - start


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=100, help="journal entries in the small home (default 100)")
    ap.add_argument("--big", type=int, default=100_000, help="journal entries in the big home (default 100,000)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--command-rounds", type=int, default=5, help="rounds of the real `gage verdict ID` (default 5)")
    ap.add_argument("--dir", type=Path, default=None, help="where to build the homes (default: a temporary folder)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        start = time.perf_counter()
        sizes = {"small": args.small, "big": args.big}
        benches: dict[str, Bench] = {}
        for label, entries in sizes.items():
            d = Path(tmp) / label
            d.mkdir()
            benches[label] = Bench(d, entries, args.rounds)
        print(f"built homes of {args.small} and {args.big} journal entries in {time.perf_counter() - start:.1f} s", flush=True)

        times: dict[tuple[str, str], list[float]] = {(op, s): [] for op in (*OPS, "command") for s in sizes}
        for r in range(args.rounds):
            for op in OPS:
                for label, b in benches.items() if r % 2 == 0 else reversed(benches.items()):
                    times[(op, label)].append(timed(b.op(op)))
        for r in range(args.command_rounds):
            for label, b in benches.items() if r % 2 == 0 else reversed(benches.items()):
                times[("command", label)].append(b.command())

        # Medians decide; the ratio of the minimums is printed beside them because a shared machine
        # adds noise of its own (fsync queues, other work) that the fastest run mostly escapes.
        print(f"{'operation':<18} {'small (ms)':>11} {'big (ms)':>11} {'big/small':>10} {'min ratio':>10}")
        worst = 0.0
        for op in (*OPS, "command"):
            s, b = statistics.median(times[(op, "small")]), statistics.median(times[(op, "big")])
            ratio = b / s if s else float("inf")
            low = min(times[(op, "big")]) / min(times[(op, "small")])
            worst = max(worst, ratio)
            name = "gage verdict ID" if op == "command" else op
            print(f"{name:<18} {s * 1000:>11.2f} {b * 1000:>11.2f} {ratio:>10.2f} {low:>10.2f}")
        print(f"worst big/small: {worst:.2f} (target: at most 1.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
