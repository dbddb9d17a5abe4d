"""Shared helpers for the relay tests: a real nats-server on 127.0.0.1, and homes with mailboxes.

Every server listens on 127.0.0.1 on a free port, keeps its store under the test's tmp folder,
and is killed when the test (or module) ends, whatever happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gage.carriers.relay import config, mailbox, server
from gage.home import sealing
from gage.home.layout import Home
from gage.inbox import send


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server.Server]:
    srv = server.Server(store=tmp_path_factory.mktemp("relay"), name="test-relay")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop(kill=True)


@pytest.fixture
def own_relay(tmp_path: Path) -> Iterator[server.Server]:
    """A relay for one test alone (for tests that restart or kill it)."""
    srv = server.Server(store=tmp_path / "relay-store", name="own-relay")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop(kill=True)


def open_mailbox(home: Home, url: str, **limits: int) -> str:
    """What `gage mailbox create` does, in process: the sealing key, the mailbox, the settings."""
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    address = sealing.mailbox_address(key.recipient)
    mailbox.run(mailbox.create(url, address, **limits))
    config.record(home, url, None)
    return address


def bundle(home: Home, tmp: Path, name: str = "note.txt", data: bytes = b"hello", **kw: object) -> str:
    src = tmp / f"src-{home.identity.name}-{name}"
    src.write_bytes(data)
    m, _dest = send.create(home, [src], kind="share", **kw)  # type: ignore[arg-type]
    return m.id
