"""Benchmark: one inbox reload (the interface's row load) with and without the display cache.

The live inbox recomputes every row whenever anything under inbox/ changes. Without the
cache every payload byte of every pending bundle is hashed again on each refresh; with it
(gage.tui.rows.CheckCache) an unchanged bundle costs a directory walk and the verdict's
bookkeeping. This builds a home with N pending bundles, then times `load_rows` both ways
in interleaved rounds on the same home (same machine load, same page cache), checks that
both give the same verdicts, and prints the medians and the ratio cached/uncached.
Not run in CI; see bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nacl.signing

from gage import bundle as bundle_mod
from gage.format.keys import Identity
from gage.format.words import derive
from gage.home.layout import Home
from gage.trust import ceremony
from gage.tui.rows import CheckCache, load_rows


def make_inbox(root: Path, count: int, size: int) -> Home:
    """A home that has confirmed `alice`, with `count` of her bundles pending, `size` bytes each."""
    home = Home.init(root / "home", "me")
    alice = Identity(name="alice", signing_key=nacl.signing.SigningKey(b"\x61" * 32))
    words = " ".join(" ".join(p) for p in derive(alice.key))
    assert ceremony.confirm(home, "alice", alice.key, words).confirmed
    src = root / "src"
    src.mkdir()
    pending = home.state_dir("pending")
    for i in range(count):
        f = src / f"file-{i}.bin"
        f.write_bytes(os.urandom(min(size, 4096)) * max(1, size // 4096))
        work, manifest = bundle_mod.build(alice, [(f.name, f)], staging=home.staging, kind="share", subject=f"bundle {i}")
        work.rename(pending / manifest.id)
        f.unlink()
    return home


def timed(home: Home, cache: CheckCache | None) -> tuple[float, dict[str, str]]:
    start = time.perf_counter()
    rows = load_rows(home, "pending", cache=cache)
    took = time.perf_counter() - start
    return took, {r.id: r.verdict.verdict for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundles", type=int, default=200, help="pending bundles (default 200)")
    ap.add_argument("--size-kib", type=int, default=256, help="payload size of each bundle in KiB (default 256)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where to build the home (default: a temporary folder)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"building a home with {args.bundles} pending bundles of {args.size_kib} KiB ...", flush=True)
        home = make_inbox(Path(tmp), args.bundles, args.size_kib * 1024)
        cache = CheckCache()
        _, first = timed(home, cache)  # fills the cache, like the interface's first load
        plain: list[float] = []
        cached: list[float] = []
        for _ in range(args.rounds):
            t, verdicts = timed(home, None)
            plain.append(t)
            assert verdicts == first, "the uncached reload disagrees"
            t, verdicts = timed(home, cache)
            cached.append(t)
            assert verdicts == first, "the cached reload disagrees"
        mp, mc = statistics.median(plain), statistics.median(cached)
        mib = args.bundles * args.size_kib / 1024
        print(f"{'runner':<12}{'median s':>10}{'min s':>10}")
        print(f"{'uncached':<12}{mp:>10.4f}{min(plain):>10.4f}   ({mib / mp:.0f} MiB/s hashed)")
        print(f"{'cached':<12}{mc:>10.4f}{min(cached):>10.4f}   (hits {cache.hits}, misses {cache.misses})")
        print(f"cached/uncached {mc / mp:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
