"""The outbox: a delivery whose way is not there waits in the home and goes when the way is back.

With a real nats-server stopped and started again: `deliver` to a relay that is down keeps the
delivery (exit 16, one line), `gage watch` sends it once the relay is back, and the receiver
gets it once. Refusals time cannot fix are never kept; a contact removed while it waits
cancels it; a key changed while it waits is followed, never sealed under the old binding; a
delivery file damaged by hand is named and skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gagetest import pair, stop_process
from relaytest import bundle, open_mailbox, own_relay  # noqa: F401  (fixture)

from gage.carriers import outbox
from gage.carriers.relay import mailbox
from gage.format.errors import Exit
from gage.home import sealing, sendqueue, whereabouts
from gage.home.layout import Home


def _linked(make_home, url: str) -> tuple[Home, Home, str]:
    """alice, and bob with a mailbox on the relay at `url`, each a confirmed contact of the other."""
    alice, bob = make_home("alice"), make_home("bob")
    address = open_mailbox(bob, url)
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    with bob.lock():
        b = sealing.ensure(bob.root, bob.identity.secret).binding
    whereabouts.remember(alice, whereabouts.from_binding(b, relay=url, source="key file"))
    return alice, bob, address


def _events(home: Home, event: str) -> list[dict]:
    return [e for e in home.journal.entries() if e["event"] == event]


def _arrivals(bob: Home, bid: str) -> list[dict]:
    return [e for e in bob.journal.entries() if e["event"] in ("imported", "received") and e.get("bundle") == bid]


def _read_until(proc: subprocess.Popen, kind: str, timeout: float) -> list[dict]:
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if seen[-1]["kind"] == kind:
            return seen
    raise AssertionError(f"no {kind!r} event in {timeout} s: {seen}")


def test_a_relay_down_keeps_the_delivery_and_watch_sends_it_when_the_relay_is_back(make_home, gage, own_relay, tmp_path: Path) -> None:  # noqa: F811
    srv = own_relay
    try:
        alice, bob, address = _linked(make_home, srv.url)
        bid = bundle(alice, tmp_path)
        srv.stop(kill=True)
        r = gage(alice, "deliver", bid, "--to", "bob")
        assert r.code == Exit.QUEUED == 16, r.err
        assert r.out.startswith("queued for bob's mailbox: the relay is not reachable; it goes when it is")
        assert r.out.count("\n") == 1
        listed = json.loads(gage(alice, "outbox", "--json").out)["deliveries"]
        assert [(d["bundle"], d["to"], d["route"], d["state"], d["tries"]) for d in listed] == [(bid, "bob", "mailbox", "queued", 1)]
        assert "cannot reach the relay" in listed[0]["last_error"] and listed[0]["age_seconds"] >= 0
        queued = _events(alice, "delivery-queued")
        assert [(e["bundle"], e["contact"], e["route"], e["delivery"]) for e in queued] == [(bid, "bob", "mailbox", listed[0]["id"])]
        row = json.loads(gage(alice, "list", "--sent", "--json").out)[0]
        assert row["id"] == bid and row["delivery"]["state"] == "queued" and row["delivery"]["deliveries"][0]["to"] == "bob"

        srv.start()  # the relay comes back, on the same port, with its store
        proc = subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", "--home", str(alice.root), "watch", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            seen = _read_until(proc, "delivered", 60)
        finally:
            stop_process(proc)
        assert any(e["kind"] == "delivered" and e["id"] == bid for e in seen)
        done = _events(alice, "delivered")
        assert len(done) == 1 and done[0]["ack"] == "relay" and done[0]["target"] == address and done[0]["tries"] == 2
        assert json.loads(gage(alice, "outbox", "--json").out)["deliveries"] == []  # nothing waits
        every = json.loads(gage(alice, "outbox", "--all", "--json").out)["deliveries"]
        assert [d["state"] for d in every] == ["delivered"] and every[0]["ack"]["ack"] == "relay"
        assert json.loads(gage(alice, "list", "--sent", "--json").out)[0]["delivery"]["state"] == "delivered"
        got = mailbox.run(mailbox.fetch(bob, srv.url, address))
        assert [o.id for o in got.opened] == [bid] and len(_arrivals(bob, bid)) == 1
    finally:
        srv.stop(kill=True)


def test_now_fails_fast_and_keeps_nothing(make_home, gage, tmp_path: Path) -> None:
    alice, _bob = _linked_to_nowhere(make_home)
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob", "--now")
    assert r.code == Exit.RELAY and "cannot reach the relay" in r.err
    assert sendqueue.load_all(alice) == ([], []) and not _events(alice, "delivery-queued")
    drop = tmp_path / "synced"
    drop.mkdir()
    assert gage(alice, "contacts", "where", "bob", "--folder", str(drop)).code == 0
    assert gage(alice, "deliver", bid, "--to", "bob", "--via", "folder", "--now").code == 0  # delivered: kept as done
    (d,) = sendqueue.load_all(alice)[0]
    (line,) = _events(alice, "delivered")
    assert d.state == "delivered" and line["delivery"] == d.id and line["ack"] == "folder-rename"


def _linked_to_nowhere(make_home) -> tuple[Home, Home]:
    """alice knows bob's mailbox on a relay nobody runs (port 1)."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    with bob.lock():
        b = sealing.ensure(bob.root, bob.identity.secret).binding
    whereabouts.remember(alice, whereabouts.from_binding(b, relay="nats://127.0.0.1:1", source="key file"))
    return alice, bob


