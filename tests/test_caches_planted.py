"""A cache planted by whoever cannot read the home's cache key costs only a recomputation.

Every cache row or entry is sealed under the home's own random key (gage.home.cache.sealkey,
`cache.key` in the home root). For each cache, an entry is planted that would do harm if believed
(a tampered payload listed as checked out, a verdict or a sender in a row, a contact confirmed in
the kept parse of contacts.toml, a fact of the journal index, a reconcile marker hiding a bundle
moved past the gate by hand, another key's words), sealed without the key (a CRC-32 as seals were,
or a keyed hash under another home's key): `gage list --json`, `gage verdict ID --json` and
`gage id --json` answer exactly as with no cache at all. Each case is also run with the key (what
whoever can read it can still do, threat-model.md) and with the seal check removed, and there the
harm shows: so each test fails if the check is gone. Last, a whole cache made under another home's
key is recomputed, every seal in it replaced.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gagetest import arrive, pair

from gage.cli.main import main as cli_main
from gage.format import sha256
from gage.home.cache import (
    checks,
    journalindexdb,
    reconcilemark,
    rowindex,
    rowkept,
    sealkey,
    tomlparsed,
    wordpairs,
)
from gage.home.layout import Home
from gage.inbox import send

RACY = 2.1  # the caches remember only trees older than the check cache's racy window
OTHER_KEY = bytes(range(32))

# How a plant is sealed: bytes of the sealed text -> the seal as stored (bytes, or an int for the CRC-32 gage once wrote).
HOWS: dict[str, Callable[[bytes, bytes], object]] = {
    "a CRC-32": lambda key, data: zlib.crc32(data),
    "another home's key": lambda key, data: sealkey.seal(OTHER_KEY, data),
}
# Where the harm must show: sealed with the home's own key, or with the check removed.
CONTROLS = ("the home's own key", "the seal check removed")


class World:
    def __init__(self, root: Path, me: Home, alice: Home, eve: Home, ids: dict[str, str]) -> None:
        self.root, self.me, self.alice, self.eve, self.ids = root, me, alice, eve, ids

    @property
    def cache(self) -> Path:
        return self.me.cache

    @property
    def key(self) -> bytes:
        return (self.me.root / sealkey.KEY_FILE).read_bytes()


def _run(world: World, *argv: str) -> str:
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = cli_main(["--home", str(world.me.root), *argv])
    assert code == 0 and "Traceback" not in e.getvalue(), (argv, e.getvalue())
    return o.getvalue()


def answers(world: World) -> list[str]:
    """What a person is told: the listing, each bundle's verdict, this home's words, and the arrivals
    the interface orders its inbox by (from the row index where it holds them, else the journal)."""
    from gage.home.listing import list_bundles
    from gage.inbox.opening import open_home
    from gage.tui.inbox_sync import indexed_arrivals

    told = [_run(world, "list", "--json"), *(_run(world, "verdict", i, "--json") for i in world.ids.values()), _run(world, "id", "--json")]
    home = open_home(world.me.root)
    present = {s.id: s for s in list_bundles(home, ("pending",))}
    facts = home.journal.index.facts()
    arrivals = indexed_arrivals(home, "pending", present, facts)
    if arrivals is None:  # what the interface falls back to: the journal index's order
        arrivals = facts.arrival_order(present)
    return [*told, json.dumps(arrivals, sort_keys=True)]


def without_cache(world: World) -> list[str]:
    """The answers with no cache at all, the home's own cache then put back as it was."""
    aside = world.cache.with_name("cache.aside")
    world.cache.rename(aside)
    try:
        return answers(world)
    finally:
        shutil.rmtree(world.cache)
        aside.rename(world.cache)


