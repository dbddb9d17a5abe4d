"""Every cache a home keeps is derived, never a source: damaged in place (a field of the wrong
type, `{}` or `[]` where a record was, an extra field, a value that is well formed but not the
one computed) or planted, it costs only a recomputation. Each field of each cache is damaged in
turn, and `gage list --json` and `gage verdict ID --json` must answer exactly as with no cache at
all, exit 0, and print no traceback."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gagetest import arrive, pair

from gage.cli.main import main as cli_main
from gage.home.cache import rowindex, sealkey
from gage.home.layout import Home
from gage.inbox import gate, send

RACY = 2.1  # the caches remember only trees older than the check cache's racy window


class World:
    def __init__(self, me: Home, ids: list[str], snapshot: dict[str, bytes]) -> None:
        self.me, self.ids, self.snapshot = me, ids, snapshot

    @property
    def cache(self) -> Path:
        return self.me.cache

    def restore(self) -> None:
        for f in self.cache.iterdir():
            f.unlink()
        for name, data in self.snapshot.items():
            (self.cache / name).write_bytes(data)


def answers(me: Home, ids: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What a person is told: the listing and each bundle's verdict, as JSON."""
    out = []
    for argv in (["list", "--json"], *(["verdict", i, "--json"] for i in ids)):
        capsys.readouterr()
        code = cli_main(["--home", str(me.root), *argv])
        got = capsys.readouterr()
        assert code == 0, (argv, got.err)
        assert "Traceback" not in got.err, got.err
        out.append(got.out)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("damaged")
    me, alice, eve = (Home.init(root / n, n) for n in ("me", "alice", "eve"))
    pair(me, "alice", alice)
    ids = []
    for n, (who, sender) in enumerate((("alice1", alice), ("alice2", alice), ("eve", eve))):
        f = root / f"{who}.txt"
        f.write_text(f"from {who}\n" * (n + 1))
        (root / "sub").mkdir(exist_ok=True)
        g = root / "sub" / f"{who}-notes.md"
        g.write_text("notes\n")
        m, _ = send.create(sender, [f, root / "sub"], kind="share", subject=who, copy_to=root / "wire")
        ids.append(arrive(me, root / "wire" / m.id).id)
    gate.accept(me, ids[1])
    f = root / "mine.txt"
    f.write_text("mine\n")
    ids.append(send.create(me, [f], kind="share", subject="mine")[0].id)
    authority = me.authority_path
    authority.write_text('[[grant]]\ncontact = "alice"\nkind = "share"\nmay = "Summarise it."\n')
    time.sleep(RACY)
    yield World(me, ids, {})


@pytest.fixture(scope="module")
def truth(world: World) -> list[str]:
    """The answers with no cache at all, then every cache made (two listings: the second keeps rows)."""
    capsys = _Capture()
    shutil.rmtree(world.cache)
    world.cache.mkdir()
    want = capsys.answers(world)
    shutil.rmtree(world.cache)
    world.cache.mkdir()
    assert capsys.answers(world) == want
    assert capsys.answers(world) == want
    world.snapshot.update({f.name: f.read_bytes() for f in world.cache.iterdir()})
    for name in ("rows.sqlite", "checks.json", "journal-index.sqlite", "reconciled.json"):
        assert name in world.snapshot, sorted(world.snapshot)
    with sqlite3.connect(world.cache / "rows.sqlite") as db:
        assert {n for (n,) in db.execute("SELECT name FROM parsed")} == {"contacts.toml", "authority.toml"}
    db.close()
    return want


class _Capture:
    """Module-scoped answers (capsys is per test): stdout and stderr taken with redirection."""

    def answers(self, world: World) -> list[str]:
        import contextlib
        import io

        out = []
        for argv in (["list", "--json"], *(["verdict", i, "--json"] for i in world.ids)):
            o, e = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
                code = cli_main(["--home", str(world.me.root), *argv])
            assert code == 0, (argv, e.getvalue())
            out.append(o.getvalue())
        return out


# --- the damage ---------------------------------------------------------------------------------

Damage = Callable[[World], None]
WRONG: list[object] = [None, 5, "x", [], {}, [1, "x"], {"x": 1}, True, -1.5]


def _sql(world: World, name: str, statement: str, *args: object) -> None:
    with sqlite3.connect(world.cache / name) as db:
        db.execute(statement, args)
    db.close()