def test_a_refusal_time_cannot_fix_is_never_kept(make_home, gage, own_relay, tmp_path: Path) -> None:  # noqa: F811
    srv = own_relay
    try:
        alice, bob = make_home("alice"), make_home("bob")
        open_mailbox(bob, srv.url, max_msgs=1)
        pair(alice, "bob", bob)
        with bob.lock():
            b = sealing.ensure(bob.root, bob.identity.secret).binding
        whereabouts.remember(alice, whereabouts.from_binding(b, relay=srv.url, source="key file"))
        first, second = bundle(alice, tmp_path, name="a.txt"), bundle(alice, tmp_path, name="b.txt")
        assert gage(alice, "deliver", first, "--to", "bob").code == 0
        r = gage(alice, "deliver", second, "--to", "bob")  # over the receiver's limits: fails as before
        assert r.code == Exit.RELAY and "mailbox is full" in r.err
        assert [d.state for d in sendqueue.load_all(alice)[0]] == ["delivered"]  # the first, done; the second not kept
        carol = make_home("carol")
        from gage.trust import ceremony

        ceremony.add_candidate(alice, carol.identity.key, "carol", "test")
        r = gage(alice, "deliver", first, "--to", "carol")  # a candidate: refused, not kept
        assert r.code == Exit.REFUSED and len(sendqueue.load_all(alice)[0]) == 1
        assert not _events(alice, "delivery-queued")
    finally:
        srv.stop(kill=True)


def _queued_to_a_missing_folder(make_home, gage, tmp_path: Path, n: int = 1) -> tuple[Home, Home, Path, list[str]]:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "not-mounted"
    drop.mkdir()
    assert gage(alice, "contacts", "where", "bob", "--folder", str(drop)).code == 0
    drop.rmdir()
    ids = []
    for i in range(n):
        bid = bundle(alice, tmp_path, name=f"n{i}.txt")
        r = gage(alice, "deliver", bid, "--to", "bob")
        assert r.code == Exit.QUEUED and "queued for bob's drop folder: the drop folder is not there" in r.out
        ids.append(bid)
    return alice, bob, drop, ids


