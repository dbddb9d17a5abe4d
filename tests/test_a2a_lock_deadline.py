"""`a2a serve` gives up on a busy home before the sender gives up on it: two deliveries wait
for a home lock another gage process holds, and each sender hears "refused: busy" (exit 11)
within its reply deadline, never a timeout (exit 12). Before, the second landing thread waited
the lock timeout for the first, then a fresh one for the file lock: twice the wait."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import test_a2a_live as live
from test_a2a_live import bundle
from test_home_lock_wait import HOLDER

from gage.carriers.a2a import client, server
from gage.format.errors import Exit, GageError
from gage.home import listing

homes, serving = live.homes, live.serving  # the fixtures of the live tests


def test_the_senders_reply_deadline_outlasts_serves_lock_wait() -> None:
    assert server.LOCK_SECONDS + 5 <= client.REPLY_SECONDS


def test_deliveries_to_a_busy_home_are_refused_within_the_senders_deadline(homes, serving, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    alice, bob = homes
    monkeypatch.setattr(server, "LOCK_SECONDS", 1.0)
    srv, _ = serving(bob)
    outs = [bundle(alice, tmp_path, f"busy {i}\n".encode()) for i in range(2)]
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(bob.root / "lock"), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        got: list[object] = [None, None]

        def send(i: int) -> None:
            try:
                # The deadline stands for REPLY_SECONDS scaled as LOCK_SECONDS is: well over one
                # lock wait, under two.
                got[i] = client.send(alice, outs[i][1], srv.url, timeout=1.9)
            except GageError as exc:
                got[i] = exc

        threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        other.kill()
        other.wait()
    for (bid, _out), answer in zip(outs, got, strict=True):
        assert isinstance(answer, client.A2ARefusedError), answer
        assert answer.exit_code == Exit.A2A_REFUSED and "lock" in str(answer)
        assert listing.find(bob, bid) is None
    assert client.send(alice, outs[0][1], srv.url).delivered  # once the home is free


def test_a_delivery_holds_the_home_lock_from_its_landing_to_its_key_statements(homes, serving, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once serve has the home lock it never waits for it again: remembering the signer (and a key
    statement) after the import ran outside the lock, with no timeout, so another process taking
    the lock in between held the reply back until the sender had given up on a bundle that had
    landed."""
    import fcntl
    import os

    from gage.trust import ceremony

    alice, bob = homes
    srv, _ = serving(bob)
    real, held = ceremony.remember_signer, []

    def remember(home, result):  # type: ignore[no-untyped-def]
        fd = os.open(home.root / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)  # free: another process could have taken it here
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return real(home, result)

    monkeypatch.setattr(ceremony, "remember_signer", remember)
    bid, out = bundle(alice, tmp_path)
    assert client.send(alice, out, srv.url).delivered
    assert held == [True] and listing.find(bob, bid) is not None
