"""Hostile strings through every widget that shows untrusted text.

Each string goes in as a claimed name, a subject, a payload file name, a payload, a
candidate's claimed name, a key file's name and claim, and an error message; the app
is walked through the inbox, the frame, the payload, both dialogs, the ceremony, the
contacts and a notification. Everywhere: the app keeps running, the tripwire action
never runs (no click meta reaches the screen), no raw control character reaches the
terminal, and the text is shown literally, its controls as visible escapes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tuikit import (
    Clock,
    TestApp,
    frozen,
    identity,
    make_bundle,
    make_home,
    name_them,
    screen_segments,
    screen_text,
    write_key_file,
)

from gage.format.errors import MalformedError
from gage.format.manifest import check_path
from gage.format.sanitize import _BIDI
from gage.home import listing
from gage.inbox import store
from gage.tui import safe
from gage.tui.bundle_view import BundleScreen
from gage.tui.ceremony import CeremonyScreen
from gage.tui.contacts import ContactsScreen
from gage.tui.dialogs import KeyFileDialog
from gage.tui.gate_dialog import GateDialog
from gage.tui.pair_name import PairNameDialog

NASTY = [
    pytest.param("[@click=app.pwned]x[/]", id="click-action"),
    pytest.param("[/]", id="stray-close"),
    pytest.param("[b]bold", id="open-tag"),
    pytest.param("\x1b]0;pwned\x07title", id="osc-title"),
    pytest.param("\x1b[2J\x1b[31mred\x1b[0m", id="csi-clear"),
    pytest.param("\u202eexe.txt\u202c safe", id="bidi"),
    pytest.param("line1\nline2\rline3\tend", id="newlines"),
    pytest.param("W" * 190 + "[/]", id="long"),
    pytest.param("$var ${name} $", id="dollar"),
    pytest.param("[link=https://evil.example]docs[/link]", id="link"),
    pytest.param("\x00\x08\x7f\x9b31m", id="c0-c1"),
    pytest.param("[@click=app.pwned]unclosed", id="unclosed-click"),
]
SIZE = (220, 60)


def file_name_for(nasty: str) -> str:
    try:
        return check_path(nasty, "t")
    except MalformedError:
        return "[@click=app.pwned]file[/].txt"


def disk_name_for(nasty: str) -> str:
    name = nasty.replace("/", "_").replace("\x00", "")[:120]
    return name if name not in ("", ".", "..") else "x"


def fragment(value: str) -> str:
    """What must appear on screen: the start of the value as gage shows it."""
    return safe.one_line(value)[:40]


def assert_clean(app: TestApp, *expect: str) -> None:
    """Still running, the tripwire untouched, nothing raw on screen, and the values shown literally."""
    assert app.is_running and not app.pwned
    for seg in screen_segments(app):
        for ch in seg.text:
            cp = ord(ch)
            assert not (cp < 0x20 or 0x7F <= cp <= 0x9F or cp in _BIDI), f"raw control U+{cp:04X} on screen"
        meta = seg.style.meta if seg.style else {}
        assert "pwned" not in str(meta.get("@click", "")), "an untrusted string became a clickable action"
    text = screen_text(app)
    for value in expect:
        assert fragment(value) in text, f"{fragment(value)!r} not shown literally"


@pytest.mark.parametrize("nasty", NASTY)
async def test_hostile_string_everywhere(nasty: str, tmp_path: Path) -> None:
    clock = Clock()
    with frozen(clock):
        home = make_home(tmp_path / "you", "you", 1)
        sender = identity(nasty[:200], 5)
        fname = file_name_for(nasty)
        b = make_bundle(sender, tmp_path / "wire", {fname: (nasty + "\nsecond line\n").encode()}, subject=nasty, nonce=9)
        bid = store.import_bundle(home, b).id
    keyfile = write_key_file(tmp_path / disk_name_for(nasty), identity(nasty[:200], 6))
    badfile = tmp_path / ("bad-" + disk_name_for(nasty))
    badfile.write_bytes(b"{not json")

    app = TestApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        assert app.inbox.current_id() == bid
        assert_clean(app, nasty)  # subject in the row and the detail line, claim in the detail line
        text = screen_text(app)
        if "[@click" in text:  # clicking the literal text runs nothing
            y, line = next((i, ln) for i, ln in enumerate(text.splitlines()) if "[@click" in ln)
            await pilot.click(offset=(line.index("[@click") + 1, y))
            await pilot.pause()
            assert not app.pwned

        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        assert_clean(app, nasty)  # frame: subject and claimed name
        app.screen.query_one("#bundle-body").scroll_end(animate=False)
        await pilot.pause()
        assert_clean(app, fname, nasty.split("\n")[0])  # payload: file name and preview

        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        assert_clean(app, nasty)
        await pilot.press("escape", "r")
        await pilot.pause()
        assert isinstance(app.screen, GateDialog)
        assert_clean(app, nasty)
        await pilot.press("escape", "p")
        await pilot.pause()
        assert isinstance(app.screen, PairNameDialog)
        assert_clean(app, nasty[:60])  # the pairing dialog quotes the claimed name
        await name_them(pilot, "mallory")
        assert isinstance(app.screen, CeremonyScreen)
        assert_clean(app, nasty[:200])
        await pilot.press("escape", "escape", "c")
        await pilot.pause()
        assert isinstance(app.screen, ContactsScreen)
        assert_clean(app, nasty[:200])  # the candidate's claimed name

        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, KeyFileDialog)
        app.screen.query_one("#keyfile").value = str(keyfile)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PairNameDialog)
        assert_clean(app, nasty[:60], keyfile.name[:60])
        await name_them(pilot, "mallory")
        assert isinstance(app.screen, CeremonyScreen)
        assert_clean(app, nasty[:200], keyfile.name)
        await pilot.press("escape", "f")
        await pilot.pause()
        app.screen.query_one("#keyfile").value = str(badfile)
        await pilot.press("enter")
        await pilot.pause()
        assert app._notifications, "a bad key file is reported"
        assert_clean(app, badfile.name)  # the error toast quotes the hostile file name literally
    assert not app.pwned
    assert listing.find(home, bid).state == "pending"