def test_oldest_first_and_the_back_off_is_bounded(make_home, gage, tmp_path: Path) -> None:
    assert outbox.backoff(1) <= 5 and max(outbox.backoff(n) for n in range(1, 50)) <= 180
    assert [outbox.backoff(n) for n in range(1, 10)] == sorted(outbox.backoff(n) for n in range(1, 10))
    alice, _bob, drop, ids = _queued_to_a_missing_folder(make_home, gage, tmp_path, n=3)
    assert outbox.send_waiting(alice) == []  # none is due yet: each waits out its back-off
    drop.mkdir()  # the disk is mounted again
    done = outbox.send_waiting(alice, force=True)
    assert [o.delivery.bundle for o in done] == ids and all(o.state == "delivered" for o in done)
    assert sorted(os.listdir(drop)) == sorted(ids)
    assert [e["ack"] for e in _events(alice, "delivered")] == ["folder-rename"] * 3


def test_a_contact_removed_while_it_waits_cancels_it_with_a_journal_line(make_home, gage, tmp_path: Path) -> None:
    alice, _bob, drop, (bid,) = _queued_to_a_missing_folder(make_home, gage, tmp_path)
    assert gage(alice, "contacts", "remove", "bob").code == 0
    drop.mkdir()
    r = gage(alice, "outbox", "send")
    assert r.code == Exit.REFUSED and "is cancelled" in r.out
    (line,) = _events(alice, "delivery-cancelled")
    assert line["bundle"] == bid and line["by"] == "gage" and "no confirmed contact named 'bob'" in line["why"]
    assert os.listdir(drop) == [] and json.loads(gage(alice, "outbox", "--json").out)["deliveries"] == []
    assert json.loads(gage(alice, "list", "--sent", "--json").out)[0]["delivery"]["state"] == "cancelled"


def test_the_person_cancels_and_nothing_more_is_tried(make_home, gage, tmp_path: Path) -> None:
    alice, _bob, drop, (bid,) = _queued_to_a_missing_folder(make_home, gage, tmp_path)
    (d,) = sendqueue.load_all(alice)[0]
    assert gage(alice, "outbox", "cancel", d.id[:6]).code == 0
    assert [e["by"] for e in _events(alice, "delivery-cancelled")] == ["person"]
    drop.mkdir()
    assert outbox.send_waiting(alice, force=True) == [] and os.listdir(drop) == []
    assert gage(alice, "outbox", "cancel", d.id).code == Exit.REFUSED  # not waiting any more
    assert gage(alice, "outbox", "cancel", "ffff0000").code == Exit.NOT_FOUND


def test_a_key_changed_while_it_waits_is_followed_never_the_old_binding(make_home, gage, own_relay, tmp_path: Path) -> None:  # noqa: F811
    srv = own_relay
    try:
        alice, old_bob = make_home("alice"), make_home("bob")
        old_address = open_mailbox(old_bob, srv.url)
        pair(alice, "bob", old_bob)
        with old_bob.lock():
            b = sealing.ensure(old_bob.root, old_bob.identity.secret).binding
        # bob's old mailbox is on a relay that is down when alice delivers: it waits.
        whereabouts.remember(alice, whereabouts.from_binding(b, relay="nats://127.0.0.1:1", source="key file"))
        bid = bundle(alice, tmp_path)
        assert gage(alice, "deliver", bid, "--to", "bob").code == Exit.QUEUED
        # bob has a new key (a new home), confirmed by the ceremony, and a mailbox on the live relay.
        new_bob = make_home("bob2")
        new_address = open_mailbox(new_bob, srv.url)
        assert gage(alice, "contacts", "remove", "bob").code == 0
        pair(alice, "bob", new_bob)
        with new_bob.lock():
            nb = sealing.ensure(new_bob.root, new_bob.identity.secret).binding
        whereabouts.remember(alice, whereabouts.from_binding(nb, relay=srv.url, source="key file"))
        r = gage(alice, "outbox", "send", "--json")
        assert r.code == 0, r.err
        (line,) = _events(alice, "delivered")
        assert line["target"] == new_address and line["followed"] == old_bob.identity.key_text
        assert line["key"] == new_bob.identity.key_text
        assert [o.id for o in mailbox.run(mailbox.fetch(new_bob, srv.url, new_address)).opened] == [bid]
        assert mailbox.run(mailbox.fetch(old_bob, srv.url, old_address)).opened == []  # nothing under the old binding
    finally:
        srv.stop(kill=True)


