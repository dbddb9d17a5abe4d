"""A2A in the interface: where a bundle came from (a claim), the outbox, and export.

A bundle that arrived over A2A (through `gage.carriers.a2a.artifact.receive`, as the live agent
and `gage a2a import` land it) is marked in the inbox, and the frame shows the carrier's
claim and every way it disagrees with the signature, literally and in the bad colour.
The outbox tab lists the bundles this home made. `x` exports any bundle, in either
protocol, from a thread worker, and never replaces a file that is there.
"""

from __future__ import annotations

import asyncio
import errno
import json
import threading
from pathlib import Path

import pytest
from textual.widgets import Static
from tuikit import TestApp, World, identity, make_bundle, screen_segments, screen_text

from gage.carriers.a2a import artifact
from gage.format.errors import GageIOError, RefusedError
from gage.format.keys import key_text
from gage.home import listing
from gage.inbox import send
from gage.tui import export, safe
from gage.tui.bundle_view import BundleScreen
from gage.tui.dialogs import ExportChoice, ExportDialog
from gage.tui.help import help_text

SIZE = (100, 60)
EVIL = "[bold]evil[/bold]"
# What a hostile peer might claim as its name or card (test_hostile.py walks the rest of the interface).
NASTY = [
    pytest.param("[@click=app.pwned]x[/]", id="click-action"),
    pytest.param("[/]", id="stray-close"),
    pytest.param("\x1b]0;pwned\x07title", id="osc-title"),
    pytest.param("\x1b[2J\x1b[31mred\x1b[0m", id="csi-clear"),
    pytest.param("\u202eexe.txt\u202c safe", id="bidi"),
    pytest.param("line1\nline2\rline3\tend", id="newlines"),
    pytest.param("W" * 190 + "[/]", id="long"),
    pytest.param("[link=https://evil.example]docs[/link]", id="link"),
    pytest.param("\x00\x08\x7f\x9b31m", id="c0-c1"),
]
BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def assert_clean(app: TestApp, *expect: str) -> None:
    """Still running, the tripwire untouched, nothing raw on screen, and each value shown literally."""
    assert app.is_running and not app.pwned
    for seg in screen_segments(app):
        for ch in seg.text:
            cp = ord(ch)
            assert not (cp < 0x20 or 0x7F <= cp <= 0x9F or cp in BIDI), f"raw control U+{cp:04X} on screen"
        meta = seg.style.meta if seg.style else {}
        assert "pwned" not in str(meta.get("@click", "")), "an untrusted string became a clickable action"
    text = screen_text(app)
    for value in expect:
        shown = safe.one_line(value)[:30]
        assert shown in text, f"{shown!r} not shown literally"


def arrive_over_a2a(world: World, *, name: str = EVIL, card: str | None = None, nonce: int = 60) -> str:
    """alice's bundle, carried in an A2A Message whose sender claims `name` and mallory's key."""
    b = make_bundle(world.alice, world.wire, {"a2a.txt": b"over A2A\n"}, subject="Came over A2A", nonce=nonce)
    claims = {"from_name": name, "from_key": key_text(identity("mallory", 11).key)}
    if card is not None:
        claims["from_card"] = card
    [landed] = artifact.receive(world.home, artifact.export_message(b, claims=claims))
    assert landed.new and landed.ok and landed.state == "pending"
    return landed.id


def make_mine(world: World, tmp_path: Path, subject: str = "Made here") -> str:
    """A bundle this home made: it lives in the outbox."""
    src = tmp_path / "mine.txt"
    src.write_text("my own words\n", encoding="utf-8")
    manifest, dest = send.create(world.home, [src], kind="share", subject=subject)
    assert dest.parent == world.home.state_dir("outbox")
    return manifest.id


async def highlight(pilot, app: TestApp, bundle_id: str) -> None:
    """Move the inbox cursor to `bundle_id` with the keyboard."""
    await pilot.press("home")
    for _ in range(len(app.inbox.rows)):
        if app.inbox.current_id() == bundle_id:
            break
        await pilot.press("down")
    assert app.inbox.current_id() == bundle_id


async def exported(pilot, app: TestApp) -> None:
    """Wait for every export worker, then for its message to be handled."""
    busy = [w for w in app.workers if w.group == export.EXPORT_GROUP]
    await app.workers.wait_for_complete(busy)
    await pilot.pause()
    await pilot.pause()


