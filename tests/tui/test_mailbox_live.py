"""An open interface fetches its mailbox itself (issue 30): a bundle delivered to this home lands
in pending and shows, verified, with a note that mail arrived, while nobody runs anything else."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from gagetest import pair  # noqa: E402
from relaytest import bundle, open_mailbox, relay  # noqa: E402, F401 - fixtures
from tuikit import TestApp  # noqa: E402

from gage.carriers.relay import deliver  # noqa: E402
from gage.home import sealing, whereabouts  # noqa: E402
from gage.home.layout import Home  # noqa: E402
from gage.home.listing import find  # noqa: E402

SIZE = (100, 30)


async def wait_for(check: Callable[[], bool], limit: float = 60.0) -> bool:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if check():
            return True
        await asyncio.sleep(0.05)
    return False


def _linked(alice: Home, bob: Home, url: str) -> None:
    open_mailbox(bob, url)
    pair(alice, "bob", bob)
    pair(bob, "alice", alice)
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    whereabouts.remember(alice, whereabouts.from_binding(key.binding, relay=url, source="test"))


async def test_the_open_interface_fetches_its_mailbox_and_shows_the_mail_arriving(relay, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = Home.init(tmp_path / "alice", "alice"), Home.init(tmp_path / "bob", "bob")
    await asyncio.to_thread(_linked, alice, bob, relay.url)
    bid = bundle(alice, tmp_path)
    app = TestApp(bob, watch=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        stored = find(alice, bid)
        assert stored is not None
        await asyncio.to_thread(deliver.deliver, alice, stored.path, bid, "bob", relay=None, unconfirmed=False, creds=None)
        assert await wait_for(lambda: find(bob, bid) is not None), "the interface never fetched the mailbox"
        assert find(bob, bid).state == "pending"  # arrival is not consent
        assert await wait_for(lambda: (row := app.inbox.rows.get(bid)) is not None and row.verdict is not None
                              and row.verdict.verdict == "verified"), "the bundle never showed"
        assert await wait_for(lambda: any("Mail arrived" in str(n.message) for n in app._notifications))


async def test_a_home_without_a_mailbox_fetches_nothing(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "carol", "carol")
    app = TestApp(home, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app._mail_stop is None


def test_the_interface_fetches_with_this_homes_own_credential_in_any_form(make_home, relay, tmp_path, monkeypatch) -> None:  # noqa: F811
    """On a shared relay a home logs in with an nkey seed or a user and password file (spec/relay.md
    section 8): the interface's fetch presents the one settings.toml names, whatever its form."""
    import os

    from gage.carriers.relay import follow
    from gage.home import settings
    from gage.tui import mailbox_fetch

    bob = make_home("bob")
    open_mailbox(bob, relay.url)
    pw = tmp_path / "bob.pw"
    fd = os.open(pw, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"bob's passphrase\n")
    os.close(fd)
    p = settings.path_of(bob)
    p.write_text(p.read_text() + f'user = "bob"\npassword_file = "{pw}"\n')
    seen: list[object] = []
    monkeypatch.setattr(follow, "follow", lambda *a, **kw: seen.append(kw["creds"]))

    class App:
        is_running = True

    stop = mailbox_fetch.start(App(), bob)
    assert stop is not None
    for _ in range(100):
        if seen:
            break
        time.sleep(0.02)
    (creds,) = seen
    assert creds is not None and creds.user == "bob" and creds.password_file == str(pw)  # type: ignore[attr-defined]
