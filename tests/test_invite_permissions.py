"""The invite needs no more of the relay than every person is allowed (spec/relay.md section 10): publish
to `gage.rv.*` with an acknowledgement, and read `GAGE_RV` by message and its information. On the
shared relay `gage relay config` generates (accounts: section 8; the operator made the stream), an invite and a join meet and
swap claims; a person may not make the stream, and is told its operator does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import relayiso

from gage.carriers.relay import invite, mailbox, rendezvous
from gage.carriers.relay.errors import RelayError
from gage.format.keys.file import KeyFile
from gage.home import sealing
from gage.home.layout import Home


@pytest.fixture
def shared(make_home, tmp_path: Path) -> Iterator[relayiso.Shared]:
    """A relay shared by strangers, running exactly what `gage relay config` generates (spec/relay.md section 8)."""
    with relayiso.running(make_home, tmp_path) as relay:
        yield relay


def _claims(home: Home, url: str) -> invite.Claims:
    with home.lock():
        key = sealing.ensure(home.root, home.identity.secret)
    kf = KeyFile(key=home.identity.key, name=home.identity.name, sealing=key.binding.to_carried())
    return invite.Claims(kf, sealing.mailbox_address(key.recipient), url, home.identity.secret)


def test_a_person_may_not_make_the_rendezvous_stream_and_is_told_who_does(shared) -> None:
    async def remove() -> None:  # the operator made it with the mailboxes: take it away for this test
        async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
            await nc.jetstream().delete_stream(rendezvous.STREAM)

    mailbox.run(remove())
    side = invite.Inviter(shared.url, shared.creds["alice"], None, 60)
    with pytest.raises(RelayError) as exc:
        side.open()
    assert "the relay refused" in str(exc.value) and "operator makes it" in str(exc.value) and "nothing was confirmed" in str(exc.value), exc.value


def test_invite_and_join_need_only_what_every_person_may_do(shared) -> None:
    async def make() -> None:
        async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
            await rendezvous.ensure_stream(nc)

    mailbox.run(make())
    alice, bob = shared.homes["alice"], shared.homes["bob"]
    inviter = invite.Inviter(shared.url, shared.creds["alice"], None, 60)
    code = inviter.open()
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(inviter.wait_join(_claims(alice, "nats://relay"))), daemon=True)
    t.start()
    joiner = invite.Joiner(shared.url, shared.creds["bob"], code)
    assert joiner.meet(_claims(bob, "nats://relay")).keyfile.key == alice.identity.key
    t.join(30)
    assert got and got[0].keyfile.key == bob.identity.key  # type: ignore[attr-defined]
    said: list[object] = []
    t = threading.Thread(target=lambda: said.append(inviter.outcome(True)), daemon=True)
    t.start()
    assert joiner.outcome(True) is None
    t.join(30)
    assert said == [None]


def test_a_person_cannot_lift_the_rendezvous_limits_and_a_flood_stops_at_the_subjects_limit(shared) -> None:
    async def make() -> None:
        async with mailbox.connected(shared.url, shared.creds["operator"]) as nc:
            await rendezvous.ensure_stream(nc)

    mailbox.run(make())
    subject = rendezvous.Code(77, ("tiger", "guitarist")).subject("j")

    async def as_mallory() -> tuple[int, int, object]:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            js = nc.jetstream()
            lifted: object = None
            try:
                from nats.js import api

                await js.update_stream(api.StreamConfig(name=rendezvous.STREAM, subjects=[rendezvous.SUBJECT_PREFIX + "*"],
                                                        max_msgs_per_subject=-1, discard_new_per_subject=False))
                lifted = "updated"
            except Exception as exc:  # noqa: BLE001 - whatever refusal the account gives
                lifted = exc
            kept = refused = 0
            for _ in range(rendezvous.PER_SUBJECT + 10):
                try:
                    await rendezvous.say(nc, subject, {"junk": 1})
                    kept += 1
                except rendezvous.Full:
                    refused += 1
            return kept, refused, lifted

    kept, refused, lifted = mailbox.run(as_mallory())
    assert lifted != "updated", lifted
    assert kept <= rendezvous.PER_SUBJECT and refused >= 10, (kept, refused)
