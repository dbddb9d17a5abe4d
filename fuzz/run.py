#!/usr/bin/env python3
"""Fuzz gage's readers for as long as asked: coverage-guided with atheris when it is installed
(`pip install -e '.[fuzz]'`, Linux), else with hypothesis (random and mutated inputs).

    python fuzz/run.py                          every target, 60 s in all, a random seed
    python fuzz/run.py --seconds 3600 --target manifest --seed 7
    python fuzz/run.py --engine hypothesis      without atheris even when it is there
    python fuzz/run.py --reproduce fuzz/crashes/manifest-<sha>.bin

Targets (fuzz/fuzz_targets.py): strict_json, manifest, path, key_file, journal, verdict, envelope,
directory_record. Every run
prints its seed, and every failure the input (saved under fuzz/crashes/) and the command that
replays it. Exit 0 when nothing failed, 1 when something did, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CRASHES = HERE / "crashes"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))


def _names() -> list[str]:
    import fuzz_targets

    return list(fuzz_targets.TARGETS)


def _save(name: str, data: bytes) -> Path:
    CRASHES.mkdir(exist_ok=True)
    p = CRASHES / f"{name}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
    p.write_bytes(data)
    return p


def _have_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


# --- hypothesis: batches of examples, each batch with its own printed seed --------------------


def _hypothesis(name: str, seconds: float, seed: int, batches: int | None) -> bool:
    import fuzz_targets
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    target = fuzz_targets.TARGETS[name]
    start = fuzz_targets.seeds(name) or [b""]

    @st.composite
    def mutated(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(st.sampled_from(start)))
        for _ in range(draw(st.integers(1, 4))):
            op = draw(st.integers(0, 3))
            i = draw(st.integers(0, len(data)))
            if op == 0 and i < len(data):
                data[i] = draw(st.integers(0, 255))
            elif op == 1:
                data[i:i] = draw(st.binary(min_size=1, max_size=8))
            elif op == 2:
                del data[i : i + draw(st.integers(1, 16))]
            else:
                other = draw(st.sampled_from(start))
                j = draw(st.integers(0, len(other)))
                data[i:] = other[j:]
        return bytes(data)

    failing: list[bytes] = []

    def once(data: bytes) -> None:
        try:
            target(data)
        except BaseException:
            failing.append(data)
            raise

    deadline = time.monotonic() + seconds
    n = 0
    while (batches is None and time.monotonic() < deadline) or (batches is not None and n < batches):
        batch_seed = seed + n
        n += 1
        test = given(st.binary(max_size=512) | mutated())(once)
        test = settings(
            max_examples=200,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        )(test)
        test = hseed(batch_seed)(test)
        failing.clear()
        try:
            test()
        except Exception:  # noqa: BLE001 - any failure is a finding, reported with its replay
            traceback.print_exc()
            saved = _save(name, failing[-1]) if failing else None
            print(f"FAILED {name}: batch seed {batch_seed}", flush=True)
            print(f"  replay: python fuzz/run.py --engine hypothesis --target {name} --seed {batch_seed} --batches 1", flush=True)
            if saved:
                print(f"  input:  python fuzz/run.py --reproduce {saved.relative_to(ROOT)}", flush=True)
            return False
    print(f"ok {name}: hypothesis, {n} batches of 200 from seed {seed}", flush=True)
    return True


# --- atheris: one process per target --------------------------------------------------------


def _atheris_child(name: str, seconds: float, seed: int) -> None:
    import tempfile

    import atheris

    with atheris.instrument_imports(include=["gage", "fuzz_targets"]):
        import fuzz_targets
    target = fuzz_targets.TARGETS[name]
    corpus = Path(tempfile.mkdtemp(prefix=f"gage-fuzz-{name}-"))
    for i, s in enumerate(fuzz_targets.seeds(name)):
        (corpus / f"seed-{i}").write_bytes(s)
    CRASHES.mkdir(exist_ok=True)
    args = [
        sys.argv[0],
        f"-max_total_time={max(1, int(seconds))}",
        f"-seed={seed}",
        "-timeout=20",
        "-rss_limit_mb=4096",
        "-max_len=4096",
        f"-artifact_prefix={CRASHES}/{name}-",
        "-print_final_stats=0",
        str(corpus),
    ]
    atheris.Setup(args, target)
    atheris.Fuzz()


def _atheris(name: str, seconds: float, seed: int) -> bool:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--seconds", str(seconds), "--seed", str(seed)]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    out = proc.stdout
    if proc.returncode == 0:
        print(f"ok {name}: atheris for {seconds:g} s, seed {seed}", flush=True)
        return True
    print(out[-6000:], flush=True)
    crash = [ln.split("written to ")[-1].split(";")[0].strip() for ln in out.splitlines() if "Test unit written to" in ln]
    print(f"FAILED {name}: atheris, seed {seed} (exit {proc.returncode})", flush=True)
    print(f"  replay the run: python fuzz/run.py --engine atheris --target {name} --seed {seed} --seconds {seconds:g}", flush=True)
    for c in crash:
        print(f"  input:  python fuzz/run.py --reproduce {c}", flush=True)
    return False


def _reproduce(path: Path) -> int:
    import fuzz_targets

    name = next((n for n in fuzz_targets.TARGETS if path.name.startswith(f"{n}-")), None)
    if name is None:
        print(f"{path}: the file name does not start with a target name ({', '.join(fuzz_targets.TARGETS)})", file=sys.stderr)
        return 2
    fuzz_targets.TARGETS[name](path.read_bytes())
    print(f"{path}: {name} passes on this input now")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", action="append", help="a target (repeat for more; default: all)")
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("GAGE_FUZZ_SECONDS", 60)), help="time for all targets together (default 60, or GAGE_FUZZ_SECONDS)")
    ap.add_argument("--seed", type=int, default=None, help="the seed (default: random, printed)")
    ap.add_argument("--engine", choices=["auto", "atheris", "hypothesis"], default="auto")
    ap.add_argument("--batches", type=int, default=None, help="hypothesis: run exactly this many batches, ignoring --seconds")
    ap.add_argument("--reproduce", type=Path, help="run the target a saved input names (fuzz/crashes/<target>-*.bin)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.reproduce:
        return _reproduce(args.reproduce)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    if args.child:
        _atheris_child(args.child, args.seconds, seed)
        return 0
    names = args.target or _names()
    unknown = [n for n in names if n not in _names()]
    if unknown:
        ap.error(f"unknown target {unknown[0]!r}; targets: {', '.join(_names())}")
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if _have_atheris() else "hypothesis"
    elif engine == "atheris" and not _have_atheris():
        ap.error("atheris is not installed: pip install -e '.[fuzz]' (Linux), or use --engine hypothesis")
    each = args.seconds / len(names)
    print(f"fuzzing {', '.join(names)} with {engine}, seed {seed}, {each:g} s each", flush=True)
    ok = True
    for name in names:
        if engine == "atheris":
            ok = _atheris(name, each, seed) and ok
        else:
            ok = _hypothesis(name, each, seed, args.batches) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