def toasts(app: TestApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


# --- where a bundle came from -----------------------------------------------------------


async def test_an_a2a_arrival_is_marked_and_its_claim_shown_literally(world: World) -> None:
    bid = arrive_over_a2a(world)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.inbox.query_one("DataTable")
        assert table.get_cell(bid, "via").plain == "A2A!"  # marked, and the "!" says it disagrees
        assert all(table.get_cell(b, "via").plain == "" for b in world.ids.values())  # a folder import is not
        await highlight(pilot, app, bid)
        line = str(app.inbox.query_one("#inbox-detail", Static).content).splitlines()[2]  # the claims line
        assert f'via A2A from "{EVIL}" (a claim, unchecked)' in line  # literal: the markup was not read
        assert "DISAGREES with the signature" in line
        assert f'"{EVIL}"' in screen_text(app)
        await pilot.press("down")
        moved = app.inbox.current_id()
        assert moved != bid and str(app.inbox.query_one("#inbox-detail", Static).content).splitlines()[2:] in ([], [""])
    assert not app.pwned


async def test_the_frame_shows_via_and_each_disagreement_as_bad(world: World) -> None:
    bid = arrive_over_a2a(world)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BundleScreen)
        fields = {}
        for row in screen.query(".field"):
            label, value = row.query(Static)
            fields.setdefault(str(label.content), []).append(value)
        [via] = fields["via:"]
        assert f'A2A (protocol 1.0) from "{EVIL}"' in str(via.content) and "not checked" in str(via.content)
        disagreements = fields["transport:"]
        assert len(disagreements) == 2  # the key it names, and the name it calls the sender
        assert all("DISAGREES with the signature" in str(d.content) and d.has_class("sev-bad") for d in disagreements)
        assert f'calls the sender "{EVIL}"' in str(disagreements[1].content)
        text = screen_text(app)
        assert f'from "{EVIL}"' in text and "DISAGREES with the signature" in text  # literally, on screen
        # Drawn bold in the error colour, not the normal one, and the name's markup did nothing.
        bad = [s for s in screen_segments(app) if "DISAGREES with the" in s.text]
        assert bad and all(s.style.bold for s in bad)
        normal = next(s for s in screen_segments(app) if "(protocol 1.0)" in s.text)
        assert bad[0].style.color != normal.style.color
        assert not any(s.style.bold for s in screen_segments(app) if s.text.strip() == "evil")
        # The summary bar, which never scrolls away, says so too.
        bar = str(screen.query_one("#verdict-bar", Static).content)
        assert "TRANSPORT DISAGREES" in bar and "via A2A (a claim)" in bar
    assert not app.pwned


@pytest.mark.parametrize("nasty", NASTY)
async def test_hostile_transport_claims_are_shown_literally(nasty: str, world: World) -> None:
    bid = arrive_over_a2a(world, name=nasty[:200], card=nasty)
    app = TestApp(world.home)
    async with app.run_test(size=(220, 60)) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        assert_clean(app, nasty[:20])  # the claimed name in the detail line (clipped there)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        assert_clean(app, nasty[:20])  # the via line and the disagreement quote it
    assert not app.pwned


# --- the outbox ---------------------------------------------------------------------------


async def test_the_outbox_tab_lists_the_bundles_you_made(world: World, tmp_path: Path) -> None:
    mine = make_mine(world, tmp_path)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert mine not in app.inbox.rows and "4 Outbox (1)" in screen_text(app)
        await pilot.press("4")
        await pilot.pause()
        assert app.inbox.state == "outbox" and list(app.inbox.rows) == [mine]
        text = screen_text(app)
        assert "✎ mine" in text and "Made here" in text and "my own key" in text
        assert "claims to be" not in text  # your own name is not a claim to warn about
        # Nothing here is yours to decide on: accept and reject leave the footer (and do nothing).
        assert " Accept " not in text and " Reject " not in text
        await pilot.press("a")
        await pilot.pause()
        assert listing.find(world.home, mine).state == "outbox"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BundleScreen)
        text = screen_text(app)
        assert "in my outbox (I made this)" in text and "x: export it as an A2A artifact file" in text
        assert " Accept " not in text
        await pilot.press("escape", "1")
        await pilot.pause()
        # Back for what arrived (the first row is invalid: reject applies, accept does not).
        assert app.inbox.state == "pending" and " Reject " in screen_text(app)


def test_the_new_keys_are_in_the_help() -> None:
    text = help_text()
    assert "Show the bundles you made (your outbox)." in text
    assert "as an A2A artifact file" in text and "A2A in the Via column" in text


