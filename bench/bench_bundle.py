"""Benchmark: `gage bundle` against copy-and-hash, on many large files and on many small ones.

Making a bundle has to read every source byte, hash it, write it, and make the copy durable
before it is renamed into place. The fair floor is a plain program doing exactly that and
nothing else, so this prints gage beside:

- `copy+hash, fsync each`: for each file, read it in 1 MiB chunks, SHA-256 them, write them
  to a new file below a fresh folder, fsync that file; then fsync every folder made and
  rename the folder into place (gage's durability: one fsync per file plus the folders).
- `copy+hash, one syncfs`: the same without the per-file fsync, one `syncfs(2)` at the end
  (Linux only; skipped elsewhere). Cheaper for thousands of small files; shown for context.
- `sha256 only`: hashing the sources in one thread, no copy (the hashing floor).

gage runs in the same process (`gage.inbox.send.create`, what `gage bundle` calls, into a real
home: sources collected, copied, hashed, fsynced, signed, renamed into the outbox, journaled),
and, with `--cli`, as the `gage bundle` command (interpreter start-up included). Rounds are
interleaved (and rotated) so every runner sees the same machine load and page cache; each output is
removed between rounds (not timed). The ratio is gage / `copy+hash, fsync each`.

    python bench/bench_bundle.py                      # small defaults (96 MiB in 33 files; 2,000 small files)
    python bench/bench_bundle.py --big-mib 768 --big-files 257 --small-files 10000 --rounds 5 --cli

Needs free space for the sources and two copies (about 3x --big-mib); removes it all.
"""

from __future__ import annotations

import argparse
import ctypes
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

from gage.home.layout import Home
from gage.inbox import send

CHUNK = 1 << 20


def make_big(root: Path, total_mib: int, nfiles: int) -> Path:
    """`nfiles` files totalling `total_mib` MiB (one small README and equal-sized data files)."""
    src = root / "big"
    (src / "data").mkdir(parents=True)
    (src / "README.txt").write_bytes(b"a dataset for the bundle benchmark\n")
    each = (total_mib << 20) // max(nfiles - 1, 1)
    block = os.urandom(CHUNK)
    for i in range(nfiles - 1):
        with open(src / "data" / f"part-{i:05d}.bin", "wb") as f:
            f.write(i.to_bytes(8, "big"))  # no two files alike
            left = each - 8
            while left > 0:
                n = min(left, CHUNK)
                f.write(block[:n])
                left -= n
    return src


def make_small(root: Path, nfiles: int, size: int) -> Path:
    """`nfiles` files of `size` bytes with paths like a source tree (about 40 bytes each)."""
    src = root / "small"
    for i in range(nfiles):
        d = src / f"module_{i // 1000:02d}" / f"package_{i // 100 % 10:02d}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"source_file_{i:05d}.txt").write_bytes(i.to_bytes(8, "big") + os.urandom(max(size - 8, 0)))
    return src


def source_files(src: Path) -> list[tuple[str, Path]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            out.append((str(full.relative_to(src.parent)), full))
    return out


def hash_only(files: list[tuple[str, Path]]) -> None:
    for _rel, path in files:
        h = hashlib.sha256()
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
        h.hexdigest()


def _syncfs() -> Callable[[int], int] | None:
    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    return fn  # type: ignore[no-any-return]


def copy_and_hash(files: list[tuple[str, Path]], out: Path, *, fsync_each: bool, syncfs: Callable[[int], int] | None) -> None:
    """The floor: copy and hash every file, make it durable, rename the folder into place."""
    work = out.with_name(out.name + ".tmp")
    work.mkdir()
    made = {work}
    digests = []
    for rel, path in files:
        dst = work / rel
        if dst.parent not in made:
            dst.parent.mkdir(parents=True, exist_ok=True)
            made.add(dst.parent)
        h = hashlib.sha256()
        fd = os.open(path, os.O_RDONLY)
        try:
            with open(dst, "xb", buffering=0) as w:
                while chunk := os.read(fd, CHUNK):
                    h.update(chunk)
                    w.write(chunk)
                if fsync_each:
                    os.fsync(w.fileno())
        finally:
            os.close(fd)
        digests.append(h.hexdigest())
    if fsync_each:
        for d in sorted(made, key=lambda p: len(p.parts), reverse=True):
            dfd = os.open(d, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
    elif syncfs is not None:
        dfd = os.open(work, os.O_RDONLY)
        syncfs(dfd)
        os.close(dfd)
    os.rename(work, out)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_set(label: str, src: Path, work: Path, rounds: int, cli: bool) -> dict[str, float]:
    files = source_files(src)
    total = sum(p.stat().st_size for _r, p in files)
    home = Home.init(work / f"home-{label}", "bench")
    outs = work / f"out-{label}"
    outs.mkdir()
    syncfs = _syncfs()
    gage_bin = Path(sys.executable).with_name("gage")

    def clean() -> None:
        for p in list(outs.iterdir()) + list(home.state_dir("outbox").iterdir()):
            shutil.rmtree(p)

    runners: dict[str, Callable[[], object]] = {
        "sha256 only": lambda: hash_only(files),
        "copy+hash, fsync each": lambda: copy_and_hash(files, outs / "c", fsync_each=True, syncfs=None),
    }
    if syncfs is not None:
        runners["copy+hash, one syncfs"] = lambda: copy_and_hash(files, outs / "s", fsync_each=False, syncfs=syncfs)
    runners["gage bundle (in process)"] = lambda: send.create(home, [src], kind="share")
    if cli and gage_bin.exists():
        runners["gage bundle (command)"] = lambda: subprocess.run(
            [str(gage_bin), "--home", str(home.root), "bundle", "--kind", "share", str(src)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    times: dict[str, list[float]] = {name: [] for name in runners}
    for fn in runners.values():  # warm the page cache and the imports once
        fn()
        clean()
    names = list(runners)
    for r in range(rounds):
        # Interleaved, and rotated each round, so no runner always follows the same one
        # (a runner's writeback can land in the next one's time).
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(timed(runners[name]))
            clean()
    base = statistics.median(times["copy+hash, fsync each"])
    print(f"\n{label}: {len(files)} files, {total / (1 << 20):.1f} MiB, {rounds} interleaved rounds")
    print(f"{'runner':<28} {'median s':>9} {'min s':>8} {'MiB/s':>8} {'ratio':>7}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<28} {med:9.3f} {min(ts):8.3f} {total / (1 << 20) / med:8.0f} {med / base:7.2f}")
    ratio = statistics.median(times["gage bundle (in process)"]) / base
    print(f"{label}: gage/copy-and-hash = {ratio:.2f}")
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--big-mib", type=int, default=96, help="total size of the large-file set (default 96)")
    parser.add_argument("--big-files", type=int, default=33, help="files in the large-file set (default 33)")
    parser.add_argument("--small-files", type=int, default=2000, help="files in the small-file set (default 2000)")
    parser.add_argument("--small-kib", type=int, default=4, help="size of each small file (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--cli", action="store_true", help="also time the `gage bundle` command")
    parser.add_argument("--only", choices=("big", "small"), help="run one set only")
    parser.add_argument("--dir", help="where to work (default: a temporary folder)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gage-bench-bundle-", dir=args.dir))
    try:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, working in {work}", flush=True)
        if args.only in (None, "big"):
            run_set("big", make_big(work, args.big_mib, args.big_files), work, args.rounds, args.cli)
        if args.only in (None, "small"):
            run_set("small", make_small(work, args.small_files, args.small_kib << 10), work, args.rounds, args.cli)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
