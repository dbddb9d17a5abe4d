"""Relay delivery: gage's deliver and fetch, side by side with the transport floor (nats-py alone)
and the sealing floor (age through pyrage alone), on the same bytes.

Two sets: `small` (N small bundles, default 1,000) and `big` (one bundle of M MiB, default 1,024).
Each phase runs in a fresh child process against one local nats-server (127.0.0.1, a free port,
its store in the bench folder), so the peak memory each prints (ru_maxrss) is that phase's own:

- gage deliver: `gage.carriers.relay.deliver.deliver` per bundle (seal to the contact's bound key, publish),
  a new connection per bundle as the command makes;
- gage fetch: `gage.carriers.relay.mailbox.fetch` (take, open, land through the import, acknowledge);
- nats floor: the same number of messages of the same sizes as gage's envelopes, published on one
  connection and then pulled and acknowledged (the big set: the object store, put from a file and
  got into a file), with no sealing and no import;
- age floor: the same plaintexts sealed and opened with pyrage (the big set streamed file to file);
- import floor: the same bundles imported from a folder into a third home (`store.import_bundle`,
  the one import every carrier lands through), the part of a fetch that is not the relay's.

It prints medians of the rounds, throughput, peak memory and the ratios gage/(nats+age) for
deliver and for fetch. Peak memory of the big set should not grow with its size: run
`--big-mib 64` and `--big-mib 1024` and compare.

    python bench/bench_relay.py                          # 1,000 small bundles and one 1 GiB bundle
    python bench/bench_relay.py --small 200 --big-mib 64 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gage.inbox.opening import open_home

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _homes(root: Path) -> tuple[Any, Any, str]:

    return open_home(root / "alice"), open_home(root / "bob"), (root / "url").read_text()


def setup(root: Path, url: str, small: int, big_mib: int) -> None:
    from gage.carriers.relay import config, mailbox
    from gage.format.words import derive
    from gage.home import sealing, whereabouts
    from gage.home.layout import Home
    from gage.inbox import send
    from gage.trust import ceremony

    alice, bob, carol = Home.init(root / "alice", "alice"), Home.init(root / "bob", "bob"), Home.init(root / "carol", "carol")
    (root / "url").write_text(url)
    for h in (alice, bob, carol):
        settings = h.root / "settings.toml"
        settings.write_text("[limits]\npending_per_key = 1000000\npending_unconfirmed = 1000000\n"
                            "pending_bytes_per_key = 1125899906842624\npending_unconfirmed_bytes = 1125899906842624\n")
    with bob.lock():
        key = sealing.ensure(bob.root, bob.identity.secret)
    mailbox.run(mailbox.create(url, sealing.mailbox_address(key.recipient), max_msgs=10 * small + 10, max_bytes=(big_mib + 64) << 21, ack_wait=600))
    config.record(bob, url, None)
    words = " ".join(" ".join(p) for p in derive(bob.identity.key))
    assert ceremony.confirm(alice, "bob", bob.identity.key, words).confirmed
    whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=url, source="bench"))
    src = root / "src"
    src.mkdir()
    ids = []
    for i in range(small):
        f = src / f"s{i}.txt"
        f.write_bytes(os.urandom(200 + i % 800))
        ids.append(send.create(alice, [f], kind="share")[0].id)
    (root / "small.ids").write_text("\n".join(ids))
    big = src / "big.bin"
    with open(big, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(big_mib):
            f.write(block)
    (root / "big.id").write_text(send.create(alice, [big], kind="share")[0].id)
    big.unlink()


def _ids(root: Path, which: str) -> list[str]:
    return (root / "small.ids").read_text().split() if which == "small" else [(root / "big.id").read_text()]


def phase(name: str, which: str, root: Path) -> dict[str, Any]:
    from gage.carriers.relay import deliver, envelope, mailbox
    from gage.home import sealing

    alice, bob, url = _homes(root)
    ids = _ids(root, which)
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    address = sealing.mailbox_address(key.recipient)
    t0 = time.perf_counter()
    nbytes = 0
    if name == "gage-deliver":
        for bid in ids:
            d = deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)
            nbytes += d.bytes
    elif name == "gage-fetch":
        got = mailbox.run(mailbox.fetch(bob, url, address, wait=2.0))
        assert sorted(o.id for o in got.opened if o.new) == sorted(ids), "not all landed"
        nbytes = sum(int(x) for x in _sizes_path(root, which).read_text().split())
    elif name in ("nats-deliver", "nats-fetch"):
        nbytes = asyncio.run(_nats(name, which, root, url, ids))
    elif name in ("age-deliver", "age-fetch"):
        nbytes = _age(name, which, root, alice, key, ids)
    elif name == "import-fetch":
        from gage.inbox import store
        from gage.trust import ceremony

        carol = open_home(root / "carol")
        for bid in ids:
            ceremony.remember_signer(carol, store.import_bundle(carol, alice.state_dir("outbox") / bid, event="received", via="bench"))
        nbytes = sum(int(x) for x in _sizes_path(root, which).read_text().split())
    else:
        raise SystemExit(f"unknown phase {name}")
    del envelope
    return {"seconds": time.perf_counter() - t0, "bytes": nbytes, "rss_mib": _rss_mib()}


def _plain_path(root: Path, bid: str) -> Path:
    return root / "plain" / bid


def _sizes_path(root: Path, which: str) -> Path:
    return root / f"{which}.sizes"


async def _nats(name: str, which: str, root: Path, url: str, ids: list[str]) -> int:
    """The transport floor: the same sizes as gage's envelopes, on one connection, nothing else."""
    import nats
    from nats.js import api

    sizes = [int(x) for x in _sizes_path(root, which).read_text().split()]
    nc = await nats.connect(url)
    js = nc.jetstream()
    stream = f"FLOOR_{which.upper()}"
    total = 0
    if name == "nats-deliver":
        try:
            await js.delete_stream(stream)
        except Exception:
            pass
        await js.add_stream(api.StreamConfig(name=stream, subjects=[f"floor.{which}"], max_bytes=-1))
        if which == "small":
            for s in sizes:
                await js.publish(f"floor.{which}", os.urandom(s))
                total += s
        else:
            blob = root / "floor.bin"
            with open(blob, "wb") as f:
                block = os.urandom(1 << 20)
                left = sizes[0]
                while left:
                    n = min(left, len(block))
                    f.write(block[:n])
                    left -= n
            obs = await js.create_object_store(f"FLOOR_OB_{which.upper()}")
            t = time.perf_counter()
            with open(blob, "rb") as f:
                await obs.put("x", f)
            del t
            total = sizes[0]
    else:
        if which == "small":
            sub = await js.pull_subscribe(f"floor.{which}", durable="floor", stream=stream)
            while total < sum(sizes):
                for m in await sub.fetch(100, timeout=5):
                    total += len(m.data)
                    await m.ack_sync()
        else:
            obs = await js.object_store(f"FLOOR_OB_{which.upper()}")
            with open(root / "floor.out", "wb") as f:
                await obs.get("x", writeinto=f)
            total = (root / "floor.out").stat().st_size
            (root / "floor.out").unlink()
    await nc.close()
    return total