def test_a_damaged_delivery_file_is_named_and_skipped_never_sent(make_home, gage, tmp_path: Path) -> None:
    alice, _bob, drop, ids = _queued_to_a_missing_folder(make_home, gage, tmp_path, n=2)
    first, second = sendqueue.load_all(alice)[0]
    bad = sendqueue.path_of(alice, first.id)
    bad.write_bytes(bad.read_bytes()[:40])  # cut short by hand
    r = gage(alice, "outbox")
    assert r.code == Exit.MALFORMED and str(bad) in r.err and "skipped" in r.err
    assert second.id[:8] in r.out and first.id[:8] not in r.out
    drop.mkdir()
    r = gage(alice, "outbox", "send")
    assert str(bad) in r.err and os.listdir(drop) == [ids[1]]  # the whole one went; the damaged one did not
    edited = json.loads(sendqueue.path_of(alice, second.id).read_bytes())
    edited["state"] = "queued"
    edited["route"] = "carrier-pigeon"
    sendqueue.path_of(alice, second.id).write_text(json.dumps(edited))
    r = gage(alice, "outbox", "--all")
    assert r.code == Exit.MALFORMED and "field route" in r.err


@pytest.mark.parametrize("step", ["queued", "sealing", "publishing", "acknowledged", "journaled"])
def test_a_kill_9_at_any_step_leaves_it_queued_or_done_and_it_arrives_once(make_home, own_relay, tmp_path: Path, step: str) -> None:  # noqa: F811
    srv = own_relay
    try:
        alice, bob, address = _linked(make_home, srv.url)
        bid = bundle(alice, tmp_path)
        killed = subprocess.run(
            [sys.executable, "-m", "gage.cli.main", "--home", str(alice.root), "deliver", bid, "--to", "bob"],
            capture_output=True, text=True, timeout=60, env={**os.environ, "GAGE_TEST_KILL_AT": step},
        )
        assert killed.returncode == -9, (killed.returncode, killed.stderr)
        (d,) = sendqueue.load_all(alice)[0]
        assert d.waiting  # never lost: it waits (a try was cut short), or ...
        journaled = _events(alice, "delivered")
        assert len(journaled) == (1 if step == "journaled" else 0)  # ... its line is there, and it is found
        again = subprocess.run(
            [sys.executable, "-m", "gage.cli.main", "--home", str(alice.root), "outbox", "send", "--json"],
            capture_output=True, text=True, timeout=60,
        )
        assert again.returncode == 0, again.stderr
        (d,) = sendqueue.load_all(alice)[0]
        assert d.state == "delivered"
        lines = _events(alice, "delivered")
        assert len(lines) == 1 and lines[0]["delivery"] == d.id and lines[0]["ack"] == "relay"
        if step == "acknowledged":  # the relay had it: the try after the crash is its duplicate, stored once
            assert lines[0]["duplicate"] is True
        got = mailbox.run(mailbox.fetch(bob, srv.url, address))
        assert [o.id for o in got.opened] == [bid]
        assert len(_arrivals(bob, bid)) == 1  # once: never twice
    finally:
        srv.stop(kill=True)


