"""Benchmark: checking a bundle (`gage verify`) against the one-thread hashing floor.

Verification must cost about what hashing the bytes costs, and no more: it streams each
file once through SHA-256 (several files at once on more than one core). Three sets, each
a real signed bundle made with gage's own builder:

- `many`: many large files (768 MiB in 257 files at full size);
- `small`: many small files (10,000 of 4 KiB at full size);
- `one`: one large file (2 GiB at full size).

Runners, interleaved round by round so all see the same machine load and page cache:

- `sha256, one thread` (the floor): in this process, each payload file opened by path and
  read in 1 MiB chunks through hashlib.sha256, one after another. No signature, no walk.
- `gage check`: `gage.bundle.checking(root)` in this process, what `gage verify` runs once the
  interpreter is up: manifest parse, signature, the walk, every byte hashed.
- `gage verify (command)` with `--cli`: the command, interpreter start-up included.
- `sha256sum`, `minisign -V`, `signify -C`: when installed (`shutil.which`), else "not installed".
  minisign checks one signed file per call (run once per payload file); signify checks a
  signed list of SHA-256 sums in one call.

The ratio is each runner's median over the floor's. Not run in CI; see bench/README.md.

    python bench/bench_verify.py                              # small defaults
    python bench/bench_verify.py --many-mib 768 --many-files 257 --small-files 10000 --one-mib 2048 --cli
    python bench/bench_verify.py --only one --one-mib 2048 --sparse   # CPU only, no disk for the file
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
from gage.format.keys import Identity

CHUNK = 1 << 20


def _write(path: Path, size: int, block: bytes, *, sparse: bool, tag: int) -> None:
    with open(path, "wb") as f:
        if sparse:
            f.truncate(size)
            return
        f.write(tag.to_bytes(8, "big")[: size])
        left = size - min(size, 8)
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n


def make_bundle(workdir: Path, name: str, sizes: list[int], *, sparse: bool = False) -> tuple[Path, list[Path]]:
    """Source files of `sizes` bytes (paths like a source tree), bundled by gage's builder."""
    src = workdir / f"src-{name}"
    block = os.urandom(CHUNK)
    files: list[tuple[str, Path]] = []
    for i, size in enumerate(sizes):
        rel = f"{name}/part_{i // 1000:02d}/group_{i // 100 % 10:02d}/file_{i:05d}.bin" if len(sizes) > 1 else f"{name}.bin"
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, size, block, sparse=sparse, tag=i)
        files.append((rel, path))
    ident = Identity(name="bench", signing_key=nacl.signing.SigningKey(b"\x5a" * 32))
    work, manifest = bundle_mod.build(ident, files, staging=workdir / "staging", kind="share")
    root = workdir / manifest.id
    work.rename(root)
    shutil.rmtree(src)
    return root, [root / "payload" / rel for rel, _ in files]


def floor(paths: list[Path]) -> None:
    for path in paths:
        h = hashlib.sha256()
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
        h.hexdigest()


def gage_check(root: Path) -> None:
    result = bundle_mod.check(root, expect_name=True)
    if not result.ok:
        raise SystemExit(f"the bench bundle does not verify: {result.problems[:3]}")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _quiet(cmd: list[str], cwd: Path | None = None) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)