def _json_file(name: str, change: Callable[[object], object]) -> Damage:
    def apply(world: World) -> None:
        path = world.cache / name
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    return apply


def _set(path: tuple[object, ...], value: object) -> Callable[[object], object]:
    def change(doc: object) -> object:
        at = doc
        for p in path[:-1]:
            at = at[p]  # type: ignore[index]
        at[path[-1]] = value  # type: ignore[index]
        return doc

    return change


def _drop(path: tuple[object, ...]) -> Callable[[object], object]:
    def change(doc: object) -> object:
        at = doc
        for p in path[:-1]:
            at = at[p]  # type: ignore[index]
        del at[path[-1]]  # type: ignore[index,attr-defined]
        return doc

    return change


def _rows(change: Callable[[list[object]], object], *, reseal: bool) -> Damage:
    """Every kept row's sealed parts ([digest, parent, entries, warnings, row]) changed; with
    `reseal`, the seal made again with the home's own cache key (a row planted by someone who can
    read it: only the shape check stands between it and a listing)."""

    def apply(world: World) -> None:
        key = (world.me.root / sealkey.KEY_FILE).read_bytes()
        with sqlite3.connect(world.cache / "rows.sqlite") as db:
            for state, bid, parent, stats, data, gen in db.execute("SELECT state, id, parent, stats, data, generation FROM rows").fetchall():
                text = json.dumps(change(json.loads(data)))
                seal = rowindex.row_seal(key, gen, state, bid, parent, text, stats) if reseal else None
                db.execute("UPDATE rows SET data = ?, seal = coalesce(?, seal) WHERE state = ? AND id = ?", (text, seal, state, bid))
        db.close()

    return apply


def _in_row(change: Callable[[dict[str, object]], object]) -> Callable[[list[object]], object]:
    def apply(parts: list[object]) -> object:
        return [*parts[:4], change(parts[4])]  # type: ignore[arg-type]

    return apply


def _row_field(field: str, value: object) -> Callable[[dict[str, object]], object]:
    def change(row: dict[str, object]) -> object:
        return {**row, field: value}

    return change


def _sender_field(field: str, value: object) -> Callable[[dict[str, object]], object]:
    def change(row: dict[str, object]) -> object:
        return {**row, "sender": {**row["sender"], field: value}}  # type: ignore[dict-item]

    return change


ROW_FIELDS = ("id", "state", "level", "kind", "subject", "created", "arrived", "size", "via", "accepted_how", "sender_label", "sender")
SENDER_FIELDS = ("key", "fingerprint", "name", "status", "claimed_name", "signature_ok", "is_me", "scheme")


