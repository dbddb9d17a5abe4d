"""Driving `gage invite` and `gage join` as two people do: each on its own pseudo-terminal, read and typed in turn."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time

from gage.format.words import derive
from gage.format.words.hearing import closing_pair
from gage.home.layout import Home


class Term:
    """One `gage` command on a pseudo-terminal: wait for text, type a line, read its end."""

    def __init__(self, home: Home, *args: str) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", "--home", str(home.root), *args],
            stdin=slave, stdout=slave, stderr=slave, close_fds=True, start_new_session=True,
            env={**os.environ, "TERM": "dumb", "COLUMNS": "200"},
        )
        os.close(slave)
        self.screen = b""
        self.pos = 0  # what expect() has consumed

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 4096)
        except OSError:
            return False
        if not chunk:
            return False
        self.screen += chunk
        return True

    def expect(self, marker: bytes, timeout: float = 30) -> bytes:
        """Wait for `marker` after what was already consumed; the text up to and including it."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.screen.find(marker, self.pos)
            if at >= 0:
                seen, self.pos = self.screen[self.pos : at + len(marker)], at + len(marker)
                return seen
            if time.monotonic() > deadline or not self._read(0.2):
                if self.screen.find(marker, self.pos) >= 0:
                    continue
                raise AssertionError(f"timed out waiting for {marker!r}; got {self.text()!r}")

    def send(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def code(self) -> str:
        self.expect(b"code: ")
        line = self.expect(b"\n").decode()
        m = re.match(r"\s*([0-9]+-[a-z]+-[a-z]+)", line)
        assert m, line
        return m.group(1)

    def finish(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            if self.proc.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                break
        try:
            return self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        # Once: the number is free after this, and a second close would close whatever was
        # opened under it since (another thread's file, in the interface's tests).
        master, self.master = self.master, -1
        if master >= 0:
            os.close(master)

    def text(self) -> str:
        return self.screen.decode("utf-8", errors="replace").replace("\r\n", "\n")


def pairs(home: Home) -> list[str]:
    """The pairs another person reads from `home`'s screen, as they would type them."""
    return [f"{a} {b}" for a, b in derive(home.identity.key)]


def closing(a_home: Home, b_home: Home) -> str:
    """The closing pair both screens show (the same on both when each holds the other's key)."""
    return " ".join(closing_pair(a_home.identity.key, b_home.identity.key))


def ceremony(a: Term, a_home: Home, b: Term, b_home: Home, *, typed_by_a: list[str] | None = None, typed_by_b: list[str] | None = None) -> None:
    """Both sides at once, pair by pair: each types what the other's screen reads (or what is given), then
    the closing pair, read before anything is confirmed."""
    heard_a = typed_by_a or pairs(b_home)
    heard_b = typed_by_b or pairs(a_home)
    for i in range(4):
        a.expect(f"their pair {i + 1}: ".encode())
        b.expect(f"their pair {i + 1}: ".encode())
        a.send(heard_a[i])
        b.send(heard_b[i])
    for term in (a, b):
        term.expect(b"their closing pair: ")
        term.send(closing(a_home, b_home))
