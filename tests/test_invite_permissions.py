"""The invite needs no more of the relay than every person is allowed (spec/relay.md section 10): publish
to `gage.rv.*` with an acknowledgement, and read `GAGE_RV` by message and its information. On a
nats-server whose users may do only that (the operator made the stream), an invite and a join meet and
swap claims; a person may not make the stream, and is told its operator does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gage.carriers.relay import invite, mailbox, rendezvous, server
from gage.carriers.relay.errors import RelayError
from gage.format.keyfile import KeyFile
from gage.home import sealing
from gage.home.layout import Home

PERSON = ["gage.rv.*", "$JS.API.STREAM.INFO.GAGE_RV", "$JS.API.STREAM.MSG.GET.GAGE_RV"]


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[server.Server]:
    allow = ", ".join(f'"{s}"' for s in PERSON)
    users = ", ".join(
        f'{{ user: {n}, password: {n}-pw, permissions: {{ publish: {{ allow: [{allow}] }}, subscribe: {{ allow: ["_INBOX.>"] }} }} }}'
        for n in ("alice", "bob")
    )
    srv = server.Server(store=tmp_path / "nats", name="rv-perm")
    srv.port = server.free_port()
    srv.store.mkdir(parents=True)
    conf = srv.store / "rv.conf"
    conf.write_text(srv.config() + f"accounts {{ GAGE {{ jetstream: enabled, users: [ {{ user: admin, password: admin-pw }}, {users} ] }} }}\n")
    import subprocess

    srv.proc = subprocess.Popen([server.binary(), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        srv.wait_ready(20)
        yield srv
    finally:
        srv.stop(kill=True)


def _as(srv: server.Server, user: str) -> str:
    return f"nats://{user}:{user}-pw@127.0.0.1:{srv.port}"


def _claims(home: Home, url: str) -> invite.Claims:
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    kf = KeyFile(key=home.identity.key, name=home.identity.name, sealing=key.binding.to_carried())
    return invite.Claims(kf, sealing.mailbox_address(key.recipient), url)


def test_a_person_may_not_make_the_rendezvous_stream_and_is_told_who_does(locked) -> None:
    side = invite.Inviter(_as(locked, "alice"), None, None, 60)
    with pytest.raises(RelayError) as exc:
        side.open()
    assert "the relay refused" in str(exc.value) and "operator makes it" in str(exc.value) and "nothing was confirmed" in str(exc.value), exc.value


def test_invite_and_join_need_only_what_every_person_may_do(make_home, locked) -> None:
    async def make() -> None:
        async with mailbox.connected(_as(locked, "admin")) as nc:
            await rendezvous.ensure_stream(nc)

    mailbox.run(make())
    alice, bob = make_home("alice"), make_home("bob")
    inviter = invite.Inviter(_as(locked, "alice"), None, None, 60)
    code = inviter.open()
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(inviter.wait_join(_claims(alice, "nats://relay"))), daemon=True)
    t.start()
    joiner = invite.Joiner(_as(locked, "bob"), None, code)
    assert joiner.meet(_claims(bob, "nats://relay")).keyfile.key == alice.identity.key
    t.join(30)
    assert got and got[0].keyfile.key == bob.identity.key  # type: ignore[attr-defined]
    said: list[object] = []
    t = threading.Thread(target=lambda: said.append(inviter.outcome(True)), daemon=True)
    t.start()
    assert joiner.outcome(True) is None
    t.join(30)
    assert said == [None]