def _age(name: str, which: str, root: Path, alice: Any, key: Any, ids: list[str]) -> int:
    """The sealing floor: the same plaintexts sealed and opened with pyrage, nothing else."""
    import pyrage
    from pyrage import x25519

    from gage.carriers.relay import envelope

    rcpt, ident = x25519.Recipient.from_str(key.recipient), x25519.Identity.from_str(key.identity)
    out = root / "age"
    out.mkdir(exist_ok=True)
    total = 0
    for bid in ids:
        if name == "age-deliver":
            src = envelope.StreamReader(envelope.stream(alice.state_dir("outbox") / bid))
            with open(out / bid, "wb") as f:
                pyrage.encrypt_io(src, f, [rcpt])
            total += (out / bid).stat().st_size
        else:
            with open(out / bid, "rb") as f, open(out / (bid + ".plain"), "wb") as g:
                pyrage.decrypt_io(f, g, [ident])
            total += (out / (bid + ".plain")).stat().st_size
            (out / (bid + ".plain")).unlink()
    return total


def record_sizes(root: Path, which: str) -> None:
    """The envelope sizes gage delivered, for the floors to send the same bytes."""
    from gage.carriers.relay import envelope, seal
    from gage.home import sealing

    alice, bob, _url = _homes(root)
    key = sealing.load(bob.root, bob.identity.key)
    sizes = []
    for bid in _ids(root, which):
        n = sum(len(c) for c in envelope.stream(alice.state_dir("outbox") / bid))
        sizes.append(n + 200 + n // (64 << 10) * 16)  # the age header and a 16-byte tag per 64 KiB chunk
    del seal, key
    _sizes_path(root, which).write_text("\n".join(map(str, sizes)))


def _child(*args: str) -> dict[str, Any]:
    res = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=7200)
    if res.returncode != 0:
        raise SystemExit(f"{args}: {res.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def _reset_bob(root: Path) -> None:
    """Between rounds: bob's pending emptied, the age scratch removed (the relay is drained by fetch)."""
    for who in ("bob", "carol"):
        for p in (root / who / "inbox" / "pending").iterdir():
            shutil.rmtree(p)
        (root / who / "journal.jsonl").unlink()  # an id in the journal would make the next import "already there"
        shutil.rmtree(root / who / "cache", ignore_errors=True)
    shutil.rmtree(root / "age", ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=("small", "big"))
    ap.add_argument("--dir")
    ap.add_argument("--phase")
    ap.add_argument("--which")
    ap.add_argument("--root")
    ap.add_argument("--url")
    a = ap.parse_args()
    if a.phase:
        root = Path(a.root)
        if a.phase == "setup":
            setup(root, a.url, a.small, a.big_mib)
            print(json.dumps({"ok": True}))
        elif a.phase == "sizes":
            record_sizes(root, a.which)
            print(json.dumps({"ok": True}))
        else:
            print(json.dumps(phase(a.phase, a.which, root)))
        return 0

    from gage.carriers.relay import server

    base = Path(tempfile.mkdtemp(prefix="gage-bench-relay-", dir=a.dir))
    srv = server.Server(store=base / "nats", name="bench").start()
    try:
        root = base / "homes"
        root.mkdir()
        print(f"bench_relay: {a.small} small bundles, one of {a.big_mib} MiB, {a.rounds} round(s); nats-server on {srv.url}; in {base}")
        _child("--phase", "setup", "--root", str(root), "--url", srv.url, "--small", str(a.small), "--big-mib", str(a.big_mib))
        for which in ("small", "big"):
            if a.only and a.only != which:
                continue
            _child("--phase", "sizes", "--which", which, "--root", str(root))
            results: dict[str, list[dict[str, Any]]] = {}
            for _ in range(a.rounds):
                # side by side, interleaved: each runner sees the same load
                for ph in ("gage-deliver", "gage-fetch", "nats-deliver", "nats-fetch", "age-deliver", "age-fetch", "import-fetch"):
                    results.setdefault(ph, []).append(_child("--phase", ph, "--which", which, "--root", str(root)))
                _reset_bob(root)
            med = {ph: statistics.median(r["seconds"] for r in rs) for ph, rs in results.items()}
            rss = {ph: max(r["rss_mib"] for r in rs) for ph, rs in results.items()}
            mib = {ph: rs[0]["bytes"] / (1 << 20) for ph, rs in results.items()}
            print(f"\n{which}:")
            print(f"  {'phase':<14} {'median s':>9} {'MiB/s':>8} {'peak MiB':>9}")
            for ph in results:
                print(f"  {ph:<14} {med[ph]:>9.3f} {mib[ph] / med[ph]:>8.1f} {rss[ph]:>9.0f}")
            for what in ("deliver", "fetch"):
                floor = med[f"nats-{what}"] + med[f"age-{what}"]
                print(f"  {which}: gage {what} / (nats + age) = {med[f'gage-{what}'] / floor:.2f}x"
                      f"  (gage {med[f'gage-{what}']:.3f} s, nats {med[f'nats-{what}']:.3f} s, age {med[f'age-{what}']:.3f} s)")
            with_import = med["nats-fetch"] + med["age-fetch"] + med["import-fetch"]
            print(f"  {which}: gage fetch / (nats + age + the same bundles imported from a folder) = {med['gage-fetch'] / with_import:.2f}x"
                  f"  (import {med['import-fetch']:.3f} s)")
    finally:
        srv.stop(kill=True)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
