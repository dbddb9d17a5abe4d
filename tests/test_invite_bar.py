"""Issue 30's bar, as two new users do it: from two fresh homes and a running `gage relay dev`, one
`invite` and one `join` through the ceremony, then a bundle each way, each landing verified on the
other side through nothing but a running `gage watch`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from invitetest import Term, ceremony
from relaytest import bundle
from test_relay_dev_state import RelayDev
from test_relay_where import _read_lines

from gage.home.layout import Home


def _watch(home: Home) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(home.root), "watch", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    _read_lines(proc, "watching mailbox", 30)
    return proc


def test_two_fresh_homes_one_invite_one_join_then_a_bundle_each_way_verified(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    dev = RelayDev("--home", str(tmp_path / "relay-home"))
    watchers: list[subprocess.Popen[str]] = []
    try:
        url = dev.start()
        inv = Term(alice, "invite", "--relay", url, "--name", "bob")
        jn = Term(bob, "join", inv.code(), "--relay", url, "--name", "alice")
        try:
            ceremony(inv, alice, jn, bob)
            assert inv.finish() == 0, inv.text()
            assert jn.finish() == 0, jn.text()
        finally:
            inv.close()
            jn.close()
        watchers = [_watch(alice), _watch(bob)]
        for sender, to, watcher, label in ((alice, "bob", watchers[1], "alice"), (bob, "alice", watchers[0], "bob")):
            bid = bundle(sender, tmp_path, name=f"for-{to}.txt")
            d = gage(sender, "deliver", bid, "--to", to)  # nothing else: the route is set
            assert d.code == 0, d.err
            lines = _read_lines(watcher, f"received {bid[:12]} from the mailbox", 30)
            arrived = [e for e in lines if e["kind"] == "imported" and e["id"] == bid]
            assert arrived and f"VERIFIED, sender {label}" in arrived[0]["message"], arrived
    finally:
        for w in watchers:
            os.killpg(w.pid, signal.SIGTERM)
            w.wait(timeout=30)
        dev.kill()