def _row_index_damage() -> Iterator[tuple[str, Damage]]:
    for reseal in (False, True):
        how = "resealed" if reseal else "in place"

        def row(change: Callable[[dict[str, object]], object], reseal: bool = reseal) -> Damage:
            return _rows(_in_row(change), reseal=reseal)

        yield f"rows ({how}): parts {{}}", _rows(lambda p: {}, reseal=reseal)
        yield f"rows ({how}): parts []", _rows(lambda p: [], reseal=reseal)
        yield f"rows ({how}): parts with an extra field", _rows(lambda p: [*p, 1], reseal=reseal)  # type: ignore[misc]
        for n, part in enumerate(("digest", "parent", "entries", "warnings")):
            for i, v in enumerate(WRONG):
                yield f"rows ({how}): {part} = wrong[{i}]", _rows(lambda p, n=n, v=v: [*p[:n], v, *p[n + 1 :]], reseal=reseal)  # type: ignore[index,misc]
        yield f"rows ({how}): entries [5]", _rows(lambda p: [*p[:2], [5], *p[3:]], reseal=reseal)  # type: ignore[index,misc]
        yield f"rows ({how}): entries one more", _rows(lambda p: [*p[:2], [*p[2], "x"], *p[3:]], reseal=reseal)  # type: ignore[index,misc]
        yield f"rows ({how}): a warning of the wrong shape", _rows(lambda p: [*p[:3], [["payload", "x"]], p[4]], reseal=reseal)  # type: ignore[index,misc]
        yield f"rows ({how}): row {{}}", row(lambda r: {})
        yield f"rows ({how}): row []", row(lambda r: [])
        yield f"rows ({how}): row a string", row(lambda r: "row")
        yield f"rows ({how}): row with an extra field", row(lambda r: {**r, "extra": 1})
        for f in ROW_FIELDS:
            yield f"rows ({how}): row without {f}", row(lambda r, f=f: {k: v for k, v in r.items() if k != f})
            for i, v in enumerate(WRONG):
                if not (reseal and type(v) in rowindex.ROW_TYPES[f]):  # a well-formed plant: see below
                    yield f"rows ({how}): row {f} = wrong[{i}]", row(_row_field(f, v))
        yield f"rows ({how}): sender {{}}", row(_row_field("sender", {}))
        yield f"rows ({how}): sender with an extra field", row(lambda r: {**r, "sender": {**r["sender"], "extra": 1}})  # type: ignore[dict-item]
        for f in SENDER_FIELDS:
            for i, v in enumerate(WRONG):
                if not (reseal and type(v) in rowindex.SENDER_TYPES[f]):
                    yield f"rows ({how}): sender {f} = wrong[{i}]", row(_sender_field(f, v))
    # Well formed but not what was computed: only the seal can tell (a resealed one is a plant
    # by someone who could as well edit contacts.toml; threat-model.md, "Caches").
    yield "rows (in place): a verdict well formed but not computed", _rows(_in_row(_row_field("level", "verified")), reseal=False)
    yield "rows (in place): a subject well formed but not computed", _rows(_in_row(_row_field("subject", "planted")), reseal=False)
    yield "rows (in place): a sender named, well formed", _rows(_in_row(_sender_field("name", "alice")), reseal=False)
    yield "rows (in place): a planted warning", _rows(lambda p: [*p[:3], [["payload", "x", "planted", None]], p[4]], reseal=False)  # type: ignore[index,misc]
    for column in ("data", "parent", "arrived", "stats", "seal"):
        for i, v in enumerate(WRONG):
            text = json.dumps(v)
            yield f"rows: {column} = wrong[{i}] as JSON", lambda w, c=column, t=text: _sql(w, "rows.sqlite", f"UPDATE rows SET {c} = ?", t)
        yield f"rows: {column} = 5 as an integer", lambda w, c=column: _sql(w, "rows.sqlite", f"UPDATE rows SET {c} = 5")
        yield f"rows: {column} = a blob", lambda w, c=column: _sql(w, "rows.sqlite", f"UPDATE rows SET {c} = x'00ff'")
    yield "rows: a stat value changed", lambda w: _sql(w, "rows.sqlite", "UPDATE rows SET stats = zeroblob(length(stats))")
    yield "rows: state swapped", lambda w: _sql(w, "rows.sqlite", "UPDATE OR IGNORE rows SET state = 'accepted' WHERE state = 'pending'")
    yield "rows: id swapped", lambda w: _sql(w, "rows.sqlite", "UPDATE OR IGNORE rows SET id = 'f' || substr(id, 2)")
    for k in ("format", "generation", "journal_at", "journal_last"):
        for v in ("x", "-5", "99999999999", "", "0"):
            yield f"rows: meta {k} = {v!r}", lambda w, k=k, v=v: _sql(w, "rows.sqlite", "UPDATE meta SET v = ? WHERE k = ?", v, k)
        yield f"rows: meta {k} an integer", lambda w, k=k: _sql(w, "rows.sqlite", "UPDATE meta SET v = 5 WHERE k = ?", k)
    yield "rows: user_version", lambda w: _sql(w, "rows.sqlite", "PRAGMA user_version = 77")


def _check_cache_damage() -> Iterator[tuple[str, Damage]]:
    def each_entry(change: Callable[[list[object]], object]) -> Damage:
        return _json_file("checks.json", lambda d: {**d, "entries": {k: change(list(v)) for k, v in d["entries"].items()}})  # type: ignore[index,union-attr]

    yield "checks: file []", _json_file("checks.json", lambda d: [])
    yield "checks: entries []", _json_file("checks.json", _set(("entries",), []))
    yield "checks: entries 5", _json_file("checks.json", _set(("entries",), 5))
    yield "checks: home other", _json_file("checks.json", _set(("home",), "/elsewhere"))
    yield "checks: entry {}", each_entry(lambda e: {})
    yield "checks: entry []", each_entry(lambda e: [])
    yield "checks: entry a five-letter string", each_entry(lambda e: "abcde")
    yield "checks: entry with an extra field", each_entry(lambda e: [*e, 1])
    for i in range(5):
        for j, v in enumerate(WRONG):
            yield f"checks: entry[{i}] = wrong[{j}]", each_entry(lambda e, i=i, v=v: [*e[:i], v, *e[i + 1 :]])
    yield "checks: a planted warning", each_entry(lambda e: [*e[:4], [["payload", "x", "planted", None]]])
    yield "checks: a warning of the wrong shape", each_entry(lambda e: [*e[:4], [["payload", "x"]]])