def level(listing: str, bundle_id: str) -> str:
    return str(next(r["verdict"] for r in json.loads(listing) if r["id"] == bundle_id))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Three homes: me, alice (a confirmed contact) and eve (not one), a bundle from each in my inbox."""
    root = tmp_path_factory.mktemp("planted")
    me, alice, eve = (Home.init(root / n, n) for n in ("me", "alice", "eve"))
    pair(me, "alice", alice)
    ids = {}
    for who, sender in (("alice", alice), ("eve", eve)):
        f = root / f"{who}.txt"
        f.write_text(f"from {who}\n")
        m, _ = send.create(sender, [f], kind="share", subject=who, copy_to=root / "wire")
        ids[who] = arrive(me, root / "wire" / m.id).id
    shutil.rmtree(me.cache)
    return root, ids


@pytest.fixture
def world(template: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A copy of the template, every cache made (its clock moved on past the racy window rather than waited for)."""
    shutil.copytree(template[0], tmp_path / "w", symlinks=True)
    with monkeypatch.context() as m:
        later = time.time_ns() + 10 * 10**9
        m.setattr(checks, "now_ns", lambda: later)
        m.setattr(reconcilemark, "now_ns", lambda: later)
        w = World(tmp_path / "w", *(Home.open(tmp_path / "w" / n) for n in ("me", "alice", "eve")), template[1])
        answers(w)
        answers(w)  # every cache made, and kept rows served
    assert (w.cache / reconcilemark.FILE_NAME).exists() and (w.cache / checks.FILE_NAME).exists()
    return w


@pytest.fixture(autouse=True)
def fresh_key_memo() -> Iterator[None]:
    sealkey.forget()
    yield
    sealkey.forget()


def _sealer(world: World, how: str) -> Callable[[bytes], object]:
    if how in HOWS:
        return lambda data: HOWS[how](world.key, data)
    return lambda data: sealkey.seal(world.key, data)


def _hex(seal: object) -> object:
    return seal.hex() if isinstance(seal, bytes) else seal


def _sql(world: World, name: str, statement: str, *args: object) -> None:
    with contextlib.closing(sqlite3.connect(world.cache / name)) as db, db:
        db.execute(statement, args)


# --- the plants: each changes the home or its cache, and says where the harm shows ---------------


