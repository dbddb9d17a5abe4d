"""A batch that lands bundles keeps their rows in the row index (gage.inbox.listed.keep_landed), so the
first listing after a fetch or an import of thousands computes none of them again; and those rows are
never trusted past what they were computed from: a byte changed the moment after landing, a contact
confirmed, a decision, are each seen by the next listing as by a full recomputation."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gagetest import Run, change_a_byte_keeping_mtime, pair
from test_row_index import kept, recomputed, served_from_index

from gage.format.errors import GageError
from gage.home.cache import checks
from gage.home.layout import Home
from gage.inbox import gate, landmany, send
from gage.inbox.listed import listed_rows
from gage.trust import ceremony


@pytest.fixture(autouse=True)
def shipped_racy_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules as shipped: nothing here moves the process's clock on. Batches of a few keep
    their rows here (shipped: KEEP_ROWS_MIN, tested below), so each test stays small."""
    monkeypatch.setattr(checks, "RACY_NS", 2_000_000_000)
    monkeypatch.setattr(checks, "now_ns", time.time_ns)
    monkeypatch.setattr(landmany, "KEEP_ROWS_MIN", 1)


def wire(make_home: Callable[[str], Home], tmp_path: Path, me: Home, n: int) -> tuple[list[Path], Home, Home]:
    """`n` bundles on the wire: from alice (a contact) and eve (a stranger), in turn."""
    alice, eve = make_home("alice"), make_home("eve")
    pair(me, "alice", alice)
    out = []
    for i in range(n):
        f = tmp_path / f"note{i}.txt"
        f.write_bytes(f"note {i}\n".encode() * (i + 1))
        m, _ = send.create(alice if i % 2 == 0 else eve, [f], kind="share", subject=f"n{i}", copy_to=tmp_path / "wire")
        out.append(tmp_path / "wire" / m.id)
    return out, alice, eve


