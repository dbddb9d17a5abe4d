"""Benchmark: `gage mcp` as an agent feels it (issue 28): start-up to the answer to `initialize`,
and `list_bundles` (limit 200) on a home of N pending bundles, side by side with their floors.

- initialize: a new `gage --home H mcp` process, from spawning it to reading its answer to a
  JSON-RPC `initialize` on standard input; the floor is a new Python importing the MCP SDK's
  server (what `gage mcp` cannot do without) and printing one line.
- list_bundles: a `tools/call` of `list_bundles` with limit 200, after `initialize`, on the
  big home (bench/scale.py, warm caches: a listing ran first), asked twice per process (the
  second shows what opening the home once saves); the floor is reading and parsing every
  pending manifest in this process (bench_list.py's floor).

    python bench/bench_mcp.py                          # 10,000 pending, 5 rounds
    python bench/bench_mcp.py --pending 2000 --rounds 3 --compare /tmp/before
"""

from __future__ import annotations

import argparse
import json
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

from bench_list import LAUNCH, floor  # noqa: E402
from scale import make_home  # noqa: E402

from gage.home.cache import checks  # noqa: E402

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def _cmd(home: Path, src: str | None) -> list[str]:
    if src is None:
        return [sys.executable, "-m", "gage", "--home", str(home), "mcp"]
    return [sys.executable, "-c", LAUNCH, src, "--home", str(home), "mcp"]


def _ask(proc: subprocess.Popen[bytes], msg: dict[str, object]) -> dict[str, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"the server ended: {proc.stderr.read().decode(errors='replace')[-2000:] if proc.stderr else ''}")
        got = json.loads(line)
        if got.get("id") == msg["id"]:
            return got  # type: ignore[no-any-return]


def session(home: Path, src: str | None, lists: int) -> list[float]:
    """[seconds to the initialize answer, then each list_bundles call's seconds]."""
    start = time.perf_counter()
    proc = subprocess.Popen(_cmd(home, src), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _ask(proc, INIT)
        took = [time.perf_counter() - start]
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        for i in range(lists):
            t = time.perf_counter()
            got = _ask(proc, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                              "params": {"name": "list_bundles", "arguments": {"limit": 200}}})
            took.append(time.perf_counter() - t)
            assert "result" in got and not got["result"].get("isError"), str(got)[:500]  # type: ignore[union-attr]
        return took
    finally:
        proc.kill()
        proc.wait()


def sdk_floor() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.mcpserver, mcp.server.stdio; print('ready')"], capture_output=True, check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hybrid", action="store_true")
    ap.add_argument("--compare", metavar="DIR", help="also run the gage package in DIR/gage (a before), in the same rounds")
    ap.add_argument("--dir", type=Path)
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="gage-bench-mcp-", dir=a.dir))
    try:
        big = work / "big"
        make_home(big, pending=a.pending, journal=10 * a.pending, hybrid=a.hybrid)
        time.sleep(checks.RACY_NS / 1e9 + 0.2)
        srcs: dict[str, str | None] = {"gage": None}
        homes = {"gage": big}
        if a.compare:
            srcs["before"] = str(Path(a.compare).resolve())
            # Its own copy of the home: two versions whose caches differ in layout would each
            # find the other's file and start it again, and neither would list warm.
            homes["before"] = work / "big-before"
            shutil.copytree(big, homes["before"], symlinks=True)
            time.sleep(checks.RACY_NS / 1e9 + 0.2)
        for tag, src in srcs.items():
            subprocess.run(_cmd(homes[tag], src)[:-1] + ["list"], capture_output=True, check=True)  # warm its caches
        runs: dict[str, Callable[[], object]] = {"sdk import (floor)": sdk_floor, "manifest parse (floor)": lambda: floor(big)}
        times: dict[str, list[float]] = {}
        for _ in range(a.rounds):
            for name, fn in runs.items():
                t = time.perf_counter()
                fn()
                times.setdefault(name, []).append(time.perf_counter() - t)
            for tag, src in srcs.items():
                got = session(homes[tag], src, lists=2)
                for label, v in zip(("initialize", "list_bundles 200, first", "list_bundles 200, second"), got, strict=True):
                    times.setdefault(f"{label} [{tag}]", []).append(v)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"gage mcp: {a.pending} pending ({'hybrid' if a.hybrid else 'Ed25519-only'}), {a.rounds} rounds; {os.cpu_count()} cores")
        for k, v in times.items():
            print(f"  {k:<36} {med[k]:8.3f} s  (min {min(v):.3f})")
        for tag in srcs:
            print(f"[{tag}] initialize / sdk import: {med[f'initialize [{tag}]'] / med['sdk import (floor)']:.2f}; "
                  f"list_bundles / parse floor: first {med[f'list_bundles 200, first [{tag}]'] / med['manifest parse (floor)']:.2f}, "
                  f"second {med[f'list_bundles 200, second [{tag}]'] / med['manifest parse (floor)']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
