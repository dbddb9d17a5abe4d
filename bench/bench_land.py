"""Landing many small bundles: `gage mailbox fetch` and the batched import, each beside its floor in the same run.

Two sets of N small bundles (payloads of 200 B to 4 KiB, random), each phase in a child process of
its own (so the peak memory it prints, ru_maxrss, is that phase's), phases interleaved round by round:

- gage fetch: `mailbox.fetch` of N envelopes waiting in a mailbox on a local nats-server (take, open,
  land through the batched import, acknowledge once the batch is durable);
- fetch floor, summed from three parts measured in one child: nats-py pulling the same number of
  messages of the same sizes and acknowledging each (`ack_sync`), pyrage opening the same envelopes
  (in memory), and writing every bundle's files (manifest, signature, payload) into a folder each,
  with one fsync per folder per batch of 128 (no fsync per file);
- gage import: the same N bundle folders brought into a fresh home by the batched import
  (`landmany.import_many`, the signers remembered, key statements applied: what `gage import
  DIR...` runs);
- import floor: copying and hashing (SHA-256) the same files into a folder each, one fsync per
  folder per batch of 128.

With `--compare DIR` (a gage source tree, e.g. `git archive main gage | tar -x -C DIR`) the two gage
phases also run on that code, side by side ("before"). With `--memory M`, M envelopes are put in
the mailbox and fetched whole, and the peak memory is printed beside the N run's: flat means the
batch, not the mailbox, bounds it.

    python bench/bench_land.py                       # 1,000 small bundles, 3 rounds
    python bench/bench_land.py --small 1000 --rounds 3 --compare /tmp/gage-main
    python bench/bench_land.py --small 1000 --rounds 1 --memory 10000
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import json
import os
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BATCH = 128


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def setup(root: Path, url: str, n: int, tag: str) -> None:
    from gage.carriers.relay import config, mailbox, seal
    from gage.home import sealing
    from gage.home.layout import Home
    from gage.inbox import send

    if not (root / "alice").exists():
        alice, bob = Home.init(root / "alice", "alice"), Home.init(root / "bob", "bob")
        for h in (alice, bob):
            (h.root / "settings.toml").write_text(
                "[limits]\npending_per_key = 1000000\npending_unconfirmed = 1000000\n"
                "pending_bytes_per_key = 1125899906842624\npending_unconfirmed_bytes = 1125899906842624\n"
            )
        with bob.lock():
            key = sealing.ensure(bob.root, bob.identity.secret)
        mailbox.run(mailbox.create(url, sealing.mailbox_address(key.recipient), max_msgs=200_000, max_bytes=8 << 30, ack_wait=600))
        config.record(bob, url, None)
        (root / "url").write_text(url)
    from gage.inbox.opening import open_home

    alice, bob = open_home(root / "alice"), open_home(root / "bob")
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    src, env = root / f"src-{tag}", root / f"env-{tag}"
    src.mkdir()
    env.mkdir()
    ids = []
    for i in range(n):
        f = src / f"s{i}.bin"
        f.write_bytes(os.urandom(200 + (i * 3907) % 3897))
        m, dest = send.create(alice, [f], kind="share")
        ids.append(m.id)
        with open(env / m.id, "wb") as out:
            seal.seal_bundle(dest, key.recipient, out)
    (root / f"{tag}.ids").write_text("\n".join(ids))


def _ids(root: Path, tag: str) -> list[str]:
    return (root / f"{tag}.ids").read_text().split()


async def _publish(url: str, subject: str, stream: str | None, files: list[Path], headers: bool) -> None:
    import nats

    from gage.carriers.relay import mailbox

    nc = await nats.connect(url)
    js = nc.jetstream()
    for f in files:
        h = {mailbox.HEADER: mailbox.ENVELOPE_VERSION, "Nats-Msg-Id": secrets.token_hex(16)} if headers else None
        await js.publish(subject, f.read_bytes(), headers=h, stream=stream)
    await nc.close()


def fill(root: Path, tag: str) -> None:
    """Put the set's envelopes in bob's mailbox, and the same sizes in the floor's stream (not timed)."""
    import nats
    from nats.js import api

    from gage.carriers.relay import mailbox
    from gage.home import sealing
    from gage.inbox.opening import open_home

    url = (root / "url").read_text()
    bob = open_home(root / "bob")
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    address = sealing.mailbox_address(key.recipient)
    files = [root / f"env-{tag}" / i for i in _ids(root, tag)]
    asyncio.run(_publish(url, mailbox.subject(address), mailbox.stream_name(address), files, True))

    async def floor() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        try:
            await js.delete_stream("FLOOR")
        except Exception:  # noqa: BLE001 - none yet
            pass
        await js.add_stream(api.StreamConfig(name="FLOOR", subjects=["floor.x"], max_bytes=-1))
        await nc.close()

    asyncio.run(floor())
    asyncio.run(_publish(url, "floor.x", "FLOOR", files, False))


