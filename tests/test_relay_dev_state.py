"""`gage relay dev` keeps its state (issue 30): its store is under the gage home (or `--store DIR`),
and a restart has every mailbox and directory entry; a relay that is down is said within 2 s, exit 15."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gagetest import pair
from relaytest import bundle, open_mailbox

from gage.carriers.relay import server
from gage.format.errors import Exit
from gage.home import sealing, whereabouts
from gage.home.layout import Home


class RelayDev:
    """`gage relay dev` as a person runs it, on a fixed port (the URL settings.toml keeps)."""

    def __init__(self, *args: str) -> None:
        self.args, self.proc = args, None
        self.port = server.free_port()
        self.store_arg: Path | None = None

    def start(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", *self.args, "relay", "dev", "--port", str(self.port), "--json",
             *(("--store", str(self.store_arg)) if self.store_arg else ())],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read() if self.proc.stderr else ""
        got = json.loads(line)
        self.store = Path(got["store"])
        return str(got["url"])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)


def _linked(alice: Home, bob: Home, url: str) -> None:
    """Both mailboxes on the relay, paired, each knowing where the other is (what `gage invite` leaves)."""
    for me in (alice, bob):
        open_mailbox(me, url)
    for me, other, name in ((alice, bob, "bob"), (bob, alice, "alice")):
        pair(me, name, other)
        key = sealing.load(other.root, other.identity.key)
        assert key is not None
        whereabouts.remember(me, whereabouts.from_binding(key.binding, relay=url, source="test"))


def test_relay_dev_stores_under_the_home_and_a_restart_keeps_mailboxes_and_directory(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    dev = RelayDev("--home", str(alice.root))
    try:
        url = dev.start()
        assert dev.store == alice.root / "relay-dev"
        _linked(alice, bob, url)
        assert gage(bob, "directory", "publish", "--handle", "bob").code == 0
        dev.stop()
        assert dev.start() == url  # the same port, the same store
        bid = bundle(alice, tmp_path)
        d = gage(alice, "deliver", bid, "--to", "bob")
        assert d.code == 0, d.err
        f = gage(bob, "mailbox", "fetch", "--json")
        assert [o["id"] for o in json.loads(f.out)["fetched"]] == [bid]
        lk = gage(alice, "directory", "lookup", "bob", "--json")
        assert lk.code == 0, lk.err
        assert json.loads(lk.out)["signing_key"] == bob.identity.key_text
    finally:
        dev.kill()


def test_store_dir_is_kept_where_given(make_home, tmp_path: Path) -> None:
    home = make_home("alice")
    store = tmp_path / "my-store"
    dev = RelayDev("--home", str(home.root))
    dev.store_arg = store
    try:
        dev.start()
        assert dev.store == store
        dev.stop()
        assert (store / "jetstream").is_dir()  # kept after it stopped
        assert not (home.root / "relay-dev").exists()
    finally:
        dev.kill()


def test_deliver_to_a_relay_that_is_down_fails_within_2_seconds_with_exit_15(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    dev = RelayDev("--home", str(alice.root))
    try:
        url = dev.start()
        _linked(alice, bob, url)
    finally:
        dev.kill()
    bid = bundle(alice, tmp_path)
    started = time.monotonic()
    d = gage(alice, "deliver", bid, "--to", "bob", "--now")
    took = time.monotonic() - started
    assert d.code == 15, d.err
    assert took < 2.0, took
    assert "cannot reach the relay" in d.err and "nothing was delivered" in d.err
    started = time.monotonic()
    d = gage(alice, "deliver", bid, "--to", "bob")  # without --now: kept in the outbox, said as fast
    assert d.code == Exit.QUEUED and time.monotonic() - started < 2.0, d.err
    assert d.out.startswith("queued for bob's mailbox: the relay is not reachable; it goes when it is")
    for cmd in (("mailbox", "fetch"), ("directory", "lookup", "bob")):
        started = time.monotonic()
        r = gage(alice, *cmd)
        assert r.code == 15 and time.monotonic() - started < 2.0, (cmd, r.err)