def test_a_key_retired_while_it_waits_cancels_it_never_sent_to_the_retired_key(make_home, gage, tmp_path: Path) -> None:
    alice, bob, drop, (bid,) = _queued_to_a_missing_folder(make_home, gage, tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    r = gage(bob, "key", "retire", "--reason", "compromised", "-o", str(shared), "--json")
    assert r.code == 0, r.err
    (statement,) = os.listdir(shared)
    assert gage(alice, "import", str(shared / statement)).code == 0  # the statement applies as it arrives
    assert [e["contact"] for e in _events(alice, "key-statement-applied")] == ["bob"]
    drop.mkdir()
    r = gage(alice, "outbox", "send", "--json")
    assert r.code == Exit.REFUSED, r.err
    (line,) = _events(alice, "delivery-cancelled")
    assert line["bundle"] == bid and "retired" in line["why"] and os.listdir(drop) == []


def test_an_agent_asleep_keeps_it_and_it_goes_when_the_agent_answers(make_home, gage, tmp_path: Path) -> None:
    from gage.carriers.a2a import server as a2a_server
    from gage.home import listing

    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    srv = a2a_server.Server(bob, host="127.0.0.1", port=0, on_event=lambda _: None).start()
    url = srv.url
    srv.stop(timeout=5)  # asleep
    assert gage(alice, "contacts", "where", "bob", "--a2a", url).code == 0
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == Exit.QUEUED and "queued for bob's A2A agent: the agent is not answering" in r.out
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    srv = a2a_server.Server(bob, host="127.0.0.1", port=port, on_event=lambda _: None).start()
    try:
        r = gage(alice, "outbox", "send")
        assert r.code == 0, r.err
    finally:
        srv.stop(timeout=5)
    (line,) = _events(alice, "delivered")
    assert line["ack"] == "agent" and line["confirmed"] is True and listing.find(bob, bid).state == "pending"


def test_agents_see_the_state_through_mcp_read_only(make_home, gage, tmp_path: Path) -> None:
    from gage.mcp import answers

    alice, _bob, drop, (bid,) = _queued_to_a_missing_folder(make_home, gage, tmp_path)
    (row,) = json.loads(answers.list_bundles(alice, "outbox")[0])["bundles"]
    assert row["id"] == bid and row["delivery"]["state"] == "queued" and row["delivery"]["deliveries"][0]["tries"] == 1
    assert json.loads(gage(alice, "list", "--sent", "--json").out)[0]["delivery"] == row["delivery"]  # the same as `list`
    drop.mkdir()
    outbox.send_waiting(alice, force=True)
    (row,) = json.loads(answers.list_bundles(alice, "outbox")[0])["bundles"]
    assert row["delivery"]["state"] == "delivered"
    text = gage(alice, "list", "--sent").out
    assert bid[:12] in text and "delivered" in text and "bob delivered" in text


def test_delivering_again_what_waits_tries_it_now_and_keeps_one(make_home, gage, tmp_path: Path) -> None:
    alice, _bob, drop, (bid,) = _queued_to_a_missing_folder(make_home, gage, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == Exit.QUEUED
    (d,) = sendqueue.load_all(alice)[0]
    assert d.tries == 2 and len(_events(alice, "delivery-queued")) == 1
    drop.mkdir()
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    (d,) = sendqueue.load_all(alice)[0]
    assert d.state == "delivered" and os.listdir(drop) == [bid]
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0  # done before: a new delivery, "already there"
    assert [x.state for x in sendqueue.load_all(alice)[0]] == ["delivered", "delivered"]
    assert _events(alice, "delivered")[-1]["already_there"] is True


def test_watch_says_when_the_relay_goes_away_and_when_it_is_back(make_home, own_relay, tmp_path: Path) -> None:  # noqa: F811
    import threading

    from gage.carriers.relay import follow

    srv = own_relay
    stop = threading.Event()
    seen: list = []
    try:
        bob = make_home("bob")
        address = open_mailbox(bob, srv.url)
        t = threading.Thread(
            target=follow.follow, args=(bob, srv.url, address),
            kwargs={"creds": None, "budget": None, "on_event": seen.append, "stop": stop}, daemon=True,
        )
        t.start()

        def wait_for(kind: str) -> None:
            deadline = time.monotonic() + 60
            while not any(e.kind == kind for e in seen) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert any(e.kind == kind for e in seen), [(e.kind, e.message) for e in seen]

        time.sleep(1.5)
        srv.stop(kill=True)
        wait_for("error")
        srv.start()
        wait_for("reconnected")
        kinds = [e.kind for e in seen]
        assert kinds.index("error") < kinds.index("reconnected") and kinds.count("error") == 1
        assert "reachable again" in next(e.message for e in seen if e.kind == "reconnected")
    finally:
        stop.set()
        srv.stop(kill=True)