def keeping_fails(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    from gage.inbox import listed

    def failing(*_a: object, **_k: object) -> int:
        raise exc

    monkeypatch.setattr(listed, "keep_landed", failing)


def land(me: Home, srcs: list[Path]) -> list[str]:
    outcomes = landmany.import_many(me, [landmany.Incoming(s) for s in srcs])
    assert not [o for o in outcomes if isinstance(o, GageError)]
    return [o.id for o in outcomes if isinstance(o, landmany.ImportResult)]


def test_the_first_listing_after_a_batch_computes_no_row(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 6)
    ids = land(me, srcs)
    assert kept(me) == len(ids) == 6
    served = served_from_index(me, monkeypatch)
    assert served == recomputed(me)
    assert {r.level for r in served} == {"verified", "unverified"}


def test_rows_are_kept_batch_by_batch(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 7)
    monkeypatch.setattr(landmany, "BATCH_COUNT", 3)
    counts = []
    real = landmany.keep_rows

    def counting(home: Home, landed: list[object]) -> None:
        real(home, landed)  # type: ignore[arg-type]
        counts.append(kept(home))

    monkeypatch.setattr(landmany, "keep_rows", counting)
    outcomes = landmany.import_many(me, [landmany.Incoming(s) for s in srcs], batch_count=3)
    assert all(isinstance(o, landmany.ImportResult) for o in outcomes)
    assert counts == [3, 6, 7]
    assert served_from_index(me, monkeypatch) == recomputed(me)


def test_a_byte_changed_the_moment_after_landing_is_seen(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 2)
    ids = land(me, srcs)
    change_a_byte_keeping_mtime(next((me.state_dir("pending") / ids[0] / "payload").iterdir()))
    got = listed_rows(me)
    assert got == recomputed(me)
    assert next(r.level for r in got if r.id == ids[0]) == "invalid"


def test_trust_and_decisions_after_landing_are_seen(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    me = make_home("me")
    srcs, _alice, eve = wire(make_home, tmp_path, me, 4)
    ids = land(me, srcs)
    ceremony.confirm(me, "eve", eve.identity.key, " ".join(" ".join(p) for p in ceremony.derive(eve.identity.key)))
    got = listed_rows(me)
    assert got == recomputed(me) and {r.level for r in got} == {"verified"}
    gate.accept(me, ids[1])
    got = listed_rows(me)
    assert got == recomputed(me) and next(r.state for r in got if r.id == ids[1]) == "accepted"


def test_only_what_landed_keeps_a_row(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    """A refusal, a bundle already there and a copy that does not check out keep none."""
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 3)
    land(me, srcs[:1])
    broken = srcs[2]
    f = next((broken / "payload").iterdir())
    f.chmod(0o644)
    f.write_bytes(b"changed on the wire")
    not_a_bundle = tmp_path / "nothing"
    not_a_bundle.mkdir()
    outcomes = landmany.import_many(me, [landmany.Incoming(s) for s in (srcs[0], srcs[1], broken, not_a_bundle)])
    assert isinstance(outcomes[3], GageError)
    assert isinstance(outcomes[2], landmany.ImportResult) and outcomes[2].new  # landed, and invalid
    # srcs[1] alone: srcs[0]'s row, kept by the first batch, is retired by the line saying it came again.
    assert kept(me) == 1
    assert listed_rows(me) == recomputed(me)


def test_a_fault_while_keeping_rows_costs_only_the_next_listings_time(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 3)
    keeping_fails(monkeypatch, OSError(28, "No space left on device"))
    ids = land(me, srcs)
    assert sorted(os.listdir(me.state_dir("pending"))) == sorted(ids)
    assert listed_rows(me) == recomputed(me)


def test_a_batch_of_fewer_than_the_minimum_keeps_no_row(make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone arrival (one import, an A2A delivery) stays as quick as it was: the next listing computes its row."""
    monkeypatch.setattr(landmany, "KEEP_ROWS_MIN", 3)
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 5)
    land(me, srcs[:2])
    assert not (me.cache / "rows.sqlite").exists() or kept(me) == 0
    land(me, srcs[2:])
    assert kept(me) == 3
    assert listed_rows(me) == recomputed(me)


def test_rows_are_kept_after_the_batch_remembers_its_signers(  # noqa: F811
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gage: Callable[..., Run]
) -> None:
    """`gage import DIR...` records each new signer as a candidate (contacts.toml changes, so every row
    kept before it is retired): the batch's rows are kept after that, and the first listing takes them."""
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 4)
    res = gage(me, "import", *map(str, srcs))
    assert res.code == 0, res.err
    assert kept(me) == 4
    served = served_from_index(me, monkeypatch)
    assert served == recomputed(me)
    assert {r.sender["status"] for r in served} == {"confirmed", "candidate"}


def test_an_interrupt_while_keeping_rows_leaves_the_batch_landed_and_journaled(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = make_home("me")
    srcs, _alice, _eve = wire(make_home, tmp_path, me, 3)
    keeping_fails(monkeypatch, KeyboardInterrupt())
    reported: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        landmany.import_many(me, [landmany.Incoming(s) for s in srcs], on_outcome=lambda _i, o: reported.append(o.id))  # type: ignore[union-attr]
    arrived = [e["bundle"] for e in me.journal.entries() if e.get("event") == "imported"]
    assert sorted(arrived) == sorted(reported) == sorted(os.listdir(me.state_dir("pending"))) == sorted(s.name for s in srcs)
    monkeypatch.undo()
    again = landmany.import_many(me, [landmany.Incoming(s) for s in srcs])
    assert all(isinstance(o, landmany.ImportResult) and not o.new for o in again)
    assert listed_rows(me) == recomputed(me)


def test_after_trust_changes_a_listing_takes_each_check_from_its_kept_row(
    make_home: Callable[[str], Home], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A contact confirmed after a fetch retires every row (the trust they were computed under
    changed), not the checks they came from: the next listing verifies again only what changed."""
    me = make_home("me")
    srcs, _alice, eve = wire(make_home, tmp_path, me, 4)
    ids = land(me, srcs)
    change_a_byte_keeping_mtime(next((me.state_dir("pending") / ids[1] / "payload").iterdir()))
    ceremony.confirm(me, "eve", eve.identity.key, " ".join(" ".join(p) for p in ceremony.derive(eve.identity.key)))
    checked: list[str] = []
    real = checks.bundle_mod.check

    def counted(root: Path, *a: object, **k: object) -> object:
        checked.append(Path(root).name)
        return real(root, *a, **k)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(checks.bundle_mod, "check", counted)
        got = listed_rows(me)
    assert checked == [ids[1]]
    assert got == recomputed(me)
    assert {r.id: r.level for r in got} == {ids[0]: "verified", ids[1]: "invalid", ids[2]: "verified", ids[3]: "verified"}
    assert kept(me) == 3  # kept again under the new trust: all but the one that no longer checks out
