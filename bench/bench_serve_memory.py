"""Benchmark: the peak memory of `gage a2a serve` under N concurrent maximum-size requests, with the home lock held.

Issue 19 item 9: a request used to be bounded only while its body was read; after that it
held the raw body, gage's parse, the decoded parts and the SDK's parse while landing waited
for the home lock, so N requests took N times that (12 of 17 MB took a server to 1.4 GB).
Now one slot is held per request from its first byte to its reply (at most 4, at most 2 per
peer address), and landing gives up on the lock after a timeout. So the peak should be
bounded by a constant times the request cap, whatever N is.

For each N, a fresh server (a separate process, so its peak resident size, VmHWM, is its
own) is started on a home whose lock this process holds, as another gage process would;
N requests of the full request size (a real bundle, padded to the cap with another
extension's metadata, which gage and the SDK both parse) are posted at once, each from its
own loopback address (127.0.0.x) so the per-peer share does not hide the global bound; the
server's VmHWM is read once every answer is in. Printed per N: the peak, the peak over the
request cap, and the peak over the N=1 run's peak (the baseline, run side by side in the
same invocation). Linux only (VmHWM from /proc).

    python bench/bench_serve_memory.py                   # max-bytes 1 MiB (a 13.6 MB request), N = 1, 2, 4, 8
    python bench/bench_serve_memory.py --counts 1,4,12 --max-bytes 4194304
    python bench/bench_serve_memory.py --counts 1,3 --no-pad   # the quick form the test runs
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gage.carriers.a2a import artifact  # noqa: E402
from gage.carriers.a2a.artifact import Limits  # noqa: E402
from gage.carriers.a2a.gatekeeper import MAX_BODIES_AT_ONCE  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.inbox import send  # noqa: E402

# The server: gage's own Server, with a short lock timeout so a run takes seconds, not 30 s per slot.
SERVER = """
import sys
from gage.carriers.a2a import server
from gage.home.layout import Home
from gage.carriers.a2a.artifact import Limits
server.LOCK_SECONDS = float(sys.argv[3])
srv = server.Server(Home(sys.argv[1]), host="127.0.0.1", port=0, limits=Limits(max_bytes=int(sys.argv[2])))
print(srv.port, flush=True)
srv.run()
"""


def _hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def _init(root: Path, name: str) -> Home:
    subprocess.run([sys.executable, "-m", "gage.cli.main", "--home", str(root), "init", "--name", name], check=True, capture_output=True)
    return Home(root)


def _body(alice: Home, tmp: Path, max_bytes: int, pad: bool) -> bytes:
    src = tmp / "big.bin"
    # Room under the cap for the manifest and signature: about 8 KiB for a hybrid key (issue 22).
    src.write_bytes(os.urandom(max(1, max_bytes - 16384)))
    _m, out = send.create(alice, [src], kind="share")
    msg = artifact.export_message(out, protocol="1.0", message_id="m", claims=None)
    doc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": msg}}
    body = json.dumps(doc).encode()
    if pad:
        room = Limits(max_bytes=max_bytes).max_request_bytes - len(body) - 200
        msg["metadata"]["urn:bench:pad"] = {"pad": "p" * max(0, room)}
        body = json.dumps(doc).encode()
    return body


def _post(port: int, body: bytes, source: str, out: list[int]) -> None:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=300) as c:
        try:
            r = c.post(f"http://127.0.0.1:{port}/", content=body, headers={"Content-Type": "application/json", "A2A-Version": "1.0"})
            out.append(r.status_code)
        except httpx.HTTPError:
            out.append(0)


def run_one(home: Path, body: bytes, max_bytes: int, n: int, lock_seconds: float) -> tuple[int, int, list[int]]:
    """(the server's peak resident KiB after start, after the N requests, their HTTP statuses)."""
    # The server runs the gage beside this script (PYTHONPATH), so an older checkout's copy of
    # this script measures that checkout: `git archive COMMIT | tar -x -C /tmp/before`.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(home), str(max_bytes), str(lock_seconds)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        idle = _hwm_kib(proc.pid)
        statuses: list[int] = []
        threads = [threading.Thread(target=_post, args=(port, body, f"127.0.0.{2 + i}", statuses)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        return idle, _hwm_kib(proc.pid), statuses
    finally:
        proc.terminate()
        proc.wait(30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="1,2,4,8", help="concurrent requests per run, comma-separated; the first is the baseline")
    ap.add_argument("--max-bytes", type=int, default=1 << 20, help="the server's [a2a] max_bytes (the request cap follows it)")
    ap.add_argument("--lock-seconds", type=float, default=3.0, help="how long landing waits for the held lock")
    ap.add_argument("--no-pad", action="store_true", help="post the bundle alone, not padded to the request cap")
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    cap = Limits(max_bytes=args.max_bytes).max_request_bytes
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        alice, bob = _init(tmp / "alice", "alice"), _init(tmp / "bob", "bob")
        body = _body(alice, tmp, args.max_bytes, pad=not args.no_pad)
        print(f"request: {len(body) / 1e6:.1f} MB (cap {cap / 1e6:.1f} MB); home lock held; landing gives up after {args.lock_seconds:g} s")
        print(f"{'N':>4} {'idle MB':>8} {'peak MB':>8} {'peak/cap':>9} {'vs N=' + str(counts[0]):>9} {'slot/req':>9}  statuses")
        base = None
        with bob.lock():  # as another gage process would hold it: every landing waits, then gives up
            for n in counts:
                idle, peak, statuses = run_one(bob.root, body, args.max_bytes, n, args.lock_seconds)
                grown = peak - idle
                base = base or max(1, grown)
                counted = {s: statuses.count(s) for s in sorted(set(statuses))}
                # What one request in flight holds: the growth over the slots in use, against the request's size.
                per_slot = grown * 1024 / min(n, MAX_BODIES_AT_ONCE) / len(body)
                print(f"{n:>4} {idle / 1024:>8.0f} {peak / 1024:>8.0f} {grown * 1024 / cap:>9.2f} {grown / base:>8.2f}x {per_slot:>8.2f}x  {counted}")
        print(f"each request in flight holds about slot/req times its size (issue 29: about 2; it was about 9, and 31 for one alone); {MAX_BODIES_AT_ONCE} slots")
        print(f"peak growth over the request cap stays bounded as N grows: a constant times {cap / 1e6:.1f} MB, not N times it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