def _bundle_files(root: Path, tag: str) -> list[tuple[str, list[tuple[str, bytes]]]]:
    from gage.inbox.opening import open_home

    alice = open_home(root / "alice")
    out = []
    for bid in _ids(root, tag):
        d = alice.state_dir("outbox") / bid
        files = [(str(p.relative_to(d)), p.read_bytes()) for p in sorted(d.rglob("*")) if p.is_file()]
        out.append((bid, files))
    return out


def _write_floor(dest: Path, bundles: list[tuple[str, list[tuple[str, bytes]]]], hashing: bool) -> None:
    """Each bundle's files into a folder of its own; per batch, one fsync per folder (no fsync per file)."""
    dest.mkdir()
    for start in range(0, len(bundles), BATCH):
        folders: set[str] = {str(dest)}
        for bid, files in bundles[start : start + BATCH]:
            for rel, data in files:
                p = dest / bid / rel
                if str(p.parent) not in folders:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    folders.add(str(p.parent))
                    folders.add(str(dest / bid))
                if hashing:
                    hashlib.sha256(data).digest()
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, data)
                os.close(fd)
        for f in sorted(folders, key=len, reverse=True):
            fd = os.open(f, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)


def phase(name: str, root: Path, tag: str) -> dict[str, Any]:
    from gage.inbox.opening import open_home

    ids = _ids(root, tag)
    parts: dict[str, float] = {}
    if name == "gage-fetch":
        from gage.carriers.relay import mailbox
        from gage.home import sealing

        bob = open_home(root / "bob")
        key = sealing.load(bob.root, bob.identity.key)
        assert key is not None
        url = (root / "url").read_text()
        address = sealing.mailbox_address(key.recipient)
        new = [0]

        def count(o: Any) -> None:
            new[0] += o.new

        # As the command fetches: each outcome counted as it comes, none kept (an older tree, with
        # --compare, kept every outcome, and so did its command).
        kept = {} if "keep" not in inspect.signature(mailbox.fetch).parameters else {"keep": False}
        t0 = time.perf_counter()
        mailbox.run(mailbox.fetch(bob, url, address, wait=2.0, on_opened=count, **kept))
        secs = time.perf_counter() - t0
        assert new[0] == len(ids), f"{new[0]} of {len(ids)} landed"
    elif name == "gage-import":
        from gage.home.layout import Home
        from gage.trust import ceremony, retirement

        try:
            from gage.inbox import landmany
        except ImportError:  # an older tree (--compare)
            landmany = None  # type: ignore[assignment]

        carol = Home.init(root / f"carol-{secrets.token_hex(4)}", "carol")
        (carol.root / "settings.toml").write_text((root / "bob" / "settings.toml").read_text())
        carol = open_home(carol.root)
        outbox = open_home(root / "alice").state_dir("outbox")
        srcs = [outbox / i for i in ids]
        t0 = time.perf_counter()
        if landmany is not None:
            res = [o for o in landmany.import_many(carol, [landmany.Incoming(p) for p in srcs]) if not isinstance(o, Exception)]
            ceremony.remember_signers(carol, res)
        else:  # an older tree: one import each, as its `gage import DIR...` did
            from gage.inbox import store

            res = []
            for p in srcs:
                r = store.import_bundle(carol, p)
                ceremony.remember_signer(carol, r)
                res.append(r)
        retirement.apply_arrivals(carol, [r.id for r in res if r.new])
        secs = time.perf_counter() - t0
        assert sum(1 for r in res if r.new) == len(ids)
        shutil.rmtree(carol.root, ignore_errors=True)
    elif name == "floor-fetch":
        import nats
        import pyrage
        from pyrage import x25519

        from gage.home import sealing

        bob = open_home(root / "bob")
        key = sealing.load(bob.root, bob.identity.key)
        assert key is not None
        url = (root / "url").read_text()

        async def pull() -> None:
            nc = await nats.connect(url)
            js = nc.jetstream()
            sub = await js.pull_subscribe("floor.x", durable=f"floor{secrets.token_hex(3)}", stream="FLOOR")
            n = 0
            while n < len(ids):
                for m in await sub.fetch(BATCH, timeout=5):
                    n += 1
                    await m.ack_sync()
            await nc.close()

        t0 = time.perf_counter()
        asyncio.run(pull())
        parts["nats"] = time.perf_counter() - t0
        ident = x25519.Identity.from_str(key.identity)
        blobs = [(root / f"env-{tag}" / i).read_bytes() for i in ids]
        t0 = time.perf_counter()
        for b in blobs:
            pyrage.decrypt(b, [ident])
        parts["age"] = time.perf_counter() - t0
        bundles = _bundle_files(root, tag)
        dest = root / f"floor-{secrets.token_hex(4)}"
        t0 = time.perf_counter()
        _write_floor(dest, bundles, hashing=False)
        parts["write"] = time.perf_counter() - t0
        shutil.rmtree(dest)
        secs = sum(parts.values())
    elif name == "floor-import":
        bundles = _bundle_files(root, tag)
        dest = root / f"floor-{secrets.token_hex(4)}"
        t0 = time.perf_counter()
        _write_floor(dest, bundles, hashing=True)
        secs = time.perf_counter() - t0
        shutil.rmtree(dest)
    else:
        raise SystemExit(f"unknown phase {name}")
    return {"seconds": secs, "parts": parts, "rss_mib": _rss_mib()}


