"""Soak: `kill -9` at random instants during accept, reject, import and bundle, with readers running.

Each round starts one real `gage` process on a receiving home (`gage accept`, `gage reject`,
`gage import` of a sender's bundle, or `gage bundle`), all of multi-MiB bundles, while a
reader thread keeps opening the home and listing it (as the interface does) and a `gage
list --json` process runs beside it; then SIGKILLs the process at a random instant (unless
it finished first). After every round:

- `gage list --json` (a fresh process: opening the home is what repairs a crash) exits 0,
  and lists every bundle the home holds exactly once, in the state its directory says;
- nothing is left under the staging name (`tmp/accepting`), and every bundle is in exactly
  one state directory;
- the bundle the round touched is whole (`bundle.check` passes on it where it is);
- the journal verifies, its decision for each bundle matches where the bundle is, and it
  has one `accepted` entry for each accepted bundle;
- every reader run during the round succeeded and never saw a bundle in two states.

It prints its seed first and the totals last; exit 0 when every round held, 1 at the first
round that did not (with what was wrong). The kill instant is uniform between 0 and the
time that kind of command took when it was last allowed to finish, so kills spread over
the whole run of each command, including the critical windows.

    python bench/soak.py                          # 1000 rounds, 3 MiB payloads
    python bench/soak.py --rounds 25 --size-mib 2 --seed 7

Needs about rounds x size of free space (in a temporary folder, or `--dir DIR`), removed
afterwards unless `--keep`. A short run is part of the tests (tests/test_soak.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from gage import bundle as bundle_mod
from gage.format.words import derive
from gage.home import listing
from gage.home.journal.verify import verify as verify_journal
from gage.home.layout import STATES, Home
from gage.inbox import gate, send, store
from gage.inbox.opening import open_home
from gage.trust import ceremony

OPS = ("accept", "reject", "import", "bundle")


class SoakFailure(AssertionError):
    pass


def _pair(home: Home, name: str, other: Home) -> None:
    words = " ".join(" ".join(p) for p in derive(other.identity.key))
    assert ceremony.confirm(home, name, other.identity.key, words).confirmed


class Reader(threading.Thread):
    """Opens the home and lists it, over and over, as the interface and `gage list` do."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.stop = threading.Event()
        self.runs = 0
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                home = open_home(self.root)
                listed = listing.list_bundles(home)
                ids = [s.id for s in listed]
                dup = {i for i in ids if ids.count(i) > 1}
                if dup:
                    self.errors.append(f"a reader saw {sorted(dup)[0][:12]} in two states")
                self.runs += 1
            except Exception as exc:  # noqa: BLE001 - a soak records every failure
                self.errors.append(f"reader: {type(exc).__name__}: {exc}")
            time.sleep(0.005)


