"""End to end in a real terminal: gage's interface under tmux, driven by keys.

It opens the inbox of a demo home, opens a verified bundle, accepts it, shows the
hostile bundle's payload (which carries an OSC title sequence and a screen clear),
and quits. The core confirms the accept; tmux confirms that the payload did not reach
the terminal as control sequences (the pane title is unchanged).
"""

from __future__ import annotations

import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gage.cli.demo import make_demo
from gage.home import listing
from gage.inbox.opening import open_home
from gage.trust.verdict import compute

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it); cannot run a real terminal")


class Tmux:
    def __init__(self) -> None:
        self.socket = f"gage-test-{secrets.token_hex(6)}"

    def run(self, *args: str) -> str:
        proc = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        assert proc.returncode == 0, f"tmux {args[0]} failed: {proc.stderr}"
        return proc.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "gage")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "gage", *keys)

    def display(self, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", "gage", fmt).strip()

    def wait(self, check: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if check(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the pane shows:\n{text}")

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def test_review_accept_and_quit_in_a_real_terminal(tmp_path: Path) -> None:
    root = make_demo(tmp_path / "demo")
    home = open_home(root)
    verdicts = [compute(home, s) for s in listing.list_bundles(home, ("pending",))]
    target = next(v.id for v in verdicts if v.verdict == "verified" and v.kind == "review-request")
    hostile = next(v.id for v in verdicts if v.verdict == "unverified")
    assert target and hostile

    tmux = Tmux()
    rc_file = tmp_path / "exit-code"
    command = f"{shlex.quote(sys.executable)} -m gage.cli.main --home {shlex.quote(str(root))}; echo $? > {shlex.quote(str(rc_file))}"
    try:
        tmux.run("new-session", "-d", "-s", "gage", "-x", "100", "-y", "30", command)
        tmux.run("set-option", "-t", "gage", "remain-on-exit", "on")
        tmux.wait(lambda s: "Pending (5)" in s, "the inbox")
        title_before = tmux.display("#{pane_title}")

        def highlight(bundle_id: str) -> None:
            """Walk the cursor down, then up, until the detail line names the bundle."""
            for key in ["Down"] * 5 + ["Up"] * 5:
                time.sleep(0.3)
                if bundle_id[:12] in tmux.screen():
                    return
                tmux.keys(key)
            raise AssertionError(f"could not highlight {bundle_id[:12]}:\n{tmux.screen()}")

        highlight(target)
        tmux.keys("Enter")
        tmux.wait(lambda s: "gage frame" in s and "VERIFIED" in s, "the bundle view")
        tmux.keys("a")
        tmux.wait(lambda s: "Accept this bundle?" in s, "the one confirmation")
        tmux.keys("BTab", "Enter")  # Cancel has the focus: Shift+Tab to Accept, then Enter
        deadline = time.monotonic() + 20
        def state() -> str | None:
            # Mid-move the bundle sits under the gate's staging name, where find() does not look.
            found = listing.find(home, target)
            return found.state if found is not None else None

        while state() != "accepted" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert state() == "accepted"
        accepted_screen = tmux.wait(lambda s: "· accepted" in s, "the accepted state in the verdict bar")
        assert "VERIFIED" in accepted_screen and "gage frame" in accepted_screen

        tmux.keys("Escape")
        tmux.wait(lambda s: "Pending (4)" in s and "Accepted (1)" in s, "the inbox after accepting")
        highlight(hostile)
        tmux.keys("Enter")
        tmux.wait(lambda s: "UNVERIFIED" in s, "the hostile bundle")
        shown = ""
        for _ in range(3):  # End is an escape sequence; resend it if it was split and lost
            tmux.keys("End")
            try:
                shown = tmux.wait(lambda s: "pwned" in s, "the hostile payload preview", timeout=5)
                break
            except AssertionError:
                continue
        assert "pwned" in shown, f"the payload preview never showed:\n{tmux.screen()}"
        assert "\\x1b]0;pwned\\x07" in shown  # shown as visible escapes, not run
        time.sleep(0.5)
        assert tmux.display("#{pane_title}") == title_before
        assert "pwned" not in tmux.display("#{pane_title}")
        assert "==== end of gage frame" in tmux.screen()  # the screen was not cleared by ESC[2J

        tmux.keys("q")
        deadline = time.monotonic() + 20
        while not (rc_file.exists() and rc_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rc_file.exists(), "gage did not quit on q"
        assert rc_file.read_text().strip() == "0", "gage exited with an error"
    finally:
        tmux.kill()
    assert listing.find(home, target).state == "accepted"
    assert listing.find(home, hostile).state == "pending"
