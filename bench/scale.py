"""Homes at the sizes people reach, made fast, for the benchmarks (not a benchmark itself).

`make_home(root, pending=10_000, journal=100_000, hybrid=False)` gives a home with `pending` bundles in
`inbox/pending` (each a few small files, from a mix of confirmed contacts and strangers)
and a journal of about `journal` entries: one arrival line per pending bundle, as an import
writes, then filler that looks like a long history (bundles sent, imported, accepted and
rejected long ago, since tidied out of the inbox). Bundles are written directly, without the per-file fsync of a real
`gage bundle`, and journal lines are chained exactly as `Journal.append` chains them, so
`gage journal verify` passes on the result. Deterministic for a given seed.

    python bench/scale.py DIR --pending 10000 --journal 100000   # make one to poke at
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path

import nacl.signing

from gage.bundle import MANIFEST, PAYLOAD, SIGNATURE
from gage.format import strictjson
from gage.format.keys import Identity, key_text
from gage.format.manifest import FileEntry, Manifest, Party, now_text
from gage.format.signing import SecretKey
from gage.format.words import derive
from gage.home.journal.log import GENESIS, line_hash
from gage.home.layout import Home
from gage.trust import ceremony

KINDS = ("share", "question", "review-request")  # answer and ack need a parent


def person(name: str, seed: int, *, hybrid: bool = False) -> Identity:
    """A sender, Ed25519-only or hybrid (Ed25519 + ML-DSA-65: a 4 KB manifest and 3.4 KB signature each)."""
    ed = hashlib.sha256(f"{name}:{seed}".encode()).digest()
    if not hybrid:
        return Identity(name=name, signing_key=nacl.signing.SigningKey(ed))
    return Identity.from_secret(name, SecretKey.from_seed_bytes(ed + hashlib.sha256(f"{name}:{seed}:pq".encode()).digest()))


def confirm(home: Home, who: Identity) -> None:
    """Through the real ceremony code path (the benchmark plays both people)."""
    words = " ".join(" ".join(p) for p in derive(who.key))
    assert ceremony.confirm(home, who.name, who.key, words).confirmed


def write_bundle(dest_dir: Path, who: Identity, files: dict[str, bytes], *, kind: str, subject: str, rng: random.Random) -> Manifest:
    """A signed bundle written straight into `dest_dir/<id>` (no staging, no fsync)."""
    entries = [FileEntry(path=p, size=len(b), sha256=hashlib.sha256(b).hexdigest()) for p, b in files.items()]
    m = Manifest.build(
        kind=kind,
        sender=Party(key=who.key, name=who.name),
        files=entries,
        nonce=f"{rng.getrandbits(128):032x}",
        subject=subject,
    )
    root = dest_dir / m.id
    (root / PAYLOAD).mkdir(parents=True)
    made: set[str] = set()
    for p, b in files.items():
        parent = (root / PAYLOAD / p).parent
        if str(parent) not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(str(parent))
        (root / PAYLOAD / p).write_bytes(b)
    (root / MANIFEST).write_bytes(m.raw)
    (root / SIGNATURE).write_bytes(who.sign(m.raw))
    return m


class JournalWriter:
    """Appends chained lines in bulk, continuing from what the journal already holds."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.path = home.journal.path
        data = self.path.read_bytes() if self.path.exists() else b""
        lines = data.split(b"\n")[:-1]
        self.prev = line_hash(lines[-1]) if lines else GENESIS
        self.seq = len(lines)
        self.out = open(self.path, "ab")  # noqa: SIM115 (closed in close())

    def add(self, event: str, **fields: object) -> None:
        self.seq += 1
        line = strictjson.dumps({"seq": self.seq, "time": now_text(), "event": event, "prev": self.prev, **fields})
        self.out.write(line + b"\n")
        self.prev = line_hash(line)

    def close(self) -> None:
        self.out.close()
        self.home.journal._write_head(self.seq, self.prev)


def make_home(
    root: Path,
    *,
    pending: int = 10_000,
    journal: int = 100_000,
    files_per_bundle: int = 3,
    file_size: int = 2048,
    seed: int = 1,
    hybrid: bool = False,
    landed: bool = False,
) -> Home:
    """See the module docstring. `root` must not exist yet or be empty. `hybrid`: every key
    (this home's, its contacts' and the strangers') is Ed25519 + ML-DSA-65. `landed`: the pending
    bundles come last, through gage's own batched import (`landmany.import_many`, as a fetch or
    `gage import DIR...` lands them: every rule, every fsync, the journal lines and the rows it
    keeps), not written into pending directly: a home as a person back from a week away has it."""
    rng = random.Random(seed)
    home = Home.init(root, "me", hybrid=hybrid)
    contacts = [person(n, seed, hybrid=hybrid) for n in ("alice", "bob", "carol", "dave")]
    strangers = [person(f"stranger{i}", seed, hybrid=hybrid) for i in range(8)]
    for c in contacts:
        confirm(home, c)
    wire = root.with_name(root.name + ".wire")
    pend = wire if landed else home.state_dir("pending")
    pend.mkdir(exist_ok=True)
    jw = JournalWriter(home)
    try:
        for i in range(pending):
            who = contacts[i % len(contacts)] if i % 3 else strangers[i % len(strangers)]
            files = {f"dir{j % 2}/file-{i}-{j}.txt": rng.randbytes(file_size) for j in range(files_per_bundle)}
            m = write_bundle(pend, who, files, kind=KINDS[i % len(KINDS)], subject=f"bundle {i}", rng=rng)
            if not landed:
                jw.add("imported", bundle=m.id, sender=key_text(who.key), kind=m.kind, parent=None, thread=None, ok=True, via="bench")
        me = key_text(home.identity.key)
        n = 0
        while jw.seq < journal:
            fake = hashlib.sha256(f"old-{seed}-{n}".encode()).hexdigest()
            step = n % 4
            if step == 0:
                jw.add("sent", bundle=fake, sender=me, kind="share", parent=None, thread=None, to=[])
            elif step == 1:
                jw.add("imported", bundle=fake, sender=key_text(contacts[n % 4].key), kind="answer", parent=None, thread=None, ok=True)
            else:
                # Decided long ago and since tidied out of the inbox: the journal says where it went.
                if step == 2:
                    jw.add("accepted", bundle=fake, how="human", thread=None)
                else:
                    jw.add("rejected", bundle=fake, why="old")
                jw.add("reconciled", bundle=fake, found="missing", action="recorded", state="missing", note="tidied")
            n += 1
    finally:
        jw.close()
    if landed:
        import shutil

        from gage.inbox import landmany

        # A third come from strangers: a person expecting that many raises the limits on them.
        (root / "settings.toml").write_text(f"[limits]\npending_per_key = {pending}\npending_unconfirmed = {pending}\n")

        items = [landmany.Incoming(wire / name) for name in sorted(os.listdir(wire))]
        outcomes = landmany.import_many(home, items)
        refused = [o for o in outcomes if not isinstance(o, landmany.ImportResult)]
        if refused:
            raise SystemExit(f"the import refused {len(refused)}: {refused[0]}")
        shutil.rmtree(wire)
    return home


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--journal", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hybrid", action="store_true", help="every key Ed25519 + ML-DSA-65 (default: Ed25519 only)")
    ap.add_argument("--landed", action="store_true", help="pending landed through gage's batched import, not written into place")
    a = ap.parse_args(argv)
    start = time.perf_counter()
    make_home(a.dir, pending=a.pending, journal=a.journal, seed=a.seed, hybrid=a.hybrid, landed=a.landed)
    print(f"made {a.dir} with {a.pending} pending and {a.journal} journal entries in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