class Soak:
    def __init__(self, root: Path, *, seed: int, size: int, slow: float = 0.0, verbose: bool = False) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.size = size
        self.slow = slow
        self.verbose = verbose
        self.me = Home.init(root / "me", "me")
        self.bob = Home.init(root / "bob", "bob")
        _pair(self.me, "bob", self.bob)
        _pair(self.bob, "me", self.me)
        self.wire = root / "wire"
        self.wire.mkdir()
        self.files = root / "files"
        self.files.mkdir()
        self.big = self.files / "big.bin"
        self.big.write_bytes(os.urandom(size))
        self.n = 0
        self.known: dict[str, str] = {}  # id -> state, as the last round left it
        self.estimate = dict.fromkeys(OPS, 1.0)  # seconds each command took when it finished
        self.totals: Counter[str] = Counter()

    # --- making bundles --------------------------------------------------------------

    def _note(self, who: str) -> Path:
        self.n += 1
        p = self.files / f"{who}-{self.n}.txt"
        p.write_text(f"{who} round note {self.n}\n")
        return p

    def on_wire(self) -> str:
        """A new bundle from bob, on the wire (bob's own copy removed: only the wire's matters)."""
        m, dest = send.create(self.bob, [self.big, self._note("bob")], kind="share", copy_to=self.wire)
        shutil.rmtree(dest)
        return m.id

    def pending(self) -> str:
        for bid, state in sorted(self.known.items()):
            if state == "pending":
                return bid
        bid = self.on_wire()
        store.import_bundle(self.me, self.wire / bid)
        shutil.rmtree(self.wire / bid)
        self.known[bid] = "pending"
        return bid

    # --- one round -------------------------------------------------------------------

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "GAGE_HOME": str(self.me.root)}
        if self.slow:
            env[gate.SLOW_ENV] = str(self.slow)
        return subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def round(self, rnd: int) -> None:
        op = self.rng.choice(OPS)
        target: str | None = None
        if op in ("accept", "reject"):
            target = self.pending()
            args = [op, target]
        elif op == "import":
            target = self.on_wire()
            args = ["import", str(self.wire / target)]
        else:
            args = ["bundle", str(self.big), str(self._note("me")), "--kind", "share"]

        journal_before = len(self.me.journal.entries())
        reader = Reader(self.me.root)
        reader.start()
        side = self._spawn("list", "--json")  # a real reader process beside the writer
        start = time.monotonic()
        proc = self._spawn(*args)
        killed = False
        if self.rng.random() < 0.5:
            # Anywhere in the command's run, start-up included.
            try:
                proc.wait(timeout=self.rng.uniform(0.0, self.estimate[op] * 1.2))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                killed = True
        else:
            # Once the command is visibly at work (its first rename or scratch copy), shortly after.
            self.totals[f"{op} kills aimed at work in progress"] += 1
            deadline = time.monotonic() + self.estimate[op] * 3 + 1
            while proc.poll() is None and not self._at_work(op, target) and time.monotonic() < deadline:
                time.sleep(0.0005)
            # Within the first few milliseconds (the gate's windows), or anywhere in the rest of
            # the work (a copy or build of several MiB, then its rename and journal line).
            time.sleep(self.rng.uniform(0.0, 0.03 if self.rng.random() < 0.5 else 0.4 * self.estimate[op]))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed = True
        proc.wait()
        if not killed:
            elapsed = time.monotonic() - start
            self.estimate[op] = 0.7 * self.estimate[op] + 0.3 * elapsed
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        side_err = side.communicate(timeout=120)[1].decode(errors="replace")
        reader.stop.set()
        reader.join(timeout=60)

        self.totals[f"{op} {'killed' if killed else 'finished'}"] += 1
        if not killed and proc.returncode not in (0,):
            raise SoakFailure(f"round {rnd}: `gage {op}` exited {proc.returncode} without a kill: {stderr.strip()[-500:]}")
        if "Traceback" in stderr or "Traceback" in side_err:
            raise SoakFailure(f"round {rnd}: a traceback: {(stderr or side_err).strip()[-800:]}")
        if side.returncode != 0:
            raise SoakFailure(f"round {rnd}: a concurrent `gage list` exited {side.returncode}: {side_err.strip()[-500:]}")
        if reader.errors:
            raise SoakFailure(f"round {rnd}: {reader.errors[0]}")
        self.totals["reader runs"] += reader.runs + 1
        landed_before = set(self.known)
        self.check(rnd, op, target)
        if killed and op in ("import", "bundle") and set(self.known) - landed_before:
            self.totals[f"{op} killed after landing"] += 1
        repairs = [e for e in self.me.journal.entries()[journal_before:] if e.get("event") == "reconciled"]
        if repairs:
            self.totals["rounds with a crash state repaired"] += 1
            self.totals["repairs journaled"] += len(repairs)
        if op == "import" and target is not None:
            shutil.rmtree(self.wire / target, ignore_errors=True)  # landed, or never will: the wire copy is done

    def _at_work(self, op: str, target: str | None) -> bool:
        if op == "accept":
            return (gate.staging_dir(self.me) / str(target)).exists()
        if op == "reject":
            return (self.me.state_dir("rejected") / str(target)).exists()
        prefix = "import-" if op == "import" else "build-"
        try:
            return any(n.startswith(prefix) for n in os.listdir(self.me.staging))
        except OSError:
            return False

    # --- the invariants --------------------------------------------------------------

    def check(self, rnd: int, op: str, target: str | None) -> None:
        env = {**os.environ, "GAGE_HOME": str(self.me.root)}
        r = subprocess.run(
            [sys.executable, "-m", "gage.cli.main", "list", "--json"], env=env, capture_output=True, text=True, timeout=120
        )
        if r.returncode != 0:
            raise SoakFailure(f"round {rnd}: `gage list` after the kill exited {r.returncode}: {r.stderr.strip()[-500:]}")
        listed = json.loads(r.stdout)
        seen: dict[str, list[str]] = {}
        for row in listed:
            seen.setdefault(row["id"], []).append(row["state"])

        staged = os.listdir(gate.staging_dir(self.me)) if gate.staging_dir(self.me).exists() else []
        if staged:
            raise SoakFailure(f"round {rnd} ({op}): left under the staging name after a reader opened the home: {staged}")
        on_disk: dict[str, list[str]] = {}
        for state in (*STATES, "outbox"):
            for name in os.listdir(self.me.state_dir(state)):
                on_disk.setdefault(name, []).append(state)
        for bid, where in on_disk.items():
            if len(where) != 1:
                raise SoakFailure(f"round {rnd} ({op}): bundle {bid[:12]} is in {where}")
            if seen.get(bid) != where:
                raise SoakFailure(f"round {rnd} ({op}): bundle {bid[:12]} is in {where[0]} but `gage list` says {seen.get(bid)}")
        for bid in self.known:
            if bid not in on_disk:
                raise SoakFailure(f"round {rnd} ({op}): bundle {bid[:12]} ({self.known[bid]}) vanished")
        for bid in seen:
            if bid not in on_disk:
                raise SoakFailure(f"round {rnd} ({op}): `gage list` shows {bid[:12]}, which is in no state directory")

        # The bundle this round touched (or made) is whole where it is.
        touched = [target] if target else [b for b in on_disk if b not in self.known]
        for bid in touched:
            if bid is None or bid not in on_disk:
                if op != "import":
                    raise SoakFailure(f"round {rnd} ({op}): bundle {str(bid)[:12]} is in no state")
                self.totals["import killed before landing"] += 1
                continue
            state = on_disk[bid][0]
            c = bundle_mod.check(self.me.state_dir(state) / bid, expect_name=True)
            if not c.ok:
                raise SoakFailure(f"round {rnd} ({op}): bundle {bid[:12]} in {state} is not whole: {c.problems[0]}")
        if op == "bundle" and not touched:
            self.totals["bundle killed before landing"] += 1

        report = verify_journal(self.me.journal)
        if not report.ok:
            raise SoakFailure(f"round {rnd} ({op}): the journal does not verify: {report.problems}")
        decided = listing.decisions(self.me)
        said = gate.journal_states(self.me)
        accepted = Counter(e.get("bundle") for e in self.me.journal.entries() if e.get("event") == "accepted")
        for bid, where in on_disk.items():
            state = where[0]
            if state == "outbox":
                continue
            if decided.get(bid, "pending") != state or said.get(bid, "pending") != state:
                raise SoakFailure(
                    f"round {rnd} ({op}): bundle {bid[:12]} is in {state}; the journal's decision is "
                    f"{decided.get(bid, 'none')}, and it last put it in {said.get(bid, 'pending')}"
                )
            if accepted[bid] != (1 if state == "accepted" else 0):
                raise SoakFailure(f"round {rnd} ({op}): bundle {bid[:12]} in {state} has {accepted[bid]} accepted entries")
        self.known = {bid: where[0] for bid, where in on_disk.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=None, help="default: a random one (printed first)")
    ap.add_argument("--size-mib", type=float, default=3.0, help="payload size of every bundle (default 3 MiB)")
    ap.add_argument("--slow", type=float, default=0.0, help=f"seconds for {gate.SLOW_ENV} (stretches the gate's windows)")
    ap.add_argument("--dir", type=Path, default=None, help="work here instead of a new temporary folder")
    ap.add_argument("--keep", action="store_true", help="keep the homes afterwards")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    print(f"seed {seed}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="gage-soak-", dir=args.dir))
    soak = Soak(root, seed=seed, size=int(args.size_mib * (1 << 20)), slow=args.slow)
    started = time.monotonic()
    code = 0
    try:
        for rnd in range(args.rounds):
            soak.round(rnd)
    except SoakFailure as exc:
        print(f"FAILED: {exc}", flush=True)
        print(f"the homes are kept in {root}", flush=True)
        args.keep, code = True, 1
    finally:
        states = Counter(soak.known.values())
        print(f"rounds {sum(v for k, v in soak.totals.items() if k.endswith(('killed', 'finished')))} "
              f"in {time.monotonic() - started:.1f} s (seed {seed})")
        for key in sorted(soak.totals):
            print(f"  {key}: {soak.totals[key]}")
        print("  bundles held: " + ", ".join(f"{s} {states[s]}" for s in (*STATES, "outbox")))
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