def plant_checked_out(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """alice's payload changed by hand, and a check-cache entry saying its tree checked out."""
    folder = world.me.state_dir("pending") / world.ids["alice"]
    payload = folder / "payload" / "alice.txt"
    os.chmod(payload, 0o644)
    payload.write_text("from mallory\n")  # the same length: only hashing the payload tells
    os.chmod(payload, 0o444)
    key = os.path.abspath(folder)
    entry = [
        rowkept.digest_now(folder, ["alice.txt"]),
        sha256.hexdigest((folder / "manifest.json").read_bytes()),
        sha256.hexdigest((folder / "manifest.sig").read_bytes()),
        True,
        [],
    ]
    doc = json.loads((world.cache / checks.FILE_NAME).read_text())
    doc["entries"][key] = [*entry, _hex(seal(checks._sealed_text(key, entry)))]
    (world.cache / checks.FILE_NAME).write_text(json.dumps(doc))
    return lambda got: level(got[0], world.ids["alice"]) == "verified"


def plant_row(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """eve's row in the row index saying her bundle is verified, from a confirmed contact."""
    with contextlib.closing(sqlite3.connect(world.cache / "rows.sqlite")) as db, db:
        state, bid, parent, stats, data, gen = db.execute(
            "SELECT state, id, parent, stats, data, generation FROM rows WHERE id = ?", (world.ids["eve"],)
        ).fetchone()
        parts = json.loads(data)
        parts[4] = {**parts[4], "level": "verified", "sender_label": "alice", "sender": {**parts[4]["sender"], "name": "alice", "status": "confirmed"}}
        text = json.dumps(parts)
        db.execute("UPDATE rows SET data = ?, seal = ? WHERE id = ?", (text, seal(rowkept._row_text(gen, state, bid, parent, text, stats)), bid))
    return lambda got: level(got[0], world.ids["eve"]) == "verified"


def plant_parse(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """The kept parse of contacts.toml confirming eve's key, which the file does not confirm."""
    with contextlib.closing(sqlite3.connect(world.cache / "rows.sqlite")) as db, db:
        text_sha, parser, doc = db.execute("SELECT text_sha, parser, doc FROM parsed WHERE name = 'contacts.toml'").fetchone()
        parsed = json.loads(doc)
        alice = next(c for c in parsed["contact"] if c["name"] == "alice")
        parsed["contact"].append({**alice, "name": "eve", "key": world.eve.identity.key_text})
        doc = json.dumps(parsed, separators=(",", ":"))
        db.execute(
            "UPDATE parsed SET doc = ?, seal = ? WHERE name = 'contacts.toml'",
            (doc, seal(tomlparsed.sealed_text("contacts.toml", text_sha, parser, doc))),
        )
    return lambda got: '"verified"' in got[2]  # eve's verdict


def plant_fact(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """The journal index saying eve's bundle was first received in 2000 (her verdict's `seen`)."""
    with contextlib.closing(sqlite3.connect(world.cache / journalindexdb.FILE_NAME)) as db, db:
        got = db.execute(f"SELECT id, {journalindexdb.COLUMNS} FROM bundle WHERE id = ?", (journalindexdb.key(world.ids["eve"]),)).fetchone()
        values = list(got)
        names = ["id", *journalindexdb.COLUMNS.split(", ")]
        values[names.index("first_received")] = "2000-01-01T00:00:00Z"
        db.execute("DELETE FROM bundle WHERE id = ?", (values[0],))
        db.execute("INSERT INTO bundle VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*values, seal(journalindexdb._text(tuple(values)))))
    return lambda got: "2000-01-01" in got[2]


def plant_marker(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """eve's bundle moved into inbox/accepted by hand, past the gate, and a marker saying the home
    was found consistent as it is now (so reconcile's scan would be skipped)."""
    os.rename(world.me.state_dir("pending") / world.ids["eve"], world.me.state_dir("accepted") / world.ids["eve"])
    snap = reconcilemark.snapshot(world.me)
    marker = {**snap, "seal": _hex(seal(reconcilemark._text(snap)))}
    (world.cache / reconcilemark.FILE_NAME).write_text(json.dumps(marker, sort_keys=True))
    return lambda got: any(r["id"] == world.ids["eve"] and r["state"] == "accepted" for r in json.loads(got[0]))


def plant_words(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """This home's key shown with another key's words (alice's, valid list words)."""
    path = world.cache / "words.json"
    doc = json.loads(path.read_text())
    (entries,) = doc.values()
    mine, theirs = world.me.identity.key, world.alice.identity.key
    pairs = json.loads(_run_words(world, theirs))
    entries[mine.hex()] = {"pairs": pairs, "seal": _hex(seal(wordpairs._text(mine, pairs)))}
    path.write_text(json.dumps(doc))
    return lambda got: json.loads(got[3])["words"] == pairs


def plant_arrival(world: World, seal: Callable[[bytes], object]) -> Callable[[list[str]], bool]:
    """The row index's arrival column saying eve's bundle arrived in 2000 (the interface's order)."""
    bid = world.ids["eve"]
    planted = seal(rowindex._arrival_text("pending", bid, "2000-01-01T00:00:00Z"))
    _sql(world, "rows.sqlite", "UPDATE rows SET arrived = ?, arrived_seal = ? WHERE id = ?", "2000-01-01T00:00:00Z", planted, bid)
    return lambda got: "2000-01-01" in got[4]


def _run_words(world: World, key: bytes) -> str:
    from gage.format.words import derive

    return json.dumps([list(p) for p in derive(key)])


PLANTS: dict[str, Callable[[World, Callable[[bytes], object]], Callable[[list[str]], bool]]] = {
    "check cache: a tampered payload checked out": plant_checked_out,
    "row index: a row verified": plant_row,
    "parsed contacts: a key confirmed": plant_parse,
    "journal index: a fact": plant_fact,
    "reconcile marker: a bundle past the gate": plant_marker,
    "word cache: another key's words": plant_words,
    "row index: an arrival": plant_arrival,
}


def _planted(world: World, what: str, how: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], bool]:
    """The answers with the plant, and whether its harm shows in them."""
    harm = PLANTS[what](world, _sealer(world, how))
    with monkeypatch.context() as m:
        if how == "the seal check removed":
            m.setattr(sealkey, "holds", lambda key, got, data: True)
            m.setattr(sealkey, "holds_hex", lambda key, got, data: True)
        got = answers(world)
    return got, harm(got)


@pytest.mark.parametrize("how", [*HOWS, *CONTROLS])
@pytest.mark.parametrize("what", sorted(PLANTS))
def test_a_cache_planted_without_the_key_costs_only_a_recomputation(world: World, what: str, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got, harmed = _planted(world, what, how, monkeypatch)
    truth = without_cache(world)
    if how in HOWS:
        assert got == truth
        assert not harmed
        assert answers(world) == truth  # and the caches made again serve the same
    else:
        assert harmed, "the plant does no harm even when believed: the test would not see the seal"
        assert got != truth


def seals(world: World) -> dict[str, set[object]]:
    """Every seal in every cache of the home, by cache."""
    out: dict[str, set[object]] = {}
    out["checks"] = {e[5] for e in json.loads((world.cache / checks.FILE_NAME).read_text())["entries"].values()}
    out["words"] = {e["seal"] for e in next(iter(json.loads((world.cache / "words.json").read_text()).values())).values()}
    out["marker"] = {json.loads((world.cache / reconcilemark.FILE_NAME).read_text())["seal"]}
    with contextlib.closing(sqlite3.connect(world.cache / "rows.sqlite")) as db:
        out["rows"] = {s for (s,) in db.execute("SELECT seal FROM rows")}
        out["arrivals"] = {s for (s,) in db.execute("SELECT arrived_seal FROM rows")}
        out["stamp"] = {s for (s,) in db.execute("SELECT v FROM meta WHERE k = 'seal'")}
        out["parsed"] = {s for (s,) in db.execute("SELECT seal FROM parsed")}
    with contextlib.closing(sqlite3.connect(world.cache / journalindexdb.FILE_NAME)) as db:
        out["journal index"] = {s for t in ("state", "bundle", "thread", "torn") for (s,) in db.execute(f"SELECT seal FROM {t}")}  # noqa: S608
    return out


@pytest.mark.parametrize("how", ["another home's key", "the seal check removed"])
def test_a_whole_cache_made_under_another_homes_key_is_made_again(world: World, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cache of this home as another home would seal it (the same answers, another key): each
    is recomputed and sealed again under this home's key, none believed."""
    mine = world.key
    with monkeypatch.context() as m:
        later = time.time_ns() + 10 * 10**9
        m.setattr(checks, "now_ns", lambda: later)
        m.setattr(reconcilemark, "now_ns", lambda: later)
        (world.me.root / sealkey.KEY_FILE).write_bytes(OTHER_KEY)
        sealkey.forget()
        shutil.rmtree(world.cache)
        answers(world)
        answers(world)
        (world.me.root / sealkey.KEY_FILE).write_bytes(mine)
        sealkey.forget()
        before = seals(world)
        assert all(before.values()), before  # every cache holds something sealed
        if how == "the seal check removed":
            m.setattr(sealkey, "holds", lambda key, got, data: True)
            m.setattr(sealkey, "holds_hex", lambda key, got, data: True)
        got = answers(world)
        after = seals(world)
    kept = {name: before[name] & after[name] for name in before if before[name] & after[name]}
    if how == "the seal check removed":
        assert kept, "nothing of the other key's cache was kept even when believed: the test would not see the seal"
        return
    assert kept == {}
    assert got == without_cache(world)