# --- export -------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
async def test_export_writes_an_artifact_that_reads_back(protocol: str, world: World, tmp_path: Path, monkeypatch) -> None:
    """From the inbox (a received bundle, default name in the working directory) and from the outbox."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    mine = make_mine(world, tmp_path)
    theirs = world.ids["review"]
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        for bid, tab in ((theirs, "1"), (mine, "4")):
            await pilot.press(tab)
            await pilot.pause()
            await highlight(pilot, app, bid)
            await pilot.press("x")
            await pilot.pause()
            assert isinstance(app.screen, ExportDialog)
            if protocol == "0.3":  # by keyboard alone: to the choice, to 0.3, choose, back, Enter
                await pilot.press("tab", "right", "enter", "shift+tab")
            assert app.screen.protocol() == protocol
            await pilot.press("enter")  # the prefilled name
            await exported(pilot, app)
            path = out / f"{bid[:12]}.a2a.json"
            data = path.read_bytes()
            [carried] = artifact.parse_bytes(data)
            assert carried.id == bid and carried.protocol == protocol
            # Byte for byte what `gage a2a export` writes.
            expect = artifact.export_artifact(listing.find(world.home, bid).path, protocol=protocol)
            assert data == (json.dumps(expect, indent=2, ensure_ascii=True) + "\n").encode("ascii")
            assert any(f"as an A2A {protocol} artifact: {path}" in t for t in toasts(app))
        assert listing.find(world.home, theirs).state == "pending"  # exporting decides nothing


async def test_export_refuses_to_replace_a_file(world: World, tmp_path: Path) -> None:
    bid = world.ids["review"]
    there = tmp_path / "there.json"
    there.write_text("keep me\n", encoding="utf-8")
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(there)
        await pilot.press("enter")
        await pilot.pause()
        # The dialog says so and stays open for another name.
        assert isinstance(app.screen, ExportDialog)
        assert "already exists; gage will not replace it" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ExportDialog)
    assert there.read_text(encoding="utf-8") == "keep me\n"


async def test_a_file_that_appears_while_exporting_is_not_replaced(world: World, tmp_path: Path, monkeypatch) -> None:
    """The dialog's check is early; the write itself refuses too (the file is linked into place)."""
    bid = world.ids["review"]
    dest = tmp_path / "late.json"
    real = export.artifact_bytes

    def racing(home, bundle_id, protocol):
        data = real(home, bundle_id, protocol)
        dest.write_text("someone else's\n", encoding="utf-8")
        return data

    monkeypatch.setattr(export, "artifact_bytes", racing)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(dest)
        await pilot.press("enter")
        await exported(pilot, app)
        assert any("already exists; gage will not replace it" in t for t in toasts(app))
    assert dest.read_text(encoding="utf-8") == "someone else's\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".late")] == []  # no temporary left


@pytest.mark.parametrize("links", [True, False], ids=["hard-link", "no-hard-links"])
def test_write_new_never_replaces(links: bool, tmp_path: Path, monkeypatch) -> None:
    """Also where hard links cannot be made (a FAT stick): a checked rename instead."""
    if not links:

        def no_link(src, dst):
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(export.os, "link", no_link)
    dest = tmp_path / "a.json"
    export.write_new(dest, b"first\n")
    assert dest.read_bytes() == b"first\n" and oct(dest.stat().st_mode & 0o777) == "0o644"
    with pytest.raises(RefusedError, match="already exists"):
        export.write_new(dest, b"second\n")
    assert dest.read_bytes() == b"first\n"
    with pytest.raises(RefusedError):
        export.export_to_file(None, "0" * 64, ExportChoice(dest, "1.0"))  # type: ignore[arg-type]
    with pytest.raises(GageIOError, match="folder does not exist"):
        export.write_new(tmp_path / "nowhere" / "a.json", b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left behind


async def test_an_invalid_bundle_is_not_exported_and_the_reason_is_shown(world: World, tmp_path: Path) -> None:
    bid = world.ids["invalid"]
    dest = tmp_path / "[b]bad[/b].json"
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(dest)
        await pilot.press("enter")
        await exported(pilot, app)
        [error] = [n for n in app._notifications if n.title == "Not exported"]
        assert error.severity == "error" and "does not verify, so it is not exported" in str(error.message)
        assert app.is_running and not app.pwned
    assert not dest.exists()


async def test_a_hostile_path_is_reported_as_plain_text(world: World, tmp_path: Path) -> None:
    bid = world.ids["review"]
    name = "[@click=app.pwned]x \x1b]0;pwned\x07 [b]\u202e.json"  # no "/": it is one file name
    app = TestApp(world.home)
    async with app.run_test(size=(220, 60), notifications=True) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(tmp_path / name)
        await pilot.press("enter")
        await exported(pilot, app)
        assert (tmp_path / name).is_file()
        assert any(safe.one_line(name) in t for t in toasts(app))  # the path literally, controls escaped
        assert_clean(app)  # and on screen: no raw control, no clickable action
    assert not app.pwned


async def test_export_runs_off_the_ui_thread(world: World, tmp_path: Path, monkeypatch) -> None:
    """While a (slow, large) export runs, the interface keeps answering keys."""
    bid = world.ids["review"]
    dest = tmp_path / "slow.json"
    release = threading.Event()
    threads: list[threading.Thread] = []
    real = export.artifact_bytes

    def slow(home, bundle_id, protocol):
        threads.append(threading.current_thread())
        assert release.wait(10), "never released"
        return real(home, bundle_id, protocol)

    monkeypatch.setattr(export, "artifact_bytes", slow)
    app = TestApp(world.home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await highlight(pilot, app, bid)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(dest)
        await pilot.press("enter")
        for _ in range(100):
            if threads:
                break
            await asyncio.sleep(0.01)
        assert threads and threads[0] is not threading.main_thread()
        before = app.inbox.current_id()
        await pilot.press("down")  # answered while the export waits
        await pilot.pause()
        assert app.inbox.current_id() != before and not dest.exists()
        release.set()
        await exported(pilot, app)
        assert dest.is_file()