def _parsed(name: str, change: Callable[[object], object]) -> Damage:
    """The kept parse of `name` (in rows.sqlite) with its document changed in place."""

    def apply(world: World) -> None:
        with sqlite3.connect(world.cache / "rows.sqlite") as db:
            (doc,) = db.execute("SELECT doc FROM parsed WHERE name = ?", (name,)).fetchone()
            db.execute("UPDATE parsed SET doc = ? WHERE name = ?", (json.dumps(change(json.loads(doc))), name))
        db.close()

    return apply


def _memo_damage(name: str) -> Iterator[tuple[str, Damage]]:
    yield f"{name} parse: doc not JSON", lambda w: _sql(w, "rows.sqlite", "UPDATE parsed SET doc = '{[' WHERE name = ?", name)
    yield f"{name} parse: doc {{}}", _parsed(name, lambda d: {})
    yield f"{name} parse: doc []", _parsed(name, lambda d: [])
    yield f"{name} parse: doc with an extra field", _parsed(name, lambda d: {**d, "extra": 1})  # type: ignore[dict-item]
    key = "contact" if name == "contacts.toml" else "grant"
    for j, v in enumerate(WRONG):
        yield f"{name} parse: doc.{key} = wrong[{j}]", _parsed(name, _set((key,), v))
    yield f"{name} parse: doc.{key} emptied", _parsed(name, _set((key,), []))
    for column in ("text_sha", "parser", "doc", "seal"):
        for v in ("x", 5, b"\x00" * 16, None):
            yield f"{name} parse: {column} = {v!r}", lambda w, c=column, v=v: _sql(w, "rows.sqlite", f"UPDATE parsed SET {c} = ? WHERE name = ?", v, name)

    def another_files(world: World) -> None:
        _sql(world, "rows.sqlite", "DELETE FROM parsed WHERE name = ?", name)
        _sql(world, "rows.sqlite", "UPDATE parsed SET name = ?", name)

    yield f"{name} parse: another file's", another_files


def _marker_damage() -> Iterator[tuple[str, Damage]]:
    yield "marker: []", _json_file("reconciled.json", lambda d: [])
    for k in ("folders", "journal", "home", "format"):
        for j, v in enumerate(WRONG):
            yield f"marker: {k} = wrong[{j}]", _json_file("reconciled.json", _set((k,), v))
        yield f"marker: without {k}", _json_file("reconciled.json", _drop((k,)))
    yield "marker: pending folder []", _json_file("reconciled.json", _set(("folders", "pending"), []))
    yield "marker: with an extra field", _json_file("reconciled.json", lambda d: {**d, "extra": 1})  # type: ignore[dict-item]


def _journal_index_damage() -> Iterator[tuple[str, Damage]]:
    name = "journal-index.sqlite"
    for column in ("version", "dev", "ino", "covered", "last_start", "last_hash", "ctime_ns", "sent_count"):
        for v in ("x", -1, 0, 99999999999):
            yield f"journal index: state {column} = {v!r}", lambda w, c=column, v=v: _sql(w, name, f"UPDATE state SET {c} = ?", v)
        yield f"journal index: state {column} = a blob", lambda w, c=column: _sql(w, name, f"UPDATE state SET {c} = x'00ff'")
    for column in ("decision", "location", "received", "first_received", "transport", "accepted_how", "sent", "arrival"):
        for v in ("x", 5, "accepted", "rejected", "2000-01-01T00:00:00Z"):
            yield f"journal index: bundle {column} = {v!r}", lambda w, c=column, v=v: _sql(w, name, f"UPDATE OR IGNORE bundle SET {c} = ?", v)
        for blob in (b"[]", b"{}", b"5", b"\xff", b'{"carrier": 5}'):
            yield f"journal index: bundle {column} = blob {blob!r}", lambda w, c=column, b=blob: _sql(w, name, f"UPDATE OR IGNORE bundle SET {c} = ?", b)
        yield f"journal index: bundle {column} = null", lambda w, c=column: _sql(w, name, f"UPDATE OR IGNORE bundle SET {c} = NULL")
    yield "journal index: bundles forgotten", lambda w: _sql(w, name, "DELETE FROM bundle")  # see KNOWN_LIMITS
    yield "journal index: a planted bundle", lambda w: _sql(w, name, "INSERT OR IGNORE INTO bundle (id, decision, received) VALUES (x'00', 'accepted', 1)")
    yield "journal index: threads", lambda w: _sql(w, name, "UPDATE thread SET unattended = 99")


