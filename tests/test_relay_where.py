"""A contact's "where" (a claim beside the confirmed key) and `gage watch --mailbox`."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from gagetest import pair, stop_process
from relaytest import bundle, open_mailbox, relay  # noqa: F401  (fixtures)

from gage.carriers.relay import dirrecord
from gage.format.keys import key_text
from gage.home import listing, sealing, whereabouts
from gage.home.layout import Home
from gage.inbox import store


def _where_from(home: Home, other: Home, relay_url: str | None, source: str = "key file") -> None:
    key = sealing.load(other.root, other.identity.key)
    whereabouts.remember(home, whereabouts.from_binding(key.binding, relay=relay_url, source=source))


def test_contacts_show_each_keys_where_as_a_claim(make_home, relay, gage) -> None:  # noqa: F811
    alice, bob, carol = make_home("alice"), make_home("bob"), make_home("carol")
    addr = open_mailbox(bob, relay.url)
    open_mailbox(carol, relay.url)
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    from gage.trust import ceremony

    ceremony.add_candidate(alice, carol.identity.key, "carol", "test")
    _where_from(alice, carol, "nats://evil\x1b[31m.example:4222", source="directory \x1b]8;;x\x07")
    r = gage(alice, "contacts")
    assert f"where (a claim, from key file): mailbox {addr} on {relay.url}" in r.out
    assert "\x1b" not in r.out and "\\x1b" in r.out  # a claim's text never reaches the terminal raw
    rows = {row["key"]: row for row in json.loads(gage(alice, "contacts", "--json").out)}
    w = rows[key_text(bob.identity.key)]["where"]
    assert w["status"] == "claim" and w["mailbox"] == addr and w["sealing_bound"] is True
    assert rows[key_text(carol.identity.key)]["status"] == "candidate"


def test_a_where_whose_binding_is_not_the_keys_is_shown_and_not_delivered_to(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob, mallory = make_home("alice"), make_home("bob"), make_home("mallory")
    open_mailbox(bob, relay.url)
    open_mailbox(mallory, relay.url)
    pair(alice, "bob", bob)
    mk = sealing.load(mallory.root, mallory.identity.key).binding
    # a claim filed under bob's key that carries mallory's binding: `remember` ignores it (issue 26) ...
    liar = whereabouts.Where(key=bob.identity.key, mailbox=sealing.mailbox_address(mk.sealing_key), relay=relay.url, sealing=mk, source="liar")
    assert whereabouts.remember(alice, liar) is None and whereabouts.of(alice, bob.identity.key) is None
    # ... so only a where.json edited by hand holds one: shown as such, and never delivered to
    with alice.lock():
        whereabouts._write(alice, {bob.identity.key: liar})
    assert "NOT bound by this key" in gage(alice, "contacts").out
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == 9 and "not bound by their key" in r.err
    assert dirrecord  # (the directory record reader applies the same rule: tests/test_relay_directory.py)


def _read_lines(proc: subprocess.Popen[str], want: str, timeout: float) -> list[dict]:
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if not ready:
            continue
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if any(want in e["message"] for e in seen):
            return seen
    raise AssertionError(f"no line with {want!r}; saw {seen}")


def test_watch_mailbox_lands_live_beside_drop_folders(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    drop = tmp_path / "drop"
    drop.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "watch", "--mailbox", "--drop", str(drop), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
    )
    try:
        _read_lines(proc, "watching mailbox", 30)
        bid = bundle(alice, tmp_path)
        assert gage(alice, "deliver", bid, "--to", "bob").code == 0
        lines = _read_lines(proc, f"received {bid[:12]} from the mailbox", 30)
        assert any(e["kind"] == "imported" and e["id"] == bid for e in lines)
        assert listing.find(bob, bid).state == "pending"  # not accepted: no --unattended, and arrival is not consent
        # a drop-folder arrival in the same watcher
        other = bundle(alice, tmp_path, name="two.txt", data=b"two")
        import shutil

        shutil.copytree(alice.state_dir("outbox") / other, drop / other)
        _read_lines(proc, f"received {other[:12]}", 30)
    finally:
        stop_process(proc)


def test_an_agent_card_carries_the_mailbox_and_pairing_from_it_keeps_the_claim(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    from test_ceremony import run_pair_in_terminal

    from gage.carriers.a2a import card
    from gage.format.words import derive

    alice, bob = make_home("alice"), make_home("bob")
    assert "sealing_binding" not in card.card_extension(bob)["params"]  # no mailbox, no claim of one
    addr = open_mailbox(bob, relay.url)
    params = card.card_extension(bob)["params"]
    assert params["relay"] == relay.url and all(isinstance(v, (str, list)) for v in params.values())
    r = gage(bob, "a2a", "card", "--url", "http://127.0.0.1:8470/", "--json")
    (tmp_path / "bob.card.json").write_text(r.out)
    claim = card.parse_card(r.out.encode(), "bob.card.json")
    assert claim.sealing is not None and claim.relay == relay.url
    words = " ".join(w for p in derive(bob.identity.key) for w in p)
    code, screen = run_pair_in_terminal(alice, ["--card", str(tmp_path / "bob.card.json")], "bob", words)
    assert code == 0, screen
    w = whereabouts.of(alice, bob.identity.key)
    assert w is not None and w.mailbox == addr and w.mailbox_ok() and w.relay == relay.url
    bid = bundle(alice, tmp_path)
    assert gage(alice, "deliver", bid, "--to", "bob").code == 0
    bad = json.loads(r.out)
    ext = bad["capabilities"]["extensions"][0]
    ext["params"]["sealing_signature"] = "00"
    import pytest

    from gage.format.errors import MalformedError

    with pytest.raises(MalformedError, match="sealing.signature"):
        card.parse_card(json.dumps(bad).encode(), "bad.json")


def test_watch_mailbox_unattended_meets_the_same_budgeted_gate(make_home, relay, tmp_path: Path) -> None:  # noqa: F811
    """A reply from a confirmed contact to a bundle bob sent is accepted unattended within the
    budget; anything else from the mailbox stays pending (rule 2: no path skips the gate)."""
    import threading

    from gage.carriers.relay import follow, mailbox
    from gage.inbox import send

    bob, alice = make_home("bob"), make_home("alice")
    addr = open_mailbox(bob, relay.url)
    pair(bob, "alice", alice)
    q = tmp_path / "q.txt"
    q.write_text("question?")
    asked, _ = send.create(bob, [q], kind="question")
    store.import_bundle(alice, bob.state_dir("outbox") / asked.id)  # alice holds the question she answers
    answers = []
    for i in range(2):
        a = tmp_path / f"a{i}.txt"
        a.write_text(f"answer {i}")
        answers.append(send.create(alice, [a], kind="answer", parent=asked.id)[0].id)
    unasked = bundle(alice, tmp_path, name="share.txt")
    key = sealing.load(bob.root, bob.identity.key)
    from gage.carriers.relay import seal

    for bid in [*answers, unasked]:
        p = tmp_path / f"{bid[:8]}.age"
        with open(p, "wb") as f:
            seal.seal_bundle(alice.state_dir("outbox") / bid, key.recipient, f)
        mailbox.run(mailbox.publish(relay.url, addr, p))
    events = []
    stop = threading.Event()
    t = threading.Thread(target=follow.follow, args=(bob, relay.url, addr),
                         kwargs={"creds": None, "budget": 1, "on_event": events.append, "stop": stop})
    t.start()
    deadline = time.monotonic() + 30
    while sum(e.kind == "imported" for e in events) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    t.join(timeout=30)
    states = {bid: listing.find(bob, bid).state for bid in [*answers, unasked]}
    assert states == {answers[0]: "accepted", answers[1]: "pending", unasked: "pending"}
    assert [e.kind for e in events if e.id in answers and e.kind != "imported"] == ["accepted", "budget-spent"]
    assert [e["how"] for e in bob.journal.entries() if e["event"] == "accepted"] == ["unattended"]


def test_relay_dev_prints_its_url_serves_and_stops_on_a_signal(tmp_path: Path) -> None:
    import nats as nats_mod

    proc = subprocess.Popen([sys.executable, "-m", "gage.cli.main", "--home", str(tmp_path / "h"), "relay", "dev", "--port", "0", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert info["url"].startswith("nats://127.0.0.1:")

        async def ping() -> bool:
            nc = await nats_mod.connect(info["url"])
            await nc.jetstream().account_info()  # JetStream is on
            await nc.close()
            return True

        import asyncio

        assert asyncio.run(ping())
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert code == 0
    assert Path(info["store"]) == tmp_path / "h" / "relay-dev" and Path(info["store"]).is_dir()  # kept, in the home (issue 30)