def _child(*args: str, pythonpath: str | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    res = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=7200, env=env)
    if res.returncode != 0:
        raise SystemExit(f"{args}: {res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def _reset_bob(root: Path) -> None:
    """Between rounds: bob's pending emptied and his journal and caches gone (else all is "already there")."""
    from gage.bundle import readonly

    bob = root / "bob"
    for p in (bob / "inbox" / "pending").iterdir():
        readonly.remove_tree(p)
    (bob / "journal.jsonl").unlink(missing_ok=True)
    (bob / "journal.jsonl.head").unlink(missing_ok=True)
    shutil.rmtree(bob / "cache", ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", metavar="DIR", help="a gage source tree to run the gage phases on too (before)")
    ap.add_argument("--memory", type=int, metavar="M", help="also fetch M waiting envelopes whole, for the peak memory")
    ap.add_argument("--dir")
    ap.add_argument("--phase")
    ap.add_argument("--root")
    ap.add_argument("--url")
    ap.add_argument("--tag", default="small")
    a = ap.parse_args()
    if a.phase:
        root = Path(a.root)
        if a.phase == "setup":
            setup(root, a.url, a.small, a.tag)
            print(json.dumps({"ok": True}))
        elif a.phase == "fill":
            fill(root, a.tag)
            print(json.dumps({"ok": True}))
        else:
            print(json.dumps(phase(a.phase, root, a.tag)))
        return 0

    from gage.carriers.relay import server

    base = Path(tempfile.mkdtemp(prefix="gage-bench-land-", dir=a.dir))
    srv = server.Server(store=base / "nats", name="bench").start()
    load = os.getloadavg()
    try:
        root = base / "homes"
        root.mkdir()
        print(f"bench_land: {a.small} small bundles, {a.rounds} round(s); nats-server on {srv.url}; load average {load[0]:.1f}")
        _child("--phase", "setup", "--root", str(root), "--url", srv.url, "--small", str(a.small))
        runs: dict[str, list[dict[str, Any]]] = {}
        names = ["gage-fetch", "floor-fetch", "gage-import", "floor-import"]
        if a.compare:
            names += ["before-fetch", "before-import"]
        for _ in range(a.rounds):
            for ph in names:
                real = ph.replace("before-", "gage-")
                if real == "gage-fetch":
                    _child("--phase", "fill", "--root", str(root))
                pp = str(Path(a.compare).resolve()) if ph.startswith("before-") and a.compare else None
                runs.setdefault(ph, []).append(_child("--phase", real, "--root", str(root), pythonpath=pp))
                if real == "gage-fetch":
                    _reset_bob(root)
        med = {ph: statistics.median(r["seconds"] for r in rs) for ph, rs in runs.items()}
        rss = {ph: max(r["rss_mib"] for r in rs) for ph, rs in runs.items()}
        print(f"\n  {'phase':<14} {'median s':>9} {'per s':>8} {'peak MiB':>9}")
        for ph in runs:
            print(f"  {ph:<14} {med[ph]:>9.3f} {a.small / med[ph]:>8.0f} {rss[ph]:>9.0f}")
        parts = {k: statistics.median(r["parts"][k] for r in runs["floor-fetch"]) for k in ("nats", "age", "write")}
        print(f"  fetch floor parts: nats pull+ack {parts['nats']:.3f} s, age open {parts['age']:.3f} s, files written {parts['write']:.3f} s")
        print(f"\n  gage fetch / floor  = {med['gage-fetch'] / med['floor-fetch']:.2f}x   (bound 3x)")
        print(f"  gage import / floor = {med['gage-import'] / med['floor-import']:.2f}x   (bound 3x)")
        if a.compare:
            print(f"  before: fetch / floor = {med['before-fetch'] / med['floor-fetch']:.2f}x, import / floor = {med['before-import'] / med['floor-import']:.2f}x")
        if a.memory:
            _child("--phase", "setup", "--root", str(root), "--url", srv.url, "--small", str(a.memory), "--tag", "many")
            _child("--phase", "fill", "--root", str(root), "--tag", "many")
            many = _child("--phase", "gage-fetch", "--root", str(root), "--tag", "many")
            print(f"\n  memory: fetching {a.small} waiting peaked at {rss['gage-fetch']:.0f} MiB; {a.memory} waiting: {many['rss_mib']:.0f} MiB"
                  f" ({many['seconds']:.1f} s, {a.memory / many['seconds']:.0f}/s)")
        print(f"  load average after: {os.getloadavg()[0]:.1f}")
    finally:
        srv.stop(kill=True)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
