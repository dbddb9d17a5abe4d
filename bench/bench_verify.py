"""Benchmark: `bundle.check` on a bundle holding one large file, against plain SHA-256.

Verification must cost about what hashing the bytes costs, and no more: it streams each
file once through SHA-256. This prints the time of gage's check beside a baseline run in
the same process on the same file (hashlib.sha256 over 1 MiB reads) and, if present,
`sha256sum`, interleaved round by round so both see the same machine load and page
cache, then the ratio gage/baseline. Not run in CI; see bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import nacl.signing

from gage import bundle as bundle_mod
from gage.keys import Identity

CHUNK = 1 << 20


def make_bundle(workdir: Path, size: int, sparse: bool) -> tuple[Path, Path]:
    """Write a source file of `size` bytes and bundle it with gage's own builder."""
    src = workdir / "big.bin"
    with open(src, "wb") as f:
        if sparse:
            f.truncate(size)
        else:
            block = os.urandom(CHUNK)
            for _ in range(size // CHUNK):
                f.write(block)
            f.write(block[: size % CHUNK])
    ident = Identity(name="bench", signing_key=nacl.signing.SigningKey(b"\x5a" * 32))
    work, manifest = bundle_mod.build(ident, [("big.bin", src)], staging=workdir / "staging", kind="share")
    root = workdir / manifest.id
    work.rename(root)
    src.unlink()
    return root, root / "payload" / "big.bin"


def baseline(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def gage_check(root: Path) -> None:
    result = bundle_mod.check(root, expect_name=True)
    if not result.ok:
        raise SystemExit(f"the bench bundle does not verify: {result.problems}")


def sha256sum(path: Path) -> None:
    subprocess.run(["sha256sum", str(path)], check=True, stdout=subprocess.DEVNULL)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=256, help="size of the payload file (default 256)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--sparse", action="store_true", help="use a sparse file (measures CPU, not the page cache)")
    parser.add_argument("--dir", help="where to make the bundle (default: a temporary folder)")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="gage-bench-", dir=args.dir))
    try:
        size = args.size_mib << 20
        print(f"making a bundle with one {args.size_mib} MiB file in {workdir} ...", flush=True)
        root, payload = make_bundle(workdir, size, args.sparse)
        runners: dict[str, Callable[[], object]] = {
            "hashlib (1 MiB reads)": lambda: baseline(payload),
            "gage bundle.check": lambda: gage_check(root),
        }
        if shutil.which("sha256sum"):
            runners["sha256sum"] = lambda: sha256sum(payload)
        for fn in runners.values():  # warm the page cache and imports once
            fn()
        times: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(args.rounds):
            for name, fn in runners.items():
                times[name].append(timed(fn))
        base = statistics.median(times["hashlib (1 MiB reads)"])
        print(f"\n{'runner':<24} {'median s':>9} {'min s':>8} {'MiB/s':>8} {'ratio':>7}")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"{name:<24} {med:9.3f} {min(ts):8.3f} {args.size_mib / med:8.0f} {med / base:7.2f}")
        ratio = statistics.median(times["gage bundle.check"]) / base
        print(f"\ngage/baseline = {ratio:.2f} (median of {args.rounds} interleaved rounds; python {sys.version.split()[0]})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