def _planted() -> Iterator[tuple[str, Damage]]:
    def from_other_home(world: World) -> None:
        other = world.me.root.parent / "eve" / "cache"
        for f in other.iterdir():
            shutil.copyfile(f, world.cache / f.name)

    yield "planted: every cache of another home", from_other_home

    def garbage(world: World) -> None:
        for f in world.cache.iterdir():
            f.write_bytes(b"\x00garbage{[" * 50)

    yield "planted: garbage in every cache", garbage


DAMAGE = dict(
    [
        *_row_index_damage(),
        *_check_cache_damage(),
        *_memo_damage("contacts.toml"),
        *_memo_damage("authority.toml"),
        *_marker_damage(),
        *_journal_index_damage(),
        *_planted(),
    ]
)


# Rows deleted from the journal index are not seen: the index then says the journal never named
# those bundles. Seeing it would take a count of the table on every command (3 ms warm, 40 ms cold,
# at 70,000 bundles), which a verdict's start-up does not pay today.
KNOWN_LIMITS = {"journal index: bundles forgotten"}


@pytest.mark.parametrize(
    "what", [pytest.param(w, marks=pytest.mark.xfail(strict=True, reason="not seen; see KNOWN_LIMITS")) if w in KNOWN_LIMITS else w for w in sorted(DAMAGE)]
)
def test_a_damaged_cache_costs_only_a_recomputation(world: World, truth: list[str], what: str, capsys: pytest.CaptureFixture[str]) -> None:
    world.restore()
    try:
        DAMAGE[what](world)
    except sqlite3.IntegrityError:
        pytest.skip("the database's own constraints refuse this damage")
    assert answers(world.me, world.ids, capsys) == truth
    # And the caches made again from the damage serve the same answers.
    assert answers(world.me, world.ids, capsys) == truth


def _well_formed_plants() -> Iterator[tuple[str, Damage]]:
    for fields, change in ((rowindex.ROW_TYPES, _row_field), (rowindex.SENDER_TYPES, _sender_field)):
        for f, allowed in fields.items():
            for i, v in enumerate(WRONG):
                if type(v) in allowed and f not in ("id", "state"):
                    yield f"rows (resealed): {f} = wrong[{i}]", _rows(_in_row(change(f, v)), reseal=True)


PLANTS = dict(_well_formed_plants())


@pytest.mark.parametrize("what", sorted(PLANTS))
def test_a_well_formed_row_planted_with_its_seal_never_fails_a_command(
    world: World, truth: list[str], what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whoever can write the home can plant a row with its seal, as they can edit contacts.toml
    (threat-model.md, "Caches"): what such a row says is not checked, but it never makes a
    listing or a verdict fail, and the verdict (computed, never taken from a row) is unchanged."""
    world.restore()
    PLANTS[what](world)
    got = answers(world.me, world.ids, capsys)
    assert sorted(r["id"] for r in json.loads(got[0])) == sorted(r["id"] for r in json.loads(truth[0]))
    assert got[1:] == truth[1:]


def test_the_damage_reaches_every_cache(world: World, truth: list[str]) -> None:
    """The cases cover every file a listing and a verdict keep in cache/."""
    caches = {"rows.sqlite", "checks.json", "journal-index.sqlite", "reconciled.json"}
    # The probe the racy rule stamps to read the file system's clock holds nothing that is read
    # (its ctime is the kernel's); tests/test_fsclock.py plants a link, FIFO and folder there.
    kept = {n for n in world.snapshot if not n.endswith(("-wal", "-shm")) and n != "clock"}
    assert kept <= caches, kept - caches
