"""Benchmark: hybrid (Ed25519 + ML-DSA-65) against Ed25519-only: verify, `gage list` at 10,000 pending, and sizes.

Two homes are made side by side with the same bundles (same payloads, same mix of confirmed
contacts and strangers, bench/scale.py's writer): in one every sender's key is hybrid, in the
other Ed25519-only. Then, with rounds interleaved (each runner once per round, so both see the
same load and page cache):

  sig verify       one manifest signature checked (gage.format.keys.verify_manifest_signature), x 1000
  check all        gage.bundle.check of every pending bundle, in this process: what the first
                   `gage list` pays (and `gage verify`, bundle by bundle)
  list cli first   `python -m gage list` with the check cache emptied first: verifies everything
  list cli again   `python -m gage list` a second time: the check cache keeps it from verifying
                   again, so hybrid should cost about what classical does

Each prints medians and minimums, and the ratio hybrid/classical. Then the sizes, before
(Ed25519-only) and after (hybrid): a bundle of one small file (manifest.json, manifest.sig,
the payload), a key file, and the same bundle as an A2A artifact (`gage a2a export`).

    python bench/bench_hybrid.py                       # 10,000 pending, 3 rounds
    python bench/bench_hybrid.py --pending 1000 --rounds 5

Not run in CI; see bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import nacl.signing

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import JournalWriter, confirm, write_bundle  # noqa: E402

from gage import bundle as bundle_mod  # noqa: E402
from gage.carriers.a2a import export as a2a_export  # noqa: E402
from gage.format import strictjson  # noqa: E402
from gage.format.keys import Identity, key_text, parse_key, verify_manifest_signature  # noqa: E402
from gage.format.keys.file import KeyFile  # noqa: E402
from gage.format.signing import SecretKey  # noqa: E402
from gage.home.cache import checks  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.inbox import send  # noqa: E402


def person(name: str, *, hybrid: bool) -> Identity:
    ed = hashlib.sha256(f"bench hybrid:{name}:ed".encode()).digest()
    pq = hashlib.sha256(f"bench hybrid:{name}:pq".encode()).digest() if hybrid else None
    return Identity.from_secret(name, SecretKey(nacl.signing.SigningKey(ed), pq))


def make_home(root: Path, pending: int, *, hybrid: bool) -> Home:
    rng = random.Random(7)  # the same payloads and nonces in both homes
    home = Home.init(root, "me", hybrid=hybrid)
    contacts = [person(n, hybrid=hybrid) for n in ("alice", "bob", "carol", "dave")]
    strangers = [person(f"stranger{i}", hybrid=hybrid) for i in range(8)]
    for c in contacts:
        confirm(home, c)
    jw = JournalWriter(home)
    try:
        for i in range(pending):
            who = contacts[i % len(contacts)] if i % 3 else strangers[i % len(strangers)]
            files = {f"dir{j % 2}/file-{i}-{j}.txt": rng.randbytes(2048) for j in range(3)}
            m = write_bundle(home.state_dir("pending"), who, files, kind="share", subject=f"bundle {i}", rng=rng)
            jw.add("imported", bundle=m.id, sender=key_text(who.key), kind=m.kind, parent=None, thread=None, ok=True, via="bench")
    finally:
        jw.close()
    return home


def check_all(home: Home) -> Callable[[], None]:
    pend = home.state_dir("pending")
    names = sorted(os.listdir(pend))

    def run() -> None:
        for n in names:
            if not bundle_mod.check(pend / n, expect_name=True).ok:
                raise SystemExit(f"{n} does not check out")

    return run


def sig_verify(home: Home) -> Callable[[], None]:
    pend = home.state_dir("pending")
    one = pend / sorted(os.listdir(pend))[0]
    raw = (one / "manifest.json").read_bytes()
    sig = (one / "manifest.sig").read_bytes()
    k = parse_key(json.loads(raw)["sender"]["key"])

    def run() -> None:
        for _ in range(1000):
            verify_manifest_signature(k, raw, sig)

    return run


def cli_list(home: Home, *, cold: bool) -> Callable[[], None]:
    cmd = [sys.executable, "-m", "gage", "--home", str(home.root), "list"]
    cache = home.root / "cache"

    def run() -> None:
        if cold:
            (cache / checks.FILE_NAME).unlink(missing_ok=True)
        res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if res.returncode != 0:
            raise SystemExit(f"list failed: {res.stderr.decode(errors='replace')}")

    return run


def sizes(work: Path, *, hybrid: bool) -> dict[str, int]:
    home = Home.init(work / f"sizes-{hybrid}", "alice", hybrid=hybrid)
    src = work / f"report-{hybrid}.txt"
    src.write_bytes(b"the numbers for Q3\n")
    _m, dest = send.create(home, [src], kind="share")
    # The artifact as `gage a2a export` writes it: the JSON of artifact_of, in the writer's form.
    artifact = strictjson.dumps(a2a_export.export_artifact(dest))
    return {
        "manifest.json": len((dest / "manifest.json").read_bytes()),
        "manifest.sig": len((dest / "manifest.sig").read_bytes()),
        "bundle (manifest + sig + payload)": sum(f.stat().st_size for f in dest.rglob("*") if f.is_file()),
        "key file": len(KeyFile(key=home.identity.key, name="alice").to_bytes()),
        "A2A artifact (JSON)": len(artifact),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, help="make the homes here (default: a temporary folder, removed after)")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="gage-bench-hybrid-", dir=a.dir))
    try:
        start = time.perf_counter()
        homes = {"classical": make_home(work / "classical", a.pending, hybrid=False), "hybrid": make_home(work / "hybrid", a.pending, hybrid=True)}
        print(f"made two homes of {a.pending} pending in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        time.sleep(checks.RACY_NS / 1e9 + 0.2)  # the cache keeps only checks of files older than this
        for h in homes.values():
            cli_list(h, cold=False)()  # warm the page cache and fill the check cache
        runners: dict[str, dict[str, Callable[[], None]]] = {
            "sig verify x1000": {k: sig_verify(h) for k, h in homes.items()},
            f"check all {a.pending}": {k: check_all(h) for k, h in homes.items()},
            "list cli first (cache emptied)": {k: cli_list(h, cold=True) for k, h in homes.items()},
            "list cli again (cache warm)": {k: cli_list(h, cold=False) for k, h in homes.items()},
        }
        times: dict[tuple[str, str], list[float]] = {(r, k): [] for r, ks in runners.items() for k in ks}
        for rnd in range(a.rounds):
            for r, ks in runners.items():
                order = list(ks) if rnd % 2 == 0 else list(reversed(ks))
                for k in order:
                    if r.startswith("list cli again"):
                        cli_list(homes[k], cold=False)()  # refill the cache a cold run emptied
                    t = time.perf_counter()
                    ks[k]()
                    times[(r, k)].append(time.perf_counter() - t)
            print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)
        print(f"{'runner':<34} {'classical med/min':>20} {'hybrid med/min':>20} {'hybrid/classical':>17}")
        for r in runners:
            c, h = times[(r, "classical")], times[(r, "hybrid")]
            ratio = statistics.median(h) / statistics.median(c)
            print(f"{r:<34} {statistics.median(c):>9.3f}/{min(c):<9.3f}s {statistics.median(h):>9.3f}/{min(h):<9.3f}s {ratio:>16.2f}x")
        before, after = sizes(work, hybrid=False), sizes(work, hybrid=True)
        print(f"\n{'size (bytes)':<34} {'Ed25519-only':>14} {'hybrid':>10} {'ratio':>8}")
        for k in before:
            print(f"{k:<34} {before[k]:>14} {after[k]:>10} {after[k] / before[k]:>7.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