def other_tools(root: Path, paths: list[Path], keys: Path) -> dict[str, Callable[[], object]]:
    """sha256sum, minisign -V and signify -C on the same payload, when installed."""
    out: dict[str, Callable[[], object]] = {}
    payload = root / "payload"
    rels = [str(p.relative_to(payload)) for p in paths]
    if shutil.which("sha256sum"):
        sums = keys / f"{root.name}.sha256"
        with open(sums, "w") as f:
            subprocess.run(["sha256sum", *rels], check=True, stdout=f, cwd=payload)
        out["sha256sum -c"] = lambda: _quiet(["sha256sum", "--quiet", "-c", str(sums)], cwd=payload)
    minisign = shutil.which("minisign")
    if minisign:
        pub, sec = keys / "m.pub", keys / "m.key"
        if not pub.exists():
            _quiet([minisign, "-G", "-W", "-p", str(pub), "-s", str(sec)])
        for p in paths:
            _quiet([minisign, "-S", "-s", str(sec), "-m", str(p), "-x", str(keys / (p.name + ".minisig"))])
        # `mpub` bound now: `pub` names signify's key below, and a closure would read that one.
        out["minisign -V"] = lambda mpub=pub: [
            _quiet([minisign, "-V", "-q", "-p", str(mpub), "-m", str(p), "-x", str(keys / (p.name + ".minisig"))]) for p in paths
        ]
    signify = shutil.which("signify") or shutil.which("signify-openbsd")
    if signify:
        pub, sec = keys / "s.pub", keys / "s.sec"
        if not pub.exists():
            _quiet([signify, "-G", "-n", "-p", str(pub), "-s", str(sec)])
        lst = keys / f"{root.name}.list"
        with open(lst, "w") as f:
            subprocess.run(["sha256sum", "--tag", *rels], check=True, stdout=f, cwd=payload)
        _quiet([signify, "-S", "-e", "-s", str(sec), "-m", str(lst), "-x", str(lst) + ".sig"])
        out["signify -C"] = lambda: _quiet([signify, "-C", "-p", str(pub), "-x", str(lst) + ".sig"], cwd=payload)
    return out


def run_set(label: str, root: Path, paths: list[Path], rounds: int, cli: bool, keys: Path) -> float:
    total = sum(p.stat().st_size for p in paths)
    runners: dict[str, Callable[[], object]] = {
        "sha256, one thread": lambda: floor(paths),
        "gage check": lambda: gage_check(root),
    }
    gage_bin = Path(sys.executable).with_name("gage")
    if cli and gage_bin.exists():
        runners["gage verify (command)"] = lambda: _quiet([str(gage_bin), "verify", str(root)])
    runners.update(other_tools(root, paths, keys))
    for fn in runners.values():  # warm the page cache and the imports once
        fn()
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # interleaved, rotated each round
            times[name].append(timed(runners[name]))
    base = statistics.median(times["sha256, one thread"])
    print(f"\n{label}: {len(paths)} files, {total / (1 << 20):.1f} MiB, {rounds} interleaved rounds")
    print(f"{'runner':<24} {'median s':>9} {'min s':>8} {'MiB/s':>8} {'ratio':>7}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<24} {med:9.3f} {min(ts):8.3f} {total / (1 << 20) / med:8.0f} {med / base:7.2f}")
    ratio = statistics.median(times["gage check"]) / base
    print(f"{label}: gage/floor = {ratio:.2f}")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--many-mib", type=int, default=96, help="total of the many-large-files set (default 96)")
    parser.add_argument("--many-files", type=int, default=33, help="files in that set (default 33)")
    parser.add_argument("--small-files", type=int, default=2000, help="files of the small-files set (default 2000)")
    parser.add_argument("--small-kib", type=int, default=4, help="size of each small file (default 4)")
    parser.add_argument("--one-mib", type=int, default=256, help="size of the one-file set (default 256)")
    parser.add_argument("--size-mib", type=int, help="the same as --one-mib (older name)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--sparse", action="store_true", help="sparse files: hashing cost without disk reads")
    parser.add_argument("--cli", action="store_true", help="also time the `gage verify` command")
    parser.add_argument("--only", choices=("many", "small", "one"), action="append", help="run only these sets")
    parser.add_argument("--dir", help="where to make the bundles (default: a temporary folder)")
    args = parser.parse_args(argv)
    one_mib = args.size_mib if args.size_mib is not None else args.one_mib
    sets = args.only or ["many", "small", "one"]

    workdir = Path(tempfile.mkdtemp(prefix="gage-bench-verify-", dir=args.dir))
    keys = workdir / "keys"
    keys.mkdir()
    try:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, working in {workdir}", flush=True)
        for tool in ("sha256sum", "minisign", "signify"):
            if not (shutil.which(tool) or (tool == "signify" and shutil.which("signify-openbsd"))):
                print(f"{tool}: not installed")
        for label in sets:
            if label == "many":
                n = max(args.many_files, 1)
                sizes = [(args.many_mib << 20) // n] * n
            elif label == "small":
                sizes = [args.small_kib << 10] * args.small_files
            else:
                sizes = [one_mib << 20]
            root, paths = make_bundle(workdir, label, sizes, sparse=args.sparse)
            try:
                run_set(label, root, paths, args.rounds, args.cli, keys)
            finally:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
