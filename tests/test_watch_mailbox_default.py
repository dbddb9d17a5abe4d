"""`gage watch` fetches the mailbox by default once the home has one (issue 30): after `gage
invite`, mail arrives with nothing but `gage watch` (or an open interface) running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from gagetest import pair
from relaytest import bundle, open_mailbox, relay  # noqa: F401 - fixtures
from test_relay_where import _read_lines

from gage.home import sealing, whereabouts


def test_watch_with_no_arguments_fetches_the_mailbox(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    pair(alice, "bob", bob)
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=relay.url, source="test"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "watch", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        _read_lines(proc, "watching mailbox", 30)
        bid = bundle(alice, tmp_path)
        assert gage(alice, "deliver", bid, "--to", "bob").code == 0
        lines = _read_lines(proc, f"received {bid[:12]} from the mailbox", 30)
        assert any(e["kind"] == "imported" and e["id"] == bid for e in lines)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_watch_without_a_mailbox_or_a_drop_folder_says_what_to_do(make_home, gage, relay) -> None:  # noqa: F811
    home = make_home("carol")
    r = gage(home, "watch")
    assert r.code == 2 and "--drop" in r.err and "gage invite" in r.err
    open_mailbox(home, relay.url)
    r = gage(home, "watch", "--no-mailbox")
    assert r.code == 2 and "--drop" in r.err
